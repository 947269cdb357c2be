#!/usr/bin/env bash
# torch_ddp_check.sh CASE TRAIN_CNN FIXTURES [DDPX]: one check of ddpx::torch::DistributedDataParallel, running
# examples/torch_ddp's train_cnn on tests/fixtures/torch_ddp (tools/make_torch_ddp_fixture.py: 6 SGD steps of a
# global batch of 12; expected_single.f32 from one PyTorch process, expected_pytorch_ddp_2.f32 from PyTorch's DDP
# over Gloo, 2 ranks). Rank 0 loads the initial weights, the other ranks start from other random ones (the
# wrapper's broadcast must fix them). Tolerance 1e-6 on parameters that the 6 steps move by up to 2e-2 (PyTorch's
# own DDP and its single process differ by 3e-8 here).
#   equal_world_1|2|3  W ranks (ddpx's launcher) x 12/W images = expected_single; every rank's parameters equal
#   accumulation       2 ranks x 6 images as 3 micro-batches (2 in no_sync()) = expected_single
#   pytorch_ddp        2 ranks x 6 = PyTorch DDP's parameters (expected_pytorch_ddp_2)
#   hooks              allreduce, fp16, bf16, powersgd:1:0, powersgd:2:3 at 2 ranks: ranks bit-identical, within the
#                      hook's tolerance of expected_single (exact 1e-6, fp16 1e-4, bf16 1e-3, PowerSGD 5e-2)
#   unused_refused     a parameter without a gradient, find_unused_parameters off: PyTorch's message, naming it
#   unused_found       the same with --find-unused: trains, = expected_single, ranks equal
#   mismatch           rank 1 builds conv1 with 5 channels: every rank refuses, naming the first differing tensor
#   bad_input          a float64 model, a non-contiguous parameter, a module moved to float64 after wrapping: refused,
#                      naming the parameter
#   killed_rank        rank 1 SIGKILLed at step 3 (DDPX_TEST_FAULT): the job ends non-zero, naming it
#   stalled_rank       rank 1 SIGSTOPped at step 3, 3 s timeout: rank 0's watchdog/Gloo ends the job
#   torchrun           2 ranks under a real torchrun (Gloo) = expected_single (skipped without torchrun)
#   mpirun             2 ranks under mpirun (MPI backend) = expected_single (skipped without mpirun)
#   report             2 ranks write a run report; `ddpx report` reads it (when DDPX is given and built)
# Exit 0 pass, 1 fail, 77 skip. Every run is bounded by `timeout`.
set -uo pipefail
case_name=${1:?case} train=${2:?train_cnn} fixtures=${3:?fixtures} ddpx=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--data "$fixtures" --image-size 16 --steps 6 --lr 0.1 --quiet --timeout 20)
fail() { echo "FAIL ($case_name): $*"; [[ -f $work/log ]] && tail -n 30 "$work/log"; exit 1; }

# run W B [flags...]: W ranks through the example's own launcher (ddpx's), B images per rank.
run() {
  local world=$1 batch=$2
  shift 2
  timeout 90 "$train" --nproc-per-node "$world" "${common[@]}" --batch "$batch" --out "$work/params" "$@" \
    >"$work/log" 2>&1
}
ranks_equal() {
  local world=$1 r
  for ((r = 1; r < world; ++r)); do
    cmp -s "$work/params.rank0.f32" "$work/params.rank$r.f32" || fail "rank $r's parameters differ from rank 0's"
  done
}
expect_failure() {  # expect_failure REGEX: the last run failed and its output matches
  local status=$1 regex=$2
  [[ $status -ne 0 ]] || fail "the run succeeded; expected a failure matching '$regex'"
  [[ $status -ne 124 ]] || fail "the run hung (timeout)"
  grep -Eq -- "$regex" "$work/log" || fail "no line matches '$regex'"
}

case $case_name in
  equal_world_[123])
    world=${case_name##*_}
    run "$world" $((12 / world)) --expect "$fixtures/expected_single.f32" --tolerance 1e-6 || fail "status $?"
    ranks_equal "$world" ;;
  accumulation)
    run 2 6 --accum 3 --expect "$fixtures/expected_single.f32" --tolerance 1e-6 || fail "status $?"
    ranks_equal 2 ;;
  pytorch_ddp)
    run 2 6 --backend gloo --expect "$fixtures/expected_pytorch_ddp_2.f32" --tolerance 1e-6 || fail "status $?"
    ranks_equal 2 ;;
  hooks)
    for spec in allreduce:1e-6 fp16:1e-4 bf16:1e-3 powersgd:1:0:5e-2 powersgd:2:3:5e-2; do
      hook=${spec%:*} tolerance=${spec##*:}
      run 2 6 --hook "$hook" --bucket-mb 0.002 --first-bucket-mb 0.001 --expect "$fixtures/expected_single.f32" \
        --tolerance "$tolerance" || fail "hook $hook: status $?"
      ranks_equal 2
      echo "hook $hook: $(grep 'max |' "$work/log")"
    done ;;
  unused_refused)
    run 2 6 --unused-branch
    expect_failure $? "Expected to have finished reduction in the prior iteration.*unused_head.weight, unused_head.bias.*find_unused_parameters = true" ;;
  unused_found)
    run 2 6 --unused-branch --find-unused --expect "$fixtures/expected_single.f32" --tolerance 1e-6 || fail "status $?"
    ranks_equal 2 ;;
  mismatch)
    run 2 6 --width-on-rank 1:5
    status=$?
    for r in 0 1; do
      expect_failure $status "rank $r: .*every rank must wrap the same model.*ranks disagree on the model's tensor 0 \(name \[shape\] dtype\): rank 0 has 'parameter conv1.weight \[4, 1, 3, 3\] float32', rank 1 has 'parameter conv1.weight \[5, 1, 3, 3\] float32'"
    done ;;
  bad_input)
    run 1 12 --bad-input float64
    expect_failure $? "parameter 'conv1.weight' is float64; ddpx reduces float32 gradients only"
    run 1 12 --bad-input noncontiguous
    expect_failure $? "parameter 'fc.weight' is not contiguous \\(strides \\[1, 10\\] for shape \\[10, 128\\]\\)"
    run 2 6 --bad-input reallocated
    expect_failure $? "parameter '.*' was reallocated after the module was wrapped" ;;
  killed_rank)
    DDPX_TEST_FAULT=step-3:1:kill run 2 6
    expect_failure $? "ddpx launch: rank 1 was killed by signal 9" ;;
  stalled_rank)
    DDPX_TEST_FAULT=step-3:1:stop run 2 6 --timeout 3
    expect_failure $? "rank 0: .*(communication timed out after 3 s|all_reduce failed)" ;;
  torchrun)
    command -v torchrun >/dev/null || { echo "SKIP: no torchrun (python3-torch)"; exit 77; }
    timeout 90 torchrun --nproc_per_node 2 --no_python -r 1 -t 1 --standalone "$train" "${common[@]}" --batch 6 \
      --backend gloo --expect "$fixtures/expected_single.f32" --tolerance 1e-6 >"$work/log" 2>&1 || fail "status $?"
    grep -q "max |" "$work/log" || fail "rank 0 compared nothing" ;;
  mpirun)
    command -v mpirun >/dev/null || { echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
    timeout 90 mpirun -np 2 --oversubscribe --allow-run-as-root "$train" "${common[@]}" --batch 6 \
      --expect "$fixtures/expected_single.f32" --tolerance 1e-6 >"$work/log" 2>&1 || fail "status $?"
    grep -q "max |" "$work/log" || fail "rank 0 compared nothing" ;;
  report)
    run 2 6 --report "$work/run.json" || fail "status $?"
    python3 - "$work/run.json" <<'EOF' || fail "the report is not what was run"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["config"]["world"] == 2 and r["config"]["batch"] == 6 and r["config"]["hook"] == "allreduce", r["config"]
assert [k["info"]["rank"] for k in r["ranks"]] == [0, 1]
for k in r["ranks"]:
    assert len(k["steps"]) == 5, len(k["steps"])  # 6 steps, the first one warm-up
    for s in k["steps"]:
        p = s["phases"]
        assert p["forward_ms"] > 0 and p["backward_ms"] > 0 and p["total_ms"] >= p["forward_ms"] + p["backward_ms"]
        assert len(s["buckets"]) == 1 and s["buckets"][0]["elements"] > 1600, s["buckets"]
EOF
    if [[ -n $ddpx && -x $ddpx ]]; then
      timeout 60 "$ddpx" report "$work/run.json" >"$work/log" 2>&1 || fail "ddpx report: status $?"
      grep -qi "exposed" "$work/log" || fail "ddpx report printed no breakdown"
    fi ;;
  *) echo "unknown case '$case_name'"; exit 2 ;;
esac
echo "PASS ($case_name)"
