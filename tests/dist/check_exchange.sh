#!/usr/bin/env bash
# check_exchange.sh N VIA -- COMMAND...: runs COMMAND (a launcher starting N bootstrap_exchange_driver ranks, with
# no MASTER_ADDR/MASTER_PORT in the environment) under a 120 s limit and passes when it exits 0 and exactly N
# distinct ranks each print "exchange: rank R of N via VIA payload HEX" with one and the same HEX (rank 0's bytes),
# not all zero.
set -euo pipefail
n=$1 via=$2
shift 3
out=$(env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE -u LOCAL_RANK timeout -k 5 120 "$@" 2>&1) || {
  echo "$out"; echo "check_exchange: '$*' failed"; exit 1; }
echo "$out"
lines=$(grep -E "^exchange: rank [0-9]+ of $n via $via payload [0-9a-f]{32} \(128 bytes\)$" <<<"$out" || true)
ranks=$(sed -E 's/^exchange: rank ([0-9]+) .*/\1/' <<<"$lines" | sort -un | wc -l)
payloads=$(sed -E 's/.* payload ([0-9a-f]+) .*/\1/' <<<"$lines" | sort -u)
[[ $ranks -eq $n ]] || { echo "check_exchange: expected $n ranks reporting via $via, found $ranks"; exit 1; }
[[ $(wc -l <<<"$payloads") -eq 1 ]] || { echo "check_exchange: the ranks received different payloads"; exit 1; }
[[ $payloads != 00000000000000000000000000000000 ]] || { echo "check_exchange: rank 0's payload never arrived"; exit 1; }
echo "check_exchange: $n ranks received rank 0's payload $payloads via $via"
