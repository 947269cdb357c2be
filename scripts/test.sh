#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (CPU tests; GPU tests run where a GPU
# is present and are reported as skipped elsewhere). Multi-rank tests start several processes under mpirun or
# ddpx's own launcher (the Gloo tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0
ctest --test-dir "${DDPX_BUILD_DIR:-build}" --output-on-failure -j "${DDPX_TEST_JOBS:-2}" "$@"
