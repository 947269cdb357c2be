#!/usr/bin/env bash
# Configures and builds ddpx into ./build (Release, Ninja). Installs missing apt packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${DDPX_BUILD_DIR:-build}
JOBS=${DDPX_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >"${BUILD_DIR}.configure.log" 2>&1 \
  || { cat "${BUILD_DIR}.configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j "$JOBS"
