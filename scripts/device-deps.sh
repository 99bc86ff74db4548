#!/usr/bin/env bash
# Gathers, into .deps/ (git-ignored), what a bare GPU machine lacks to build pipeprof against
# a CUDA LibTorch: the header-only libraries and fmt from this machine's Debian packages and
# gloo's headers from trixie's, as a CMake prefix, and GoogleTest's sources. Carry .deps to that machine, then run
# scripts/cuda-check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh

prefix=.deps/prefix
rm -rf .deps
mkdir -p "$prefix/include" "$prefix/share/cmake"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/fmt "$prefix/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$prefix/share/cmake/"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$prefix/lib/$multiarch/cmake"
cp -r "/usr/lib/$multiarch/cmake/fmt" "$prefix/lib/$multiarch/cmake/"
cp -a "/usr/lib/$multiarch"/libfmt.so* "$prefix/lib/$multiarch/"
cp -r /usr/src/googletest .deps/googletest-src
# c10d's ProcessGroupGloo.hpp includes gloo's headers, which PyTorch's wheels do not ship;
# bookworm's gloo predates the store API that LibTorch 2.x overrides, trixie's (2.6's) has it.
PIPEPROF_TORCH2_CONFIGS=cpu PIPEPROF_TORCH2_UNPACK_ONLY=1 ./scripts/torch2-check.sh
cp -r "${PIPEPROF_TORCH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pipeprof/torch2}/cpu/usr/include/gloo" "$prefix/include/"
du -sh .deps
