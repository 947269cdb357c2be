#!/usr/bin/env bash
# fault_matrix.sh DDPX PHASE: one row of the multi-rank fault matrix (ctest fault_matrix_<PHASE>, label
# fault_matrix). A 3-rank CPU run of vit_tiny_test (6 steps, --comm-timeout 3, a checkpoint every 2 steps, --save)
# is started once per fault kind under ddpx's own launcher (--nproc-per-node 3, which runs mpirun) and, for a
# stopped rank, also under plain mpirun; one rank misbehaves at PHASE through the DDPX_TEST_FAULT test hook
# (src/core/test_fault.hpp):
#   start       before the communicator exists (MPI_Init)  rank 1
#   agreement   before the start-up agreement               rank 2
#   broadcast   before the parameter broadcast              rank 1
#   first-step  before step 1's forward pass                rank 2
#   mid-run     before step 3's forward pass                rank 1
#   checkpoint  in the second checkpoint's write (step 4), after its bytes, before its rename   rank 0
#   final-save  in the --save write, after its bytes, before its rename                         rank 0
#   finalize    after the last collective, before MPI_Finalize (which waits for every rank)     rank 1
# Kinds: kill (SIGKILL), stop (SIGSTOP), slow (sleeps ten times the timeout: 30 s).
# Every case must: end on its own (each run is bounded by `timeout` at 60 s; reaching it is a hang and fails), exit
# non-zero, name the culprit rank in its output (mpirun's report of the signal for kill; the watchdog's heartbeat
# report for stop and slow), leave no process of the run behind (bounded wait), leave no temporary file, and leave
# a checkpoint (if any) that resumes and a --save file (if any) that loads.
# Prints "fault_matrix: PASS" and exits 0 only if every case holds. DDPX_FAULT_MATRIX_TIMEOUT (default 3) sets
# --comm-timeout, for machines so loaded that healthy ranks can be 3 s apart.
set -u
ddpx=$(realpath "$1")
timeout_s=${DDPX_FAULT_MATRIX_TIMEOUT:-3}  # whole seconds
limit_s=$((45 + 5 * timeout_s))             # a run still going after this is a hang
phase=$2
case "$phase" in
  start) point=start; culprit=1 ;;
  agreement) point=agreement; culprit=2 ;;
  broadcast) point=broadcast; culprit=1 ;;
  first-step) point=step-1; culprit=2 ;;
  mid-run) point=step-3; culprit=1 ;;
  checkpoint) point=write-checkpoint-4.safetensors; culprit=0 ;;
  final-save) point=write-w.safetensors; culprit=0 ;;
  finalize) point=finalize; culprit=1 ;;
  *) echo "fault_matrix: unknown phase '$phase'"; exit 2 ;;
esac

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for name in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE \
            SLURM_PROCID SLURM_NTASKS SLURM_LOCALID DDPX_TEST_FAULT; do
  unset "$name"
done
mpirun_args=(-np 3 --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)

root=$(mktemp -d "${TMPDIR:-/tmp}/ddpx_fault_matrix_${phase}_XXXXXX")
trap 'rm -rf "$root"' EXIT
failures=0

fail_case() {
  echo "fault_matrix: FAIL [$1]: $2"
  failures=$((failures + 1))
}

processes_of_run() {  # the pids whose command line names this run's checkpoint folder (no procps needed)
  local cmdline pids=""
  for cmdline in /proc/[0-9]*/cmdline; do
    local text
    text=$( { tr '\0' ' ' <"$cmdline"; } 2>/dev/null) || continue
    [[ "$text" == *"--checkpoint-dir $1/ck "* ]] && pids="$pids ${cmdline//[^0-9]/}"
  done
  echo $pids
}

run_case() {  # run_case LAUNCHER KIND
  local launcher=$1 kind=$2 label="$phase $2 rank $culprit under $1"
  local dir="$root/$launcher-$kind"
  mkdir -p "$dir"
  local fault="$point:$culprit:$kind"
  [ "$kind" = slow ] && fault="$fault:$((timeout_s * 10))"
  local train=("$ddpx" train --device cpu --model vit_tiny_test --batch 2 --steps 6 --workers 1 --log-every 1
               --comm-timeout "$timeout_s" --checkpoint-dir "$dir/ck" --checkpoint-every 2 --save "$dir/w.safetensors")
  local command
  if [ "$launcher" = launcher ]; then
    command=("${train[@]}" --nproc-per-node 3)
  else
    command=(mpirun "${mpirun_args[@]}" "${train[@]}")
  fi
  (cd "$dir" && DDPX_TEST_FAULT="$fault" timeout --verbose -k 5 "$limit_s" "${command[@]}") >"$dir/output.txt" 2>&1
  local status=$?
  echo "--- $label: exit $status"
  grep -v '^\[rank [0-9]\] step\|^step ' "$dir/output.txt" | head -40

  [ "$status" = 0 ] && fail_case "$label" "the job succeeded, a failure was expected"
  grep -q "^timeout: sending signal" "$dir/output.txt" && fail_case "$label" "the job did not end on its own within $limit_s s"

  local named
  case "$kind" in
    kill) named="process rank $culprit with PID [0-9]+ on node [^ ]+ exited on signal 9" ;;
    stop) named="rank $culprit's process [0-9]+ is stopped \\(state T" ;;
    slow) named="rank $culprit has not reached it: process [0-9]+ is busy outside any collective" ;;
  esac
  grep -Eq "$named" "$dir/output.txt" || fail_case "$label" "the output does not name the culprit ('$named')"
  local report="communication timed out after $timeout_s s"
  [ "$phase" = finalize ] && report="MPI_Finalize did not return within $timeout_s s"
  if [ "$kind" != kill ]; then
    grep -q "$report" "$dir/output.txt" || fail_case "$label" "no watchdog report ('$report') in the output"
  fi

  # No process of this run may outlive it (a stopped rank included): wait up to 10 s, then kill and fail.
  local left=""
  for _ in $(seq 1 20); do
    left=$(processes_of_run "$dir")
    [ -z "$left" ] && break
    sleep 0.5
  done
  if [ -n "$left" ]; then
    fail_case "$label" "processes left behind: $left"
    for pid in $left; do kill -9 "$pid" 2>/dev/null; done
  fi

  local temporaries
  temporaries=$(find "$dir" -name '*.tmp')
  [ -n "$temporaries" ] && fail_case "$label" "temporary files left: $temporaries"
  if [ -e "$dir/ck/checkpoint.safetensors" ]; then
    "$ddpx" train --device cpu --model vit_tiny_test --batch 2 --steps 7 --workers 1 --quiet \
      --resume "$dir/ck" >"$dir/resume.txt" 2>&1 ||
      fail_case "$label" "the checkpoint left does not resume: $(tail -1 "$dir/resume.txt")"
  elif [ "$phase" = checkpoint ] || [ "$phase" = final-save ]; then
    fail_case "$label" "the checkpoint written before the fault is gone"
  fi
  if [ -e "$dir/w.safetensors" ]; then
    "$ddpx" train --device cpu --model vit_tiny_test --batch 2 --steps 1 --workers 1 --quiet \
      --load "$dir/w.safetensors" >"$dir/load.txt" 2>&1 ||
      fail_case "$label" "the --save file left does not load: $(tail -1 "$dir/load.txt")"
  fi
}

for kind in kill stop slow; do run_case launcher "$kind"; done
run_case mpirun stop

if [ "$failures" = 0 ]; then
  echo "fault_matrix: PASS"
  exit 0
fi
echo "fault_matrix: $failures case(s) failed"
exit 1
