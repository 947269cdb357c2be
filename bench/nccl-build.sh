#!/usr/bin/env bash
# Builds NVIDIA's NCCL 2.30.7 (../shared/third_party, carried as .gpudeps/nccl-2.30.7-1.tar.gz by bench/gpu-deps.sh)
# on the GPU machine for sm_90 alone, in the background (setsid), so the build outlives the device call that starts
# it while the machine stays warm; the next call waits for it. NCCL 2.30 is the first that lets several ranks share
# one GPU (NCCL_MULTI_RANK_GPU_ENABLE, ddpx's --ranks-per-gpu), which bench/nccl-multirank.sh needs.
#   bash bench/nccl-build.sh start    # unpack and start `make src.build` in the background; returns at once
#   bash bench/nccl-build.sh wait     # wait (up to WAIT_S, default 540 s) until it is built; prints its version
# The library: $NCCL_LIB (default /tmp/nccl-src/nccl/build/lib); its log: /tmp/nccl-src/build.log.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=/tmp/nccl-src
TARBALL=${TARBALL:-.gpudeps/nccl-2.30.7-1.tar.gz}
case ${1:-} in
  start)
    [[ -e $SRC/nccl/build/lib/libnccl.so.2 ]] && { echo "NCCL already built in $SRC"; exit 0; }
    [[ -f $TARBALL ]] || { echo "no $TARBALL: run bench/gpu-deps.sh here and carry .gpudeps"; exit 1; }
    mkdir -p "$SRC" && tar xzf "$TARBALL" -C "$SRC" || exit 1
    jobs=$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))
    setsid bash -c "cd $SRC/nccl && make -j $jobs src.build NVCC_GENCODE='-gencode=arch=compute_90,code=sm_90' \
      >$SRC/build.log 2>&1; echo \$? >$SRC/build.rc" </dev/null >/dev/null 2>&1 &
    echo "NCCL build started in $SRC ($jobs jobs; log $SRC/build.log)"
    ;;
  wait)
    waited=0
    until [[ -e $SRC/build.rc ]] || ((waited >= ${WAIT_S:-540})); do sleep 2; waited=$((waited + 2)); done
    [[ -e $SRC/build.rc ]] || { echo "NCCL still building after ${waited} s"; tail -3 "$SRC/build.log"; exit 1; }
    [[ $(cat "$SRC/build.rc") == 0 ]] || { echo "NCCL build failed:"; tail -20 "$SRC/build.log"; exit 1; }
    ls "$SRC"/nccl/build/lib/libnccl.so.2.*
    ;;
  *) echo "usage: bench/nccl-build.sh start|wait"; exit 2 ;;
esac
