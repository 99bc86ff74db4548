#!/usr/bin/env bash
# Formats C++ files with clang-format and the repository's .clang-format, or checks them.
#   scripts/format.sh [--check] FILE...          the files named
#   scripts/format.sh [--check] [--since REV]    the C++ files changed since REV (default HEAD:
#                                                what is not committed yet, new files included)
# --check changes nothing: it lists the files that are not formatted, shows how they would
# change, and exits 1 when there is one. The code base is not formatted as a whole: format the
# files you touch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,8s/^# \{0,1\}//p' "$0"; }

check=0
since=
files=()
while (($#)); do
  case $1 in
    --check) check=1 ;;
    --since)
      [[ $# -ge 2 ]] || { echo "format.sh: --since needs a revision, e.g. --since main" >&2; exit 2; }
      since=$2
      shift ;;
    --since=*) since=${1#--since=} ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "format.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) files+=("$1") ;;
  esac
  shift
done

if ! command -v clang-format >/dev/null; then
  echo "format.sh: clang-format not found; ./scripts/bootstrap.sh installs it (Debian package clang-format)" >&2
  exit 2
fi

if ((${#files[@]} > 0)) && [[ -n $since ]]; then
  echo "format.sh: give files or --since REV, not both" >&2
  exit 2
fi
if ((${#files[@]} == 0)); then
  cd "$root"  # git names the changed files from the top of the tree
  since=${since:-HEAD}
  if ! git rev-parse --verify --quiet "$since^{commit}" >/dev/null; then
    echo "format.sh: --since $since is not a revision of this repository (e.g. main, HEAD~3)" >&2
    exit 2
  fi
  # Changed or added since the revision (deleted ones left out), and new untracked files.
  mapfile -t files < <({
    git diff --name-only --diff-filter=d "$since" -- '*.cpp' '*.h' '*.hpp' '*.cc'
    git ls-files --others --exclude-standard -- '*.cpp' '*.h' '*.hpp' '*.cc'
  } | sort -u)
  if ((${#files[@]} == 0)); then
    echo "format.sh: no C++ file changed since $since"
    exit 0
  fi
fi
for file in "${files[@]}"; do
  [[ -f $file ]] || { echo "format.sh: no such file: $file" >&2; exit 2; }
done

if ((check == 0)); then
  clang-format -i --style=file "${files[@]}"
  echo "format.sh: formatted ${#files[@]} file(s)"
  exit 0
fi

unformatted=()
for file in "${files[@]}"; do
  if ! clang-format --style=file "$file" | diff -u --label "$file" --label "$file (formatted)" "$file" -; then
    unformatted+=("$file")
  fi
done
if ((${#unformatted[@]} > 0)); then
  echo "format.sh: ${#unformatted[@]} of ${#files[@]} file(s) not formatted: ${unformatted[*]}" >&2
  echo "format.sh: scripts/format.sh ${unformatted[*]} formats them" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} file(s) formatted"
