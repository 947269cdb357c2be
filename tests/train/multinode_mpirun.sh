#!/usr/bin/env bash
# ddpx train --device cpu --backend mpi across 2 hosts (network namespaces from tests/support/netns_hosts.sh) under
# Open MPI's mpirun: mpirun runs in host 0 and starts host 1's ranks through tests/support/netns_rsh.sh (its rsh
# agent); each host has its own hostname (UTS namespace), so Open MPI sees 2 nodes and talks TCP over eth0.
# Checks: 2 nodes x 2 ranks x batch 2 on .npy data end with the weights of 1 rank x batch 8 (fp32 rounding), and
# kill -9 of rank 3 (on host 1) ends the whole job, with mpirun naming rank 3 and host 1, well within the timeout.
# Every process runs under `timeout`, every wait is bounded, and the namespaces go on exit (trap), pass or fail.
# Usage: multinode_mpirun.sh DDPX MULTINODE_WEIGHTS SUPPORT_DIR MPIRUN. Exit 77 (skip) without root/iproute2.
set -uo pipefail
DDPX=$1 WEIGHTS=$2 SUPPORT=$3 MPIRUN=$4
P=mnm
WORK=$(mktemp -d)
chmod 755 "$WORK"
cleanup() { bash "$SUPPORT/netns_hosts.sh" down "$P"; rm -rf "$WORK"; }
trap cleanup EXIT
trap "exit 143" TERM INT  # stopped by SIGTERM or Ctrl-C: the EXIT trap still removes the namespaces
mapfile -t ADDR < <(bash "$SUPPORT/netns_hosts.sh" up "$P" 2) || exit $?
[[ ${#ADDR[@]} -eq 2 ]] || exit 77
failures=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); for f in "$WORK"/*.log; do echo "--- $f"; cat "$f"; done; fi
}

"$WEIGHTS" data "$WORK"
TRAIN="train --device cpu --model vit_tiny_test --precision fp32 --lr 0.05 --momentum 0.9 --workers 1 \
--images $WORK/images.npy --labels $WORK/labels.npy --comm-timeout 60"
# mpirun inside host 0 (with host 0's hostname), ranks 0-1 on P-0 and 2-3 on P-1: the README's multi-node mpirun
# line, with the rsh agent that reaches the test hosts.
across_hosts() {
  timeout "$1" ip netns exec "$P-0" unshare --uts bash -c "hostname $P-0 && exec $MPIRUN --allow-run-as-root \
    -H $P-0:2,$P-1:2 -np 4 --mca plm_rsh_agent $SUPPORT/netns_rsh.sh --mca btl tcp,self \
    --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 $DDPX ${*:2}"
}

# 1. 4 ranks x batch 2 across 2 hosts == 1 rank x batch 8.
timeout 120 "$DDPX" $TRAIN --steps 6 --warmup 2 --batch 8 --save "$WORK/one.safetensors" >"$WORK/one.log" 2>&1
check "one rank trains" test -s "$WORK/one.safetensors"
across_hosts 180 $TRAIN --steps 6 --warmup 2 --backend mpi --batch 2 --save "$WORK/four.safetensors" >"$WORK/four.log" 2>&1
echo "mpirun exit status: $?"
check "4 ranks on 2 hosts: batch 2 x 4 rank(s)" grep -qF "batch 2 x 4 rank(s)" "$WORK/four.log"
check "4 ranks on 2 hosts equal 1 rank with the whole batch" "$WEIGHTS" compare "$WORK/one.safetensors" "$WORK/four.safetensors"
rm -f "$WORK"/*.log

# 2. kill -9 of rank 3 (host 1) mid-run: the job ends on both hosts, mpirun names rank 3 and host P-1.
(across_hosts 120 $TRAIN --steps 100000 --warmup 2 --backend mpi --batch 2 --log-every 50 >"$WORK/kill.log" 2>&1; \
 echo $? >"$WORK/kill.rc") &
rank3=""
for _ in $(seq 600); do  # up to 60 s: rank 3's process in host 1, and training under way
  for pid in $(ip netns pids "$P-1" 2>/dev/null); do
    if [[ $(cat /proc/"$pid"/comm 2>/dev/null) == ddpx ]] && tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null |
         grep -qx OMPI_COMM_WORLD_RANK=3; then rank3=$pid; fi
  done
  [[ -n $rank3 ]] && grep -q "^step" "$WORK/kill.log" 2>/dev/null && break
  sleep 0.1
done
check "rank 3 found running on host 1" test -n "$rank3"
[[ -n $rank3 ]] && kill -9 "$rank3"
for _ in $(seq 600); do [[ -s $WORK/kill.rc ]] && break; sleep 0.1; done  # up to 60 s (the test's timeout is 120 s)
wait
check "kill -9: the job ended, not by the test's timeout" bash -c "rc=\$(cat $WORK/kill.rc); [[ \$rc != 0 && \$rc != 124 ]]"
check "kill -9: mpirun names rank 3 on host 1" grep -qE "rank 3 with PID $rank3 on node $P-1 exited on signal 9" "$WORK/kill.log"
check "kill -9: no ddpx left on either host" bash -c "for ns in $P-0 $P-1; do for pid in \$(ip netns pids \$ns); do [[ \$(cat /proc/\$pid/comm 2>/dev/null) != ddpx ]] || exit 1; done; done"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
