#!/usr/bin/env bash
# check_exchange.sh N ROUTE -- COMMAND...: runs COMMAND (a launcher starting N exchange_driver ranks, with no
# MASTER_ADDR/MASTER_PORT in the environment) under a 120 s limit and passes when it exits 0, exactly N distinct
# ranks report "route=ROUTE", and every rank "got" the bytes rank 0 "sent" (exchange_driver's lines).
# ROUTE is exchange_route's name: MPI, "ddpx's TCP rendezvous", ...
set -euo pipefail
n=$1 route=$2
shift 3
out=$(env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE -u LOCAL_RANK timeout -k 5 120 "$@" 2>&1) || {
  echo "$out"; echo "check_exchange: '$*' failed"; exit 1; }
echo "$out"
ranks=$(grep -F " route=$route local=" <<<"$out" | sed -E 's/.*: rank ([0-9]+) of '"$n"' .*/\1/' | sort -un | wc -l)
[[ $ranks -eq $n ]] || { echo "check_exchange: expected $n ranks on the route '$route', found $ranks"; exit 1; }
sent=$(sed -nE 's/.*: rank 0 sent ([0-9a-f]+)$/\1/p' <<<"$out")
[[ -n $sent ]] || { echo "check_exchange: rank 0 printed no payload"; exit 1; }
got=$(sed -nE 's/.*: rank [0-9]+ got ([0-9a-f]+)$/\1/p' <<<"$out")
[[ $(wc -l <<<"$got") -eq $n && $(sort -u <<<"$got") == "$sent" ]] ||
  { echo "check_exchange: not every rank got rank 0's bytes"; exit 1; }
echo "check_exchange: $n ranks got rank 0's payload ${sent:0:32}... over $route"
