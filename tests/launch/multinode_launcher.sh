#!/usr/bin/env bash
# ddpx's multi-node launcher between real hosts: 3 network namespaces (tests/support/netns_hosts.sh), one
# launch_driver launcher per host (`launch_driver nodes ...` = launch_node_workers(), the code behind
# `ddpx train --nnodes`), 2 workers per node that join the TCP rendezvous on MASTER_PORT (= --master-port + 1).
# Checks: every rank of 2 nodes x 2 gets rank 0's payload with RANK = node*2 + local; kill -9 of a rank on node 1,
# a failing rank, a launcher killed (either side), interrupted (SIGINT) or silent (SIGSTOP, past the heartbeat
# timeout) end the job on both nodes, each naming the same culprit; and the bad-input list: mismatched --nnodes
# and --nproc-per-node, a node that never joins (both sides), a port in use (control port and rendezvous port),
# node rank out of range, an unresolvable and a foreign --master-addr, a node rank given twice; the shared secret
# (issue 37 item 1): a node with another DDPX_JOB_TOKEN is dropped by node 0, named on both sides, and a launcher
# without one off loopback is refused naming DDPX_JOB_TOKEN.
# Every process runs under `timeout`; every wait loop is bounded; the namespaces go on exit (trap), pass or fail.
# Usage: multinode_launcher.sh LAUNCH_DRIVER NETNS_HOSTS_SH. Exit 77 (skip) without root or iproute2.
set -uo pipefail
DRIVER=$1 NETNS=$2
P=mnl PORT=29611
export DDPX_JOB_TOKEN=multinode-launcher-test-secret  # every node holds it (required off loopback)
WORK=$(mktemp -d)
cleanup() { bash "$NETNS" down "$P"; rm -rf "$WORK"; }
trap cleanup EXIT
trap "exit 143" TERM INT  # stopped by SIGTERM or Ctrl-C: the EXIT trap still removes the namespaces
mapfile -t ADDR < <(bash "$NETNS" up "$P" 3) || exit $?
[[ ${#ADDR[@]} -eq 3 ]] || exit 77
A0=${ADDR[0]} A1=${ADDR[1]}
failures=0

check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); for f in "$WORK"/*.log; do echo "--- $f"; cat "$f"; done; fi
}
has() { grep -qF -- "$2" "$WORK/$1.log"; }
rc_is() { [[ $(cat "$WORK/$1.rc") == "$2" ]]; }

# node HOST NAME NNODES NODE_RANK MASTER PORT JOIN_S MODE: one launcher in the background, output in NAME.log
# (2 workers and a 10 s heartbeat timeout unless NPROC / HEARTBEAT say otherwise).
node() {
  local host=$1 name=$2
  (timeout 60 bash "$NETNS" exec "$P" "$host" "$DRIVER" nodes "$3" "$4" "$5" "$6" "${NPROC:-2}" "$7" "${HEARTBEAT:-10}" "$8" \
     >"$WORK/$name.log" 2>&1; echo $? >"$WORK/$name.rc") &
}
# Waits (at most 30 s) until NAME.log contains TEXT.
wait_for() { for _ in $(seq 300); do has "$1" "$2" && return 0; sleep 0.1; done; return 1; }
pid_of_rank() { sed -n "s/.*rank $2 of .* as pid \([0-9]*\).*/\1/p" "$WORK/$1.log"; }
gone() { for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
rm_logs() { rm -f "$WORK"/*.log "$WORK"/*.rc; }

# 1. Two nodes x 2 ranks: ranks 0..3, each with rank 0's payload.
node 0 n0 2 0 "$A0" $PORT 20 ok; node 1 n1 2 1 "$A0" $PORT 20 ok; wait
check "ok: both launchers exit 0" bash -c "[[ \$(cat $WORK/n0.rc) == 0 && \$(cat $WORK/n1.rc) == 0 ]]"
check "ok: ranks 0,1 on node 0" bash -c "grep -qF \"rank 0 of 4 (local 0) got 'hello from rank 0'\" $WORK/n0.log && grep -qF \"rank 1 of 4 (local 1) got 'hello from rank 0'\" $WORK/n0.log"
check "ok: LOCAL_WORLD_SIZE 2 on every rank" bash -c "[[ \$(cat $WORK/n0.log $WORK/n1.log | grep -c ', 2 rank(s) on this node\$') == 4 ]]"
check "ok: ranks 2,3 on node 1" bash -c "grep -qF \"rank 2 of 4 (local 0) got 'hello from rank 0'\" $WORK/n1.log && grep -qF \"rank 3 of 4 (local 1) got 'hello from rank 0'\" $WORK/n1.log"
rm_logs

# 2. kill -9 of rank 3 (node 1) while all ranks sleep: both nodes end, both name rank 3 on node 1.
node 0 n0 2 0 "$A0" $PORT 20 sleep; node 1 n1 2 1 "$A0" $PORT 20 sleep
wait_for n1 "rank 3 of 4" && kill -9 "$(pid_of_rank n1 3)"; wait
for n in n0 n1; do
  check "kill -9 rank 3: $n exits 137" rc_is $n 137
  check "kill -9 rank 3: $n names it" has $n "ddpx launch: rank 3 on node 1 ($A1) was killed by signal 9"
done
rm_logs

# 3. Rank 2 (node 1) exits 3: both nodes report it with its last stderr line and exit 3.
node 0 n0 2 0 "$A0" $PORT 20 fail:2; node 1 n1 2 1 "$A0" $PORT 20 fail:2; wait
for n in n0 n1; do
  check "failing rank 2: $n" bash -c "[[ \$(cat $WORK/$n.rc) == 3 ]] && grep -qF 'ddpx launch: rank 2 on node 1 ($A1) exited with status 3 first: rank 2 failing on purpose' $WORK/$n.log"
done
rm_logs

# 4. Node 1's launcher killed: node 0 notices the lost connection and stops; node 1's workers die with it.
node 0 n0 2 0 "$A0" $PORT 20 sleep; node 1 n1 2 1 "$A0" $PORT 20 sleep
wait_for n1 "rank 3 of 4"; w2=$(pid_of_rank n1 2) w3=$(pid_of_rank n1 3)
launcher1=$(pgrep -f "^$DRIVER nodes 2 1 $A0"); kill -9 "$launcher1"; wait
check "node 1's launcher killed: node 0 names it" bash -c "[[ \$(cat $WORK/n0.rc) == 1 ]] && grep -qF \"ddpx launch: node 1's launcher ($A1) lost its connection to node 0\" $WORK/n0.log"
check "node 1's launcher killed: its workers are gone" bash -c "$(declare -f gone); gone $w2 && gone $w3"
rm_logs

# 5. Node 0's launcher killed: node 1 stops its workers and says why.
node 0 n0 2 0 "$A0" $PORT 20 sleep; node 1 n1 2 1 "$A0" $PORT 20 sleep
wait_for n1 "rank 3 of 4"; launcher0=$(pgrep -f "^$DRIVER nodes 2 0 $A0"); kill -9 "$launcher0"; wait
check "node 0's launcher killed: node 1 stops" bash -c "[[ \$(cat $WORK/n1.rc) == 1 ]] && grep -qF \"node 1: lost the connection to node 0's launcher at $A0:$PORT\" $WORK/n1.log"
rm_logs

# 6. --nnodes differs: both launchers fail with the same message naming both values.
node 0 n0 2 0 "$A0" $PORT 20 ok; node 1 n1 3 1 "$A0" $PORT 20 ok; wait
for n in n0 n1; do
  check "--nnodes mismatch: $n" bash -c "[[ \$(cat $WORK/$n.rc) != 0 ]] && grep -qF -- '--nnodes differs between nodes: node 1 ($A1) was started with --nnodes 3, node 0 ($A0) with --nnodes 2' $WORK/$n.log"
done
rm_logs

# 7. A node that never joins: node 0 gives up after --join-timeout naming node 1; a lone node 1 names node 0.
node 0 n0 2 0 "$A0" $PORT 2 ok; node 1 n1 2 1 "$A0" $((PORT + 10)) 2 ok; wait
check "never joins: node 0 names the missing node" has n0 "node(s) 1 did not join node 0's launcher at $A0:$PORT within --join-timeout 2 s"
check "never joins: node 1 names node 0's address" has n1 "node 1: cannot reach node 0's launcher at $A0:$((PORT + 10))"
rm_logs

# 8. Ports in use: the control port (another node 0 serves there) and the rendezvous port (--master-port + 1).
node 0 first 2 0 "$A0" $PORT 5 ok; sleep 1  # it now serves (and waits 5 s for a node 1 that never comes)
node 0 n0 2 0 "$A0" $PORT 5 ok; node 0 n0b 2 0 "$A0" $((PORT - 1)) 5 ok; wait
check "control port in use" has n0 "--master-port: port $PORT on $A0 (the launchers' control channel) is in use"
check "rendezvous port in use" has n0b "--master-port: port $PORT on $A0 (the workers' rendezvous, --master-port + 1) is in use"
rm_logs

# 9. Bad values: node rank out of range, a name that does not resolve, node 0 on a host without that address.
node 0 range 2 2 "$A0" $PORT 5 ok; node 0 resolve 2 1 no-such-host.invalid $PORT 5 ok; node 1 foreign 2 0 "$A0" $PORT 5 ok; wait
check "node rank out of range" has range "--node-rank 2 is out of range for --nnodes 2"
check "unresolvable --master-addr" has resolve "--master-addr no-such-host.invalid does not resolve"
check "foreign --master-addr on node 0" has foreign "--master-addr $A0 is not an address of this host"
rm_logs

# 10. The same node rank on two nodes (3 nodes): the job fails on node 0 and on the second claimant.
node 0 n0 3 0 "$A0" $PORT 20 ok; node 1 n1 3 1 "$A0" $PORT 20 ok; sleep 1; node 2 n2 3 1 "$A0" $PORT 20 ok; wait
check "node rank twice: node 0" has n0 "--node-rank 1 was given to two nodes"
check "node rank twice: the second node" has n2 "--node-rank 1 was given to two nodes"
check "node rank twice: the first node is stopped too" bash -c "[[ \$(cat $WORK/n1.rc) != 0 ]]"

rm_logs

# 11. --nproc-per-node differs: both fail naming both values.
node 0 n0 2 0 "$A0" $PORT 20 ok; NPROC=3 node 1 n1 2 1 "$A0" $PORT 20 ok; wait
for n in n0 n1; do
  check "--nproc-per-node mismatch: $n" has $n "--nproc-per-node differs between nodes: node 1 ($A1) was started with --nproc-per-node 3, node 0 ($A0) with 2"
done
rm_logs

# 12. Ctrl-C (SIGINT) on node 1's launcher: every node stops, exit status 130, both name the interrupted launcher.
node 0 n0 2 0 "$A0" $PORT 20 sleep; node 1 n1 2 1 "$A0" $PORT 20 sleep
wait_for n1 "rank 3 of 4" && wait_for n0 "rank 1 of 4"; kill -INT "$(pgrep -f "^$DRIVER nodes 2 1 $A0")"; wait
for n in n0 n1; do
  check "SIGINT on node 1: $n" bash -c "[[ \$(cat $WORK/$n.rc) == 130 ]] && grep -qF \"ddpx launch: node 1's launcher ($A1) was interrupted by signal 2\" $WORK/$n.log"
done
rm_logs

# 13. Node 1's launcher stopped (SIGSTOP: a silent host): node 0 gives up after the 3 s heartbeat timeout; once
# node 1 runs again it reads node 0's verdict and stops its workers.
HEARTBEAT=3 node 0 n0 2 0 "$A0" $PORT 20 sleep; HEARTBEAT=3 node 1 n1 2 1 "$A0" $PORT 20 sleep
wait_for n1 "rank 3 of 4"; launcher1=$(pgrep -f "^$DRIVER nodes 2 1 $A0"); kill -STOP "$launcher1"
for _ in $(seq 300); do [[ -s $WORK/n0.rc ]] && break; sleep 0.1; done; kill -CONT "$launcher1"; wait
check "silent node 1: node 0 names it" bash -c "[[ \$(cat $WORK/n0.rc) == 1 ]] && grep -qF \"ddpx launch: node 1's launcher ($A1) sent nothing for 3 s\" $WORK/n0.log"
check "silent node 1: node 1 stops with node 0's verdict" bash -c "[[ \$(cat $WORK/n1.rc) == 1 ]] && grep -qF \"node 1's launcher ($A1) sent nothing for 3 s\" $WORK/n1.log"

rm_logs

# 14. A node with another secret: node 0 drops its connection (saying so) and gives up on it after --join-timeout;
# the node is told its JOIN proves nothing. Without any secret, off loopback, a launcher refuses to start.
node 0 n0 2 0 "$A0" $PORT 4 ok; DDPX_JOB_TOKEN=another-secret node 1 n1 2 1 "$A0" $PORT 4 ok; wait
check "another secret: node 0 drops it" has n0 "node 0 dropped a connection from $A1: its JOIN does not prove the job's secret"
check "another secret: node 0 gives up on node 1" has n0 "node(s) 1 did not join"
check "another secret: node 1 is told" has n1 "the JOIN does not prove the job's secret"
DDPX_JOB_TOKEN= node 0 n0 2 0 "$A0" $PORT 4 ok; wait
check "no secret off loopback" has n0 "set DDPX_JOB_TOKEN to the same secret on every node"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
