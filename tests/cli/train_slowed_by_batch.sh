#!/bin/sh
# Stands in for `ddpx` in the tune test: runs the real ddpx ($DDPX_REAL) with the same arguments, and adds
# --batch 64 (the last --batch wins: 16x the images per step of the test's --batch 4, so many times fewer steps/s)
# when the trial's last --comm-hook is allreduce. A tune over allreduce and bf16 must then pick bf16, by far.
slow=""
prev=""
for arg in "$@"; do
  if [ "$prev" = "--comm-hook" ]; then
    if [ "$arg" = "allreduce" ]; then slow="--batch 64"; else slow=""; fi
  fi
  prev="$arg"
done
exec "$DDPX_REAL" "$@" $slow
