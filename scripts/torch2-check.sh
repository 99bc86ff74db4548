#!/usr/bin/env bash
# Compile-checks pipeprof's LibTorch code against LibTorch 2.6: Debian trixie's libtorch-dev (CPU)
# and libtorch-cuda-dev (CUDA, with NCCL; CUPTI on). The packages are downloaded once with a
# private apt state (the machine's apt state and sources are not touched) and unpacked into a
# cache; nothing is installed. The LibTorch objects are checked (-fsyntax-only, -Werror), not
# compiled to code or linked: 2.6's libraries need trixie's glibc.
#  - CPU (build-torch2-cpu/): every object of the runtime, launch, tuner, profiler, cli and runtime tests.
#  - CUDA (build-torch2-cuda/): only the objects the CPU configuration does not compile -- the
#    translation units CMake picks for CUDA (the runtime's CUDA backends, c10d's NCCL group) and
#    CUPTI (the profiler's activity source) -- and a probe of c10d's ProcessGroupNCCL.hpp and
#    nccl.h. Every other object is the same source against the same 2.6 headers in both
#    configurations (the CUDA package's headers are the CPU package's plus the CUDA ones), so
#    compiling it twice would check nothing more. PIPEPROF_TORCH2_CUDA_ALL=1 compiles them all.
#   scripts/torch2-check.sh                       both configurations (scripts/test.sh runs this)
#   PIPEPROF_TORCH2_CONFIGS=cpu scripts/torch2-check.sh
#   PIPEPROF_TORCH2_UNPACK_ONLY=1 scripts/torch2-check.sh   download and unpack, compile nothing
# Environment: PIPEPROF_TORCH2_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/pipeprof/torch2),
# PIPEPROF_TORCH2_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."

configs=${PIPEPROF_TORCH2_CONFIGS:-cpu cuda}
cache=${PIPEPROF_TORCH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pipeprof/torch2}
mirror=${PIPEPROF_TORCH2_MIRROR:-http://deb.debian.org/debian}
suite=trixie
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
jobs=$(nproc)
arch=$(dpkg --print-architecture)
multiarch=$(gcc -print-multiarch)

# What each configuration unpacks into a root of its own (both own usr/include/torch). Only the
# headers and CMake files are wanted, so no dependencies: Caffe2's CMake config finds protobuf
# in the machine's libprotobuf-dev and CUDA in the machine's toolkit.
cpu_packages=(libtorch-dev libgloo-dev)
cuda_packages=(libtorch-cuda-dev libgloo-cuda-dev libnccl-dev)

log() { echo "torch2-check: $*" >&2; }

# --- Downloading: trixie's lists in a private apt state, the machine's own left alone ----------
apt_dir=$cache/apt
apt_opts=(
  -o "Dir::State=$apt_dir/state" -o "Dir::State::status=$apt_dir/state/status"
  -o "Dir::Cache=$apt_dir/cache" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/sources.list.d"
  -o "Dir::Etc::preferences=$apt_dir/preferences" -o "Dir::Etc::preferencesparts=$apt_dir/preferences.d"
  -o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Acquire::Languages=none"
)
# As root, apt downloads as _apt, which cannot write into this cache.
if (( EUID == 0 )); then
  apt_opts+=(-o "APT::Sandbox::User=root")
fi
apt_updated=0

apt_update() {
  (( apt_updated )) && return
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" \
    "$apt_dir/sources.list.d" "$apt_dir/preferences.d"
  : > "$apt_dir/state/status"
  echo "deb [signed-by=$keyring] $mirror $suite main contrib non-free" > "$apt_dir/sources.list"
  log "apt-get update ($suite main contrib non-free from $mirror; private state in $apt_dir)"
  apt-get "${apt_opts[@]}" update -qq
  apt_updated=1
}

# unpack <root> <package>...: downloads the packages and unpacks them into <root>, unless <root>
# already holds them (its .packages names them on its first line, then their versions).
unpack() {
  local root=$1
  shift
  local want="$*" stamp=$root/.packages
  if [[ -f "$stamp" && "$(head -n 1 "$stamp")" == "$want" ]]; then
    log "cached in $root: $(tail -n +2 "$stamp" | tr '\n' ' ')"
    return
  fi
  apt_update
  local debs=$root.debs tmp=$root.tmp deb
  rm -rf "$debs" "$tmp"
  mkdir -p "$debs" "$tmp"
  log "downloading $want"
  (cd "$debs" && apt-get "${apt_opts[@]}" download -qq "$@")
  echo "$want" > "$tmp/.packages"
  for deb in "$debs"/*.deb; do
    # Static libraries (libnccl_static.a is 240 MB) and docs are of no use to a compile check.
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --exclude='*.a' --exclude='./usr/share/doc*'
    dpkg-deb -W --showformat='${Package}=${Version}\n' "$deb" >> "$tmp/.packages"
  done
  stub_libraries "$tmp"
  rm -rf "$root" "$debs"
  mv "$tmp" "$root"
  log "unpacked into $root: $(tail -n +2 "$stamp" | tr '\n' ' ')"
}

# The -dev packages' symlinks point at the runtime packages' libraries, and the CMake config
# checks that its imported libraries exist: empty files stand in for them (nothing is linked).
stub_libraries() {
  local root=$1 link target file
  while IFS= read -r link; do
    target=$(readlink "$link")
    [[ "$target" == /* ]] && continue
    target=$(dirname "$link")/$target
    [[ -e "$target" ]] || : > "$target"
  done < <(find "$root/usr/lib" -xtype l)
  for file in "$root/usr/lib/$multiarch/cmake/Caffe2"/Caffe2Targets-*.cmake; do
    [[ -f "$file" ]] || continue
    grep -o '_cmake_import_check_files_for_[A-Za-z0-9_]* "${_IMPORT_PREFIX}/[^"]*"' "$file" |
      sed 's|.*"${_IMPORT_PREFIX}/\(.*\)"|\1|' |
      while IFS= read -r target; do
        [[ -e "$root/usr/lib/$target" ]] || : > "$root/usr/lib/$target"
      done
  done
  # TorchConfig.cmake warns when it finds no kineto library.
  : > "$root/usr/lib/$multiarch/libkineto.a"
}

# --- Compiling one configuration ------------------------------------------------------------------
# Loaded after project(pipeprof) (CMAKE_PROJECT_pipeprof_INCLUDE); runs once every target exists.
#  - CUDA 13 has no libnvToolsExt, which 2.6's CMake config names in an interface link: an empty
#    target stands in (nothing links).
#  - <torch/torch.h> is compiled once into a precompiled header that every LibTorch target reuses
#    (it is about two thirds of each object's compile time). GCC requires the same -fPIC/-fPIE of
#    the header and its users, so all of them take the compiler's default.
#  - Its users are checked, not compiled: -fsyntax-only parses and instantiates everything, as a
#    compile does, and emits no code (a batch of the runtime: 25 s compiled at -O0, 15 checked).
#    GCC writes no object then, only the dependency file: ninja runs such an object's command
#    again on the next build (ccache answers it), and an archive is an empty file as an
#    executable is.
write_shim() {
  local shim=$1
  cat > "$shim.new" <<'EOF'
# Written by scripts/torch2-check.sh: the compile check's adjustments, in its own build only.
# Nothing links (2.6's libraries need trixie's glibc): an executable or library another target
# depends on, like pipeprof's rank worker, is an empty file; the checked objects leave no object
# file to archive.
set(CMAKE_CXX_LINK_EXECUTABLE "<CMAKE_COMMAND> -E touch <TARGET>")
set(CMAKE_CXX_ARCHIVE_CREATE "<CMAKE_COMMAND> -E touch <TARGET>")
set(CMAKE_CXX_ARCHIVE_APPEND "<CMAKE_COMMAND> -E touch <TARGET>")
set(CMAKE_CXX_ARCHIVE_FINISH "<CMAKE_COMMAND> -E touch <TARGET>")
function(_pipeprof_torch2_shim)
  if(TARGET torch::nvtoolsext AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  endif()
  set(source "${CMAKE_BINARY_DIR}/torch2_pch.cpp")
  file(WRITE "${source}" "// The precompiled <torch/torch.h> of scripts/torch2-check.sh.\n")
  add_library(pipeprof_torch2_pch OBJECT "${source}")
  target_link_libraries(pipeprof_torch2_pch PRIVATE torch)
  target_precompile_headers(pipeprof_torch2_pch PRIVATE <torch/torch.h>)
  set_target_properties(pipeprof_torch2_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  foreach(dir runtime launch tuner cli tests/runtime)
    if(NOT IS_DIRECTORY "${CMAKE_SOURCE_DIR}/${dir}" OR NOT EXISTS "${CMAKE_BINARY_DIR}/${dir}")
      continue()
    endif()
    get_property(targets DIRECTORY "${CMAKE_SOURCE_DIR}/${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
        set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
        target_precompile_headers(${target} REUSE_FROM pipeprof_torch2_pch)
        target_compile_options(${target} PRIVATE -fsyntax-only)
      endif()
    endforeach()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _pipeprof_torch2_shim)
EOF
  if cmp -s "$shim.new" "$shim"; then rm "$shim.new"; else mv "$shim.new" "$shim"; fi
}

# Prints the first errors of a failed build and the objects that failed.
report_errors() {
  local build_log=$1
  log "compile errors (the whole log: $build_log):"
  grep -E -m 40 ': (fatal )?error:|^ninja: error' "$build_log" >&2 || tail -n 40 "$build_log" >&2
  echo "failed objects:" >&2
  sed -n 's/^FAILED: \(.*\)/  \1/p' "$build_log" >&2
}

# The CUDA toolkit's root: the first of $CUDA_HOME, nvcc's on PATH and /usr/local/cuda that has
# cuda.h (nvcc on PATH may be a wrapper script in /usr/local/bin).
cuda_toolkit_root() {
  local nvcc root
  nvcc=$(command -v nvcc || true)
  for root in "${CUDA_HOME:-}" "${nvcc:+$(dirname "$(dirname "$(readlink -f "$nvcc")")")}" \
      /usr/local/cuda; do
    if [[ -n $root && -f $root/include/cuda.h && -x $root/bin/nvcc ]]; then
      echo "$root"
      return 0
    fi
  done
  return 1
}

# configure_config <name>: configures build-torch2-<name> against the unpacked 2.6 and checks
# that CMake found that LibTorch.
configure_config() {
  local name=$1 root=$cache/$1 build=build-torch2-$1
  mkdir -p "$build"
  write_shim "$PWD/$build/torch2-shim.cmake"
  local cmake_args=(
    -G Ninja -DCMAKE_BUILD_TYPE=None -DBUILD_SHARED_LIBS=OFF -DPIPEPROF_WERROR=ON
    -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_PROJECT_pipeprof_INCLUDE="$PWD/$build/torch2-shim.cmake"
    -DPIPEPROF_WITH_GUI=OFF -DPIPEPROF_BUILD_BENCHMARKS=OFF -DPIPEPROF_FUZZ=OFF -DPIPEPROF_BUILD_TESTS=ON
    -DPIPEPROF_TORCH_PCH=OFF  # the shim has a precompiled header of its own
    -Wno-dev
  )
  if [[ $name == cuda ]]; then
    # CUDA_NVRTC_SHORTHASH: otherwise the config hashes libnvrtc with Python (unused here).
    cmake_args+=(-DPIPEPROF_WITH_CUPTI=ON -DCUDA_NVRTC_SHORTHASH=00000000)
    # 2.6's config finds the toolkit with CMake's old FindCUDA, which looks only where nvcc is
    # on PATH; CI's PATH may not name /usr/local/cuda/bin, so the toolkit is named outright.
    local toolkit
    if toolkit=$(cuda_toolkit_root); then
      cmake_args+=(-DCUDA_TOOLKIT_ROOT_DIR="$toolkit" -DCUDAToolkit_ROOT="$toolkit"
        -DCMAKE_CUDA_COMPILER="$toolkit/bin/nvcc")
    fi
  else
    cmake_args+=(-DPIPEPROF_WITH_CUPTI=OFF)
  fi

  local configure_log=$build/torch2-configure.log
  if ! cmake -S . -B "$build" "${cmake_args[@]}" > "$configure_log" 2>&1; then
    log "configuring $build against $root failed (the whole log: $configure_log):"
    grep -E -A 12 'CMake Error' "$configure_log" | head -n 60 >&2 || tail -n 40 "$configure_log" >&2
    if [[ $name == cuda ]]; then
      log "the CUDA configuration needs the CUDA toolkit with CUPTI (nvcc, cuda.h);" \
        "PIPEPROF_TORCH2_CONFIGS=cpu checks the CPU one alone"
    fi
    return 1
  fi
  local torch_dir version
  torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$build/CMakeCache.txt")
  version=$(sed -n 's/^set(PACKAGE_VERSION "\([^"]*\)")/\1/p' "$torch_dir/TorchConfigVersion.cmake" 2>/dev/null || true)
  if [[ "$torch_dir" != "$root"/* || "$version" != 2.* ]]; then
    log "$build found Torch '$version' in '$torch_dir', not LibTorch 2.x under $root"
    return 1
  fi
  echo "$version ($torch_dir)" > "$build/torch2-version"
}

# objects <build>: the objects of the LibTorch code in a configured build, one a line.
objects() {
  ninja -C "$1" -t targets all | sed -n 's/^\([^:]*\.o\): .*/\1/p' |
    grep -E '^(runtime|launch|tuner|profiler|cli|tests/runtime)/CMakeFiles/' | sort
}

# cuda_subset <cuda-object>...: the objects of the CUDA configuration that compiling the CPU
# one did not already check: those it does not compile (the CUDA translation units), and those
# that include a header the two configurations see differently -- a header that differs between
# the two packages (gloo/config.h), or one that tests a macro only one of them defines
# (USE_C10D_NCCL in CUDA, USE_C10D_MPI in CPU). The headers an object includes come from the CPU
# build's dependency log; an object it has none for is compiled as well, and every object is when
# the precompiled <torch/torch.h> includes such a header (an object's log does not name the
# headers inside the precompiled one).
cuda_subset() {
  local cpu_root=$cache/cpu/usr/include cuda_root=$cache/cuda/usr/include
  local cpu_objects common sample defines headers
  cpu_objects=$(objects build-torch2-cpu)
  comm -23 <(printf '%s\n' "$@") <(echo "$cpu_objects")
  common=$(comm -12 <(printf '%s\n' "$@") <(echo "$cpu_objects"))
  [[ -n $common ]] || return 0
  # Macros defined differently: compare the -D flags of one object both configurations compile.
  sample=$(head -n 1 <<< "$common")
  defines=$(comm -3 \
    <(ninja -C build-torch2-cpu -t commands "$sample" | tail -n 1 | grep -o -- ' -D[^ ]*' | sort -u) \
    <(ninja -C build-torch2-cuda -t commands "$sample" | tail -n 1 | grep -o -- ' -D[^ ]*' | sort -u) |
    sed 's/^[[:space:]]*-D//; s/=.*//' | sort -u | paste -sd '|')
  # Headers that differ, or mention one of those macros (or gloo's CUDA and NCCL switches).
  headers=$({
    { diff -rq "$cpu_root" "$cuda_root" 2>/dev/null || true; } |
      sed -n "s|^Files $cpu_root/\(.*\) and .* differ\$|\1|p"
    { cd "$cpu_root" && grep -rlwE "${defines:+$defines|}USE_CUDA|GLOO_USE_CUDA|GLOO_USE_NCCL" . || true; } |
      sed 's|^\./||'
  } | sort -u)
  # The CPU build's dependency log: an object's line, then its dependencies indented.
  ninja -C build-torch2-cpu -t deps 2>/dev/null | awk -v root="$cpu_root/" -v common="$common" -v headers="$headers" '
    BEGIN {
      n = split(common, list, "\n"); for (i = 1; i <= n; i++) wanted[list[i]] = 1
      n = split(headers, list, "\n"); for (i = 1; i <= n; i++) sensitive[list[i]] = 1
    }
    /^[^ ]/ { object = $1; sub(/:$/, "", object); seen[object] = 1; next }
    /^    / {
      path = $1
      if (index(path, root) == 1 && (substr(path, length(root) + 1) in sensitive)) {
        hit[object] = 1
        if (object ~ /cmake_pch\.hxx\.gch$/) all = 1
      }
    }
    END { for (object in wanted) if (all || !(object in seen) || (object in hit)) print object }'
}

check_config() {
  local name=$1 build=build-torch2-$1
  configure_config "$name" || return 1
  local targets
  mapfile -t targets < <(objects "$build")
  local what="every LibTorch object"
  if [[ $name == cuda ]]; then
    # TARGET torch_cuda must have picked the CUDA translation units, and CUPTI its collector.
    local unit
    for unit in pipeprof_runtime.dir/src/memory/device_memory_cuda.cpp.o \
        pipeprof_profiler.dir/src/cupti_activity_source.cpp.o; do
      if ! printf '%s\n' "${targets[@]}" | grep -q "/$unit\$"; then
        log "$build does not compile $unit: TARGET torch_cuda or CUDA::cupti was not found"
        return 1
      fi
    done
    if [[ "${PIPEPROF_TORCH2_CUDA_ALL:-0}" != 1 ]]; then
      # The CPU configuration's object list: configured here when only CUDA was asked for, or
      # regenerated by ninja if a CMakeLists.txt changed since.
      if [[ ! -f build-torch2-cpu/torch2-version ]]; then
        configure_config cpu || return 1
      elif ! ninja -C build-torch2-cpu build.ninja > build-torch2-cpu/torch2-regenerate.log 2>&1; then
        log "regenerating build-torch2-cpu failed (the whole log: build-torch2-cpu/torch2-regenerate.log)"
        return 1
      fi
      mapfile -t targets < <(cuda_subset "${targets[@]}")
      what="the objects the CPU configuration does not compile, or compiles against other headers"
    fi
  fi
  if [[ $name == cuda ]]; then
    what+=": $(printf '%s\n' "${targets[@]}" | sed 's|.*/||; s|\.o$||' | tr '\n' ' ')"
  fi
  log "$build: LibTorch $(cat "$build/torch2-version"), compiling ${#targets[@]} objects ($what)"
  local build_log=$build/torch2-build.log start=$SECONDS
  if ! ninja -C "$build" -j "$jobs" -k 0 "${targets[@]}" > "$build_log" 2>&1; then
    report_errors "$build_log"
    return 1
  fi
  log "$build: ${#targets[@]} objects compiled in $((SECONDS - start)) s"
  if [[ $name == cuda ]]; then
    nccl_probe "$build" || return 1
  fi
}

# Compiles a translation unit that includes c10d's ProcessGroupNCCL.hpp and nccl.h and names
# their types, with the flags of a runtime object of the CUDA configuration (torch_cuda's
# USE_C10D_NCCL among them) less the precompiled header.
nccl_probe() {
  local build=$1 probe_dir=$1/nccl-probe
  mkdir -p "$probe_dir"
  cat > "$probe_dir/probe.cpp" <<'EOF'
// Names c10d's NCCL process group and creates nothing: its headers and nccl.h must resolve.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <nccl.h>

using PipeprofProbeGroup = c10d::ProcessGroupNCCL;
static_assert(sizeof(PipeprofProbeGroup::Options) > 0, "ProcessGroupNCCL::Options is complete");
static_assert(NCCL_MAJOR >= 2, "NCCL 2.x");
EOF
  local command
  command=$(ninja -C "$build" -t commands runtime/CMakeFiles/pipeprof_runtime.dir/src/memory/device_memory_cuda.cpp.o |
    tail -n 1)
  command=${command%% -MD *}
  command=$(sed 's/ -Winvalid-pch -include [^ ]*//' <<< "$command")
  if ! (cd "$build" && eval "$command -MD -MF nccl-probe/probe.d -o nccl-probe/probe.o -c nccl-probe/probe.cpp") \
      > "$probe_dir/probe.log" 2>&1; then
    log "NCCL probe: ProcessGroupNCCL.hpp does not compile with the CUDA configuration's flags:"
    grep -E -m 20 ': (fatal )?error:' "$probe_dir/probe.log" >&2 || tail -n 20 "$probe_dir/probe.log" >&2
    return 1
  fi
  local header defines includes
  header=$(tr ' \\' '\n\n' < "$probe_dir/probe.d" | grep -m 1 '/nccl\.h$' || true)
  defines=$(grep -o -- ' -D[A-Za-z0-9_]*' <<< "$command" | sort -u | tr -d '\n')
  includes=$(grep -o -- ' -isystem [^ ]*' <<< "$command" | sed 's/ -isystem //' | tr '\n' ' ')
  log "NCCL probe: ProcessGroupNCCL.hpp compiles; nccl.h: $header; defines:$defines;" \
    "include dirs: $includes"
}

mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9
unpacks=$configs
# The CUDA configuration compiles what the CPU one does not: it needs the CPU one's object list.
if [[ " $configs " == *" cuda "* && "${PIPEPROF_TORCH2_CUDA_ALL:-0}" != 1 ]]; then
  unpacks+=" cpu"
fi
for name in $(tr ' ' '\n' <<< "$unpacks" | awk 'NF && !seen[$0]++'); do
  case $name in
    cpu) unpack "$cache/cpu" "${cpu_packages[@]}" ;;
    cuda) unpack "$cache/cuda" "${cuda_packages[@]}" ;;
    *) log "unknown configuration '$name' in PIPEPROF_TORCH2_CONFIGS (cpu, cuda)"; exit 2 ;;
  esac
done
# The lists only serve a download; a complete cache does no network I/O.
rm -rf "$apt_dir"
exec 9>&-
if [[ "${PIPEPROF_TORCH2_UNPACK_ONLY:-0}" == 1 ]]; then
  exit 0  # scripts/device-deps.sh wants 2.6's gloo headers, nothing compiled
fi

# The precompiled header hits ccache only with these (ccache's manual, "Precompiled headers");
# the inode cache saves rehashing the 600 MB header for every object.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros
export CCACHE_INODECACHE=${CCACHE_INODECACHE:-true}
status=0
for name in $configs; do
  check_config "$name" || status=1
done
exit $status
