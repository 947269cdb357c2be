#!/usr/bin/env bash
# Configures and builds ddpx into ./build (Release, Ninja). Checks for what the build needs first and installs what
# is missing where it can (scripts/install-deps.sh; DDPX_SKIP_DEPS=1 skips that). Extra CMake arguments:
# DDPX_CMAKE_ARGS (e.g. "-DCMAKE_CUDA_ARCHITECTURES=80"). Arguments name the targets to build (default: all of them,
# every test included); scripts/run.sh builds only `ddpx`, so the main job starts training without compiling the tests.
# Usage: bash scripts/build.sh [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ ${DDPX_DEPS_CHECKED:-0} == 1 ]] || bash scripts/install-deps.sh
BUILD_DIR=${DDPX_BUILD_DIR:-build}
JOBS=${DDPX_JOBS:-$(nproc)}
GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)
[[ -f $BUILD_DIR/CMakeCache.txt ]] && GENERATOR=()  # keep the generator an existing build folder was made with
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release ${DDPX_CMAKE_ARGS:-} >"${BUILD_DIR}.configure.log" 2>&1 \
  || { cat "${BUILD_DIR}.configure.log"; exit 1; }
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
