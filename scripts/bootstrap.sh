#!/usr/bin/env bash
# Installs the Debian packages pipeprof needs; idempotent, prints what it installs.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git
  libtorch-dev libgloo-dev libopenblas0-pthread
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libxkbcommon-dev libgl-dev
  xvfb xauth
  clang libclang-rt-14-dev clang-format
  libprotobuf-dev  # found by the CMake config of LibTorch 2.6 in scripts/torch2-check.sh
)
# PIPEPROF_BOOTSTRAP_PYTHON=1: PyTorch's Python too (the same 1.13 as LibTorch), for the benches
# that use it: bench/pipe_reference.py compares against its Pipe, bench/imported_models.py
# scripts torchvision's models.
if [[ "${PIPEPROF_BOOTSTRAP_PYTHON:-0}" == 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if (( ${#missing[@]} == 0 )); then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
sudo=()
if (( EUID != 0 )); then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: installed ${#missing[@]} package(s)" >&2
