#!/usr/bin/env bash
# torchrun_test.sh MODE N PROGRAM NETNS_HOSTS: runs PROGRAM under a real torchrun and checks the result.
#   static N          one agent, `--nnodes 1 --master_addr 127.0.0.1 --master_port P` (P free), N ranks
#   standalone N      one agent, `--standalone`, N ranks
#   netns-c10d N      two agents in two network namespaces (hosts of their own, with their own host names),
#                     `--nnodes 2 --rdzv_backend c10d --rdzv_endpoint <host 0>:29400`, N ranks each
#   netns-static N    two agents in two namespaces, `--nnodes 2 --node_rank I --master_addr <host 0>`, N ranks each
#     (PROGRAM: exchange_driver. Checks: every rank of the world reported exactly once; every rank got rank 0's
#     bytes; where the route offers the all-gather, every rank gathered the same list, equal to what each rank
#     contributed, in rank order.)
#   static-absent N   like static, but rank 1 exits at once: the job must fail after the others' 6 s timeout,
#                     with an error naming rank 1 and MASTER_ADDR:MASTER_PORT
#   static-restart N  like static with --max_restarts 1, rank 1 failing once after its exchanges: the second
#                     attempt's exchange must pass on its own (its keys are apart from the first attempt's)
#   train-cpu N       `ddpx train --device cpu --model vit_tiny_test --steps 2` under --standalone (PROGRAM: ddpx);
#                     must finish both steps; with N >= 2 over --backend gloo (skipped in a build without Gloo)
#   train-resume-auto N   `ddpx train --resume auto --checkpoint-dir D --checkpoint-every 2 --steps 6` twice: once
#                     whole, once under --max_restarts 1 with the last rank killed (SIGKILL) at its 6th step, after
#                     the checkpoint at step 4 is committed (once step 5 passed): the restart must resume at
#                     step 4 and --save the same bytes as the
#                     whole run; the first attempt must say it starts at step 0 (the folder had no checkpoint)
#   train-cpu-refused N   the same with N >= 2 ranks and --backend mpi: must fail at once with the message naming
#                     mpirun (MPI's ranks cannot come from torchrun)
# The torchrun is $DDPX_TORCHRUN (default: torchrun on PATH). Flags are spelled with underscores, which every
# torchrun accepts (1.13 knows no other spelling); `-r 1 -t 1` works around 1.13's default log redirection, which
# crashes under Python 3.11. Exit 0 pass, 1 fail, 77 skip (no torchrun; namespaces without root or iproute2).
# Every wait is bounded (timeout), and the namespaces are removed on exit.
set -uo pipefail

mode=${1:?mode} nproc=${2:?N} program=${3:?program} netns_hosts=${4:?netns_hosts.sh}
torchrun=${DDPX_TORCHRUN:-torchrun}
if ! command -v "$torchrun" >/dev/null 2>&1; then
  echo "SKIP: no torchrun found ('$torchrun'); install python3-torch (Debian) or set DDPX_TORCHRUN to one"
  exit 77
fi
work=$(mktemp -d)
prefix="tr$(( $$ % 100000 ))"
cleanup() {
  [[ $mode == netns-* ]] && bash "$netns_hosts" down "$prefix" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -n 40 "$f"; done; exit 1; }

common=(--nproc_per_node "$nproc" --no_python -r 1 -t 1)

# Lines "exchange_driver(ATTEMPT): ..." from all logs as "exchange_driver: ...", torchrun's "[default0]:" prefixes
# removed.
driver_lines() {
  cat "$work"/*.log | grep -o "exchange_driver($1): .*" |
    sed "s/^exchange_driver($1)/exchange_driver/; s/[[:space:]]*$//"
}

check_exchange() {
  local world=$1 attempt=${2:-0} lines sent r got route
  lines=$(driver_lines "$attempt")
  for ((r = 0; r < world; r++)); do
    [[ $(grep -c "^exchange_driver: rank $r of $world route=" <<<"$lines") == 1 ]] ||
      fail "rank $r of $world did not report exactly once"
  done
  route=$(grep -m1 -o 'route=[^=]*local' <<<"$lines" | sed 's/route=//; s/ local$//')
  sent=$(grep '^exchange_driver: rank 0 sent ' <<<"$lines" | awk '{print $5}')
  [[ ${#sent} == 256 ]] || fail "rank 0 did not report the 128 bytes it sent"
  for ((r = 0; r < world; r++)); do
    got=$(grep "^exchange_driver: rank $r got " <<<"$lines" | awk '{print $5}')
    [[ $got == "$sent" ]] || fail "rank $r got '${got:0:24}...' instead of rank 0's '${sent:0:24}...'"
  done
  if grep -q ' gathered ' <<<"$lines"; then
    local expected="" gathered
    for ((r = 0; r < world; r++)); do
      expected+="${expected:+,}$(grep "^exchange_driver: rank $r contributed " <<<"$lines" | awk '{print $5}')"
    done
    for ((r = 0; r < world; r++)); do
      gathered=$(grep "^exchange_driver: rank $r gathered " <<<"$lines" | awk '{print $5}')
      [[ $gathered == "$expected" ]] || fail "rank $r gathered '$gathered', expected '$expected'"
    done
    echo "PASS: $world ranks over $route: every rank got rank 0's 128 bytes and gathered all $world parts"
  else
    [[ $route != "torchrun's agent store" ]] || fail "the store route must offer the all-gather"
    echo "PASS: $world ranks over $route: every rank got rank 0's 128 bytes (no all-gather on this route)"
  fi
}

# Runs one agent per namespace host (each in its own UTS namespace, named like its entry in the hosts file, so
# torchrun's host-name lookups work as on real machines) and waits for both.
run_two_nodes() {
  local flags_for_node=$1 addr0 i pids=() status=0
  addr0=$(bash "$netns_hosts" up "$prefix" 2 | head -n 1)
  local rc=${PIPESTATUS[0]}
  [[ $rc == 77 ]] && { echo "SKIP: network namespaces need root and iproute2"; exit 77; }
  [[ -n $addr0 ]] || fail "could not create the namespaces (netns_hosts.sh up: status $rc)"
  for i in 0 1; do
    # shellcheck disable=SC2046
    bash "$netns_hosts" exec "$prefix" "$i" unshare --uts bash -c \
      "hostname $prefix-$i && exec timeout -k 5 150 \"\$@\"" agent \
      "$torchrun" "${common[@]}" --nnodes 2 $($flags_for_node "$i" "$addr0") "$program" \
      >"$work/node$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do wait "${pids[$i]}" || status=$?; done
  [[ $status == 0 ]] || fail "a torchrun agent exited with status $status"
}

c10d_flags() { echo "--rdzv_backend c10d --rdzv_endpoint $2:29400 --rdzv_id ddpx-test-$prefix"; }
static_flags() { echo "--node_rank $1 --master_addr $2 --master_port 29500"; }

case "$mode" in
  static)
    port=$("$program" free-port) || fail "no free port"
    timeout -k 5 150 "$torchrun" "${common[@]}" --nnodes 1 --master_addr 127.0.0.1 --master_port "$port" \
      "$program" >"$work/node0.log" 2>&1 || fail "torchrun exited with status $?"
    check_exchange "$nproc" ;;
  static-absent)
    port=$("$program" free-port) || fail "no free port"
    timeout -k 5 150 "$torchrun" "${common[@]}" --nnodes 1 --master_addr 127.0.0.1 --master_port "$port" \
      "$program" --timeout 6 --absent-rank 1 >"$work/node0.log" 2>&1 && fail "torchrun succeeded without rank 1"
    needle="timed out after 6.0 s waiting in torchrun's store at MASTER_ADDR:MASTER_PORT = 127.0.0.1:$port"
    needle+=" for rank(s) 1 of $nproc"
    # The first rank to time out ends the job: torchrun then stops the others, perhaps before they print.
    grep -qF "$needle" "$work/node0.log" || fail "no rank reported: $needle"
    echo "PASS: without rank 1, the job stopped after the timeout with an error naming rank 1" ;;
  static-restart)
    port=$("$program" free-port) || fail "no free port"
    timeout -k 5 150 "$torchrun" "${common[@]}" --max_restarts 1 --nnodes 1 --master_addr 127.0.0.1 \
      --master_port "$port" "$program" --fail-once-rank 1 >"$work/node0.log" 2>&1 ||
      fail "torchrun exited with status $? (the restarted attempt should succeed)"
    grep -q 'exchange_driver(0): rank 1 failing on purpose' "$work/node0.log" || fail "attempt 0 did not fail"
    check_exchange "$nproc" 0
    check_exchange "$nproc" 1
    [[ $(driver_lines 0 | grep ' sent ') != $(driver_lines 1 | grep ' sent ') ]] || fail "both attempts sent the same"
    echo "PASS: the restarted attempt exchanged afresh" ;;
  standalone)
    timeout -k 5 150 "$torchrun" "${common[@]}" --standalone "$program" >"$work/node0.log" 2>&1 ||
      fail "torchrun exited with status $?"
    check_exchange "$nproc" ;;
  netns-c10d) run_two_nodes c10d_flags; check_exchange $((2 * nproc)) ;;
  netns-static) run_two_nodes static_flags; check_exchange $((2 * nproc)) ;;
  train-cpu)
    backend=(); ((nproc > 1)) && backend=(--backend gloo)
    timeout -k 5 150 "$torchrun" "${common[@]}" --standalone "$program" train --device cpu --model vit_tiny_test \
      --steps 2 "${backend[@]}" >"$work/train.log" 2>&1
    status=$?
    if grep -q -- "--backend gloo is not available" "$work/train.log"; then
      echo "SKIP: this ddpx was built without Gloo"; exit 77
    fi
    ((status == 0)) || fail "torchrun + ddpx train exited with status $status"
    grep -q 'step *2/2' "$work/train.log" || fail "ddpx train did not report step 2/2"
    echo "PASS: torchrun started ddpx train --device cpu with $nproc rank(s); it ran both steps" ;;
  train-resume-auto)
    # --ddp at one rank: the fault point counts synchronized (reducer) steps.
    backend=(--ddp); ((nproc > 1)) && backend=(--backend gloo)
    run=(train --device cpu --model vit_tiny_test --data learnable --batch 2 --steps 6 --warmup 0 --workers 1
         --cpu-threads 1 --checkpoint-every 2 --resume auto "${backend[@]}")
    timeout -k 5 150 "$torchrun" "${common[@]}" --standalone "$program" "${run[@]}" --checkpoint-dir "$work/whole" \
      --save "$work/whole.safetensors" >"$work/whole.log" 2>&1
    status=$?
    if grep -q -- "--backend gloo is not available" "$work/whole.log"; then
      echo "SKIP: this ddpx was built without Gloo"; exit 77
    fi
    ((status == 0)) || fail "the uninterrupted run exited with status $status"
    DDPX_TEST_FAULT="step-6:$((nproc - 1)):kill" timeout -k 5 150 "$torchrun" "${common[@]}" --max_restarts 1 \
      --standalone "$program" "${run[@]}" --checkpoint-dir "$work/restarted" --save "$work/restarted.safetensors" \
      >"$work/restarted.log" 2>&1 || fail "torchrun --max_restarts 1 exited with status $? (the restart should finish)"
    grep -q "no checkpoint in $work/restarted yet; starting at step 0" "$work/restarted.log" ||
      fail "the first attempt did not say it starts at step 0"
    grep -q "resumed from $work/restarted at step 4" "$work/restarted.log" || fail "the restart did not resume at step 4"
    grep -q 'step *6/6' "$work/restarted.log" || fail "the restarted run did not reach step 6"
    cmp "$work/whole.safetensors" "$work/restarted.safetensors" ||
      fail "the restarted job's weights differ from the uninterrupted run's"
    echo "PASS: killed after the step-4 checkpoint, the job restarted under torchrun, resumed at step 4 and ended" \
      "with the uninterrupted run's weights ($nproc rank(s))" ;;
  train-cpu-refused)
    timeout -k 5 100 "$torchrun" "${common[@]}" --standalone "$program" train --device cpu --backend mpi \
      --model vit_tiny_test --steps 2 >"$work/train.log" 2>&1
    status=$?
    [[ $status != 0 && $status != 124 && $status != 137 ]] || fail "expected a quick failure, got status $status"
    # Every rank refuses; torchrun may stop the others once the first has, before they print.
    grep -q "torchrun started this rank (world size $nproc).*mpirun -np $nproc" "$work/train.log" ||
      fail "ddpx train --device cpu under torchrun must refuse, naming mpirun"
    echo "PASS: ddpx train --device cpu under torchrun with $nproc ranks is refused at once, naming mpirun" ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
