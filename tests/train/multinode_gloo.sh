#!/usr/bin/env bash
# ddpx train --device cpu --backend gloo across 2 hosts (network namespaces from tests/support/netns_hosts.sh)
# under ddpx's own launcher: one `ddpx train --nnodes 2 --node-rank R --master-addr A --master-port P
# --nproc-per-node 2` per host, as the README shows. Checks: 2 nodes x 2 ranks x batch 2 on .npy data end with the
# weights of 1 rank x batch 8 (fp32 rounding); kill -9 of rank 3 (on node 1) ends the job on both nodes, each
# launcher naming rank 3 on node 1 and exiting 137; and rank 3 stopped (SIGSTOP) ends it through the others'
# --comm-timeout, both launchers printing the same verdict (which names the first rank to give up: naming the
# stalled one is issue 13's point 10), with no process left. Every process runs under `timeout`, every wait is bounded, the
# namespaces go on exit (trap), pass or fail.
# Usage: multinode_gloo.sh DDPX MULTINODE_WEIGHTS SUPPORT_DIR. Exit 77 (skip) without root or iproute2.
set -uo pipefail
DDPX=$1 WEIGHTS=$2 SUPPORT=$3
P=mng PORT=29631
WORK=$(mktemp -d)
chmod 755 "$WORK"
cleanup() { bash "$SUPPORT/netns_hosts.sh" down "$P"; rm -rf "$WORK"; }
trap cleanup EXIT
trap "exit 143" TERM INT  # stopped by SIGTERM or Ctrl-C: the EXIT trap still removes the namespaces
mapfile -t ADDR < <(bash "$SUPPORT/netns_hosts.sh" up "$P" 2) || exit $?
[[ ${#ADDR[@]} -eq 2 ]] || exit 77
A0=${ADDR[0]} A1=${ADDR[1]}
export DDPX_JOB_TOKEN=multinode-gloo-test-secret  # the launchers' shared secret, required off loopback
failures=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); for f in "$WORK"/*.log; do echo "--- $f"; cat "$f"; done; fi
}

"$WEIGHTS" data "$WORK"
TRAIN="train --device cpu --model vit_tiny_test --precision fp32 --lr 0.05 --momentum 0.9 --workers 1 \
--images $WORK/images.npy --labels $WORK/labels.npy --comm-timeout 30"
# on_node I NAME ARGS...: `ddpx ARGS --nnodes 2 --node-rank I ...` inside host I, in the background.
on_node() {
  local i=$1 name=$2; shift 2
  (timeout 120 bash "$SUPPORT/netns_hosts.sh" exec "$P" "$i" "$DDPX" "$@" --backend gloo --nnodes 2 --node-rank "$i" \
     --master-addr "$A0" --master-port $PORT --nproc-per-node 2 --join-timeout 30 >"$WORK/$name.log" 2>&1
   echo $? >"$WORK/$name.rc") &
}

# Prints the pid of rank 3 (in host 1) once training is under way (it waits up to 60 s, then prints nothing).
find_rank3() {
  local found="" pid
  for _ in $(seq 600); do
    for pid in $(ip netns pids "$P-1" 2>/dev/null); do
      if [[ $(cat /proc/"$pid"/comm 2>/dev/null) == ddpx ]] && tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null |
           grep -qx RANK=3; then found=$pid; fi
    done
    [[ -n $found ]] && grep -qF "] step " "$WORK/n0.log" 2>/dev/null && break
    sleep 0.1
  done
  echo "$found"
}

# 1. 4 ranks x batch 2 on 2 nodes == 1 rank x batch 8.
timeout 120 "$DDPX" $TRAIN --steps 6 --warmup 2 --batch 8 --save "$WORK/one.safetensors" >"$WORK/one.log" 2>&1
check "one rank trains" test -s "$WORK/one.safetensors"
on_node 0 n0 $TRAIN --steps 6 --warmup 2 --batch 2 --save "$WORK/four.safetensors"
on_node 1 n1 $TRAIN --steps 6 --warmup 2 --batch 2 --save "$WORK/four.safetensors"
wait
check "both launchers exit 0" bash -c "[[ \$(cat $WORK/n0.rc) == 0 && \$(cat $WORK/n1.rc) == 0 ]]"
check "4 ranks: batch 2 x 4 rank(s)" grep -qF "batch 2 x 4 rank(s)" "$WORK/n0.log"
check "4 ranks on 2 nodes equal 1 rank with the whole batch" "$WEIGHTS" compare "$WORK/one.safetensors" "$WORK/four.safetensors"
rm -f "$WORK"/*.log "$WORK"/*.rc

# 2. kill -9 of rank 3 (node 1) mid-run: both launchers stop, both name rank 3 on node 1.
on_node 0 n0 $TRAIN --steps 100000 --warmup 2 --batch 2 --log-every 50
on_node 1 n1 $TRAIN --steps 100000 --warmup 2 --batch 2 --log-every 50
rank3=$(find_rank3)
check "rank 3 found running on node 1" test -n "$rank3"
[[ -n $rank3 ]] && kill -9 "$rank3"
wait
for n in n0 n1; do
  check "kill -9 rank 3: $n exits 137" bash -c "[[ \$(cat $WORK/$n.rc) == 137 ]]"
  check "kill -9 rank 3: $n names it" grep -qF "ddpx launch: rank 3 on node 1 ($A1) was killed by signal 9" "$WORK/$n.log"
done
check "kill -9: no ddpx left on either host" bash -c "for ns in $P-0 $P-1; do for pid in \$(ip netns pids \$ns); do [[ \$(cat /proc/\$pid/comm 2>/dev/null) != ddpx ]] || exit 1; done; done"

rm -f "$WORK"/*.log "$WORK"/*.rc

# 3. Rank 3 (node 1) stopped (SIGSTOP: alive, silent) mid-run: the other ranks' collectives give up after
# --comm-timeout (5 s here), the job ends on both nodes with the same verdict, and the stopped rank is gone too.
TRAIN=${TRAIN/--comm-timeout 30/--comm-timeout 5}
on_node 0 n0 $TRAIN --steps 100000 --warmup 2 --batch 2 --log-every 50
on_node 1 n1 $TRAIN --steps 100000 --warmup 2 --batch 2 --log-every 50
rank3=$(find_rank3)
check "rank 3 found running on node 1 (stop)" test -n "$rank3"
[[ -n $rank3 ]] && kill -STOP "$rank3"
wait
verdict0=$(grep "^ddpx launch: " "$WORK/n0.log") verdict1=$(grep "^ddpx launch: " "$WORK/n1.log")
check "stopped rank 3: both launchers end with one verdict" bash -c "[[ -n '$verdict0' && '$verdict0' == '$verdict1' && \$(cat $WORK/n0.rc) != 0 && \$(cat $WORK/n0.rc) != 124 && \$(cat $WORK/n1.rc) != 124 ]]"
check "stopped rank 3: no ddpx left on either host" bash -c "for ns in $P-0 $P-1; do for pid in \$(ip netns pids \$ns); do [[ \$(cat /proc/\$pid/comm 2>/dev/null) != ddpx ]] || exit 1; done; done"
echo "verdict: $verdict0"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
