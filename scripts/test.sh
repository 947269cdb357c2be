#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (CPU tests; GPU tests run where a GPU
# is present and are reported as skipped elsewhere). Multi-rank tests start several processes under mpirun or
# ddpx's own launcher (the Gloo tests); the Slurm tests start a one-node cluster of their own. The test-only
# packages (scripts/install-deps.sh's TEST_REQUIREMENTS) are installed here, not for the build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --tests
DDPX_DEPS_CHECKED=1 bash scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0
ctest --test-dir "${DDPX_BUILD_DIR:-build}" --output-on-failure -j "${DDPX_TEST_JOBS:-2}" "$@"
