#!/usr/bin/env bash
# The mpirun and Slurm launch paths on the GPU machine (one GPU is enough; with two, the 2-rank lines run too), in
# one device call after a build (bench/gpu-check.sh or `cmake --build build`). Each line prints PASS or FAIL and
# its log goes under $OUT (default ./out):
#  - mpirun -np 1 ddpx train --device cuda (ViT-B/32, a few steps);
#  - a Slurm task's environment with its GPU bound per task (CUDA_VISIBLE_DEVICES set, no MASTER_*), training;
#  - --ranks-per-gpu 2 refused with NCCL older than 2.30, naming the version found (trains with 2.30 or newer);
#  - with 2+ GPUs: mpirun -np 2 ddpx train and allreduce --device cuda (the NCCL id over MPI, no MASTER_*), and the
#    Slurm-like 2-task run over the derived rendezvous.
# Usage (repo root, GPU machine): bash bench/launchers-gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK
DDPX=$(realpath build/src/cli/ddpx)
TRAIN="train --device cuda --model vit_b_32 --precision bf16 --batch 32 --steps 8 --warmup 3 --log-every 4"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
failures=0
check() {  # NAME EXPECT(pass|refuse:TEXT) COMMAND...
  local name=$1 expect=$2 log="$OUT/launch-$1.log"
  shift 2
  timeout -k 5 300 "$@" >"$log" 2>&1
  local status=$?
  if [[ $expect == pass && $status -eq 0 ]] && grep -q "summary:\|Out of bounds values : 0 OK" "$log"; then
    echo "PASS $name"
  elif [[ $expect == refuse:* && $status -ne 0 ]] && grep -q -- "${expect#refuse:}" "$log"; then
    echo "PASS $name (refused: $(grep -o -- "${expect#refuse:}.*" "$log" | head -1 | cut -c1-160))"
  else
    echo "FAIL $name (exit $status), last lines:"; tail -5 "$log"; failures=$((failures + 1))
  fi
}
slurm_task() {  # RANK NTASKS: what srun sets for one task of a one-node step, GPU bound per task
  echo SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=$1 SLURM_LOCALID=$1 SLURM_NODEID=0 SLURM_NTASKS=$2 \
    SLURM_STEP_NUM_TASKS=$2 SLURM_STEP_TASKS_PER_NODE=$2 SLURM_JOB_NODELIST=localhost \
    SLURM_STEP_NODELIST=localhost SLURMD_NODENAME=localhost CUDA_VISIBLE_DEVICES=$1
}
check mpirun-1 pass mpirun -np 1 "$DDPX" $TRAIN
check slurm-bound-1 pass env $(slurm_task 0 1) "$DDPX" $TRAIN
NCCL_TEXT="--ranks-per-gpu 2: several ranks on one GPU need NCCL"
if [[ $GPUS -ge 1 ]]; then
  check ranks-per-gpu-2 "refuse:$NCCL_TEXT" "$DDPX" $TRAIN --nproc-per-node 2 --ranks-per-gpu 2
fi
if [[ $GPUS -ge 2 ]]; then
  check mpirun-2 pass mpirun -np 2 "$DDPX" $TRAIN
  check mpirun-2-allreduce pass mpirun -np 2 "$DDPX" allreduce --device cuda --sizes 1M:64M
  check slurm-bound-2 pass bash -c "env $(slurm_task 1 2) '$DDPX' $TRAIN >'$OUT/launch-slurm-bound-2.rank1.log' 2>&1 &
    env $(slurm_task 0 2) '$DDPX' $TRAIN; status=\$?; wait \$! || status=1; exit \$status"
fi
echo "launchers-gpu-check: $failures failure(s) ($GPUS GPU(s))"
exit $((failures > 0))
