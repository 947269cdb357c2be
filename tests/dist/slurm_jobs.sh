#!/usr/bin/env bash
# slurm_jobs.sh DDPX EXCHANGE_DRIVER: real Slurm jobs on a one-node cluster this test starts and stops
# (tests/support/slurm_cluster.sh), with no MASTER_ADDR/MASTER_PORT anywhere:
#  1. `srun -n 2` of exchange_driver (the NCCL id's exchange with a 128-byte stand-in): rank 0's bytes reach
#     rank 1 over the TCP rendezvous at the address and port derived from SLURM_STEP_NODELIST and
#     SLURM_JOB_ID/SLURM_STEP_ID;
#  2. `srun -n 2 --mpi=pmix` of the same driver: over MPI; `srun -n 2 --mpi=pmi2` (which Open MPI cannot join):
#     over the derived TCP rendezvous;
#  3. `srun -n 2 --mpi=pmix ddpx train --device cpu ...`: 2 ranks train over MPI and save weights;
#  3b. plain `srun -n 2 ddpx train --device cpu ...` (no MPI launcher): --backend auto is Gloo, meeting at the
#     derived address and port; the same weights as run 3 (skipped when ddpx was built without Gloo);
#  4. `sbatch --wait` of a script that runs the same `srun` line, and `ddpx train --nproc-per-node 2` in the batch
#     script itself (one process there, not rank 0 of the allocation): both save weights identical to run 3's,
#     byte for byte (same seed, same ranks, same all-reduce);
#  5. `srun -n 1 ddpx bench` runs its rows (a 2-rank one included); `srun -n 2 ddpx bench` is refused, naming Slurm.
# Exit 77 (skipped) without root or Slurm; every wait is bounded; the cluster is stopped on every exit.
set -euo pipefail
DDPX=$(realpath "$1") DRIVER=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/../support/slurm_cluster.sh
export PATH=$PATH:/usr/sbin
WORK=$(mktemp -d /tmp/ddpx_slurm_jobs.XXXXXX)
cleanup() { bash "$CLUSTER" down "$WORK/cluster"; rm -rf "$WORK"; }
trap cleanup EXIT
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK
set +e
setup=$(bash "$CLUSTER" up "$WORK/cluster")
status=$?
set -e
[[ $status -eq 0 ]] || exit "$status"
eval "$setup"
cd "$WORK"

echo "== 1. srun -n 2: exchange over the TCP rendezvous at the derived address and port"
bash "$HERE/check_exchange.sh" 2 "ddpx's TCP rendezvous" -- srun -n 2 "$DRIVER"
echo "== 2. srun -n 2 --mpi=pmix: exchange over MPI"
bash "$HERE/check_exchange.sh" 2 MPI -- srun -n 2 --mpi=pmix "$DRIVER"
if srun --mpi=list 2>&1 | grep -q pmi2; then
  echo "== 2b. srun -n 2 --mpi=pmi2: exchange over the TCP rendezvous (Open MPI cannot join PMI-2)"
  bash "$HERE/check_exchange.sh" 2 "ddpx's TCP rendezvous" -- srun -n 2 --mpi=pmi2 "$DRIVER"
fi

TRAIN="--device cpu --model vit_tiny_test --data learnable --batch 4 --steps 6 --log-every 3"
check_run() {  # LOG: 2 MPI ranks trained all steps
  grep -q "DDP: mpi, 2 rank(s)" "$1" || { cat "$1"; echo "slurm_jobs: $1 shows no 2-rank MPI run"; exit 1; }
  grep -qE "^(\[rank 0\] )?summary: 6 steps .* loss 2\.[0-9]+ -> [0-9.]+" "$1" ||
    { cat "$1"; echo "slurm_jobs: $1 has no summary line"; exit 1; }
}
echo "== 3. srun -n 2 --mpi=pmix ddpx train"
timeout -k 5 300 srun -n 2 --mpi=pmix "$DDPX" train $TRAIN --save "$WORK/srun.safetensors" >srun.log 2>&1 ||
  { cat srun.log; echo "slurm_jobs: srun train failed"; exit 1; }
cat srun.log
check_run srun.log

echo "== 3b. srun -n 2 ddpx train (Gloo at the derived address and port)"
if timeout -k 5 300 srun -n 2 "$DDPX" train $TRAIN --save "$WORK/srun-gloo.safetensors" >srun-gloo.log 2>&1; then
  grep -q "DDP: gloo, 2 rank(s)" srun-gloo.log || { cat srun-gloo.log; echo "slurm_jobs: not a 2-rank Gloo run"; exit 1; }
  cmp "$WORK/srun.safetensors" "$WORK/srun-gloo.safetensors" ||
    { echo "slurm_jobs: the Gloo run's weights differ from the MPI run's"; exit 1; }
elif grep -q "Gloo" srun-gloo.log && ! grep -q "DDP: gloo" srun-gloo.log && grep -qi "without gloo\|built without" srun-gloo.log; then
  echo "slurm_jobs: this ddpx has no Gloo; plain srun on the CPU skipped"
else
  cat srun-gloo.log; echo "slurm_jobs: plain srun train failed"; exit 1
fi

echo "== 4. sbatch --wait"
cat >"$WORK/train.sbatch" <<SCRIPT
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --time=10
#SBATCH --output=$WORK/sbatch.log
srun --mpi=pmix "$DDPX" train $TRAIN --save "$WORK/sbatch-srun.safetensors" || exit 1
"$DDPX" train $TRAIN --nproc-per-node 2 --save "$WORK/sbatch-local.safetensors"
SCRIPT
timeout -k 5 400 sbatch --wait "$WORK/train.sbatch" || { cat "$WORK/sbatch.log" || true; echo "slurm_jobs: sbatch failed"; exit 1; }
cat "$WORK/sbatch.log"
for weights in sbatch-srun sbatch-local; do
  cmp "$WORK/srun.safetensors" "$WORK/$weights.safetensors" ||
    { echo "slurm_jobs: $weights.safetensors differs from srun.safetensors"; exit 1; }
done

echo "== 5. srun -n 1 ddpx bench (runs), srun -n 2 ddpx bench (refused)"
BENCH="bench --device cpu --models vit_tiny_test --gpus 1,2 --steps 4 --warmup 1"
timeout -k 5 300 srun -n 1 -c 2 "$DDPX" $BENCH --out "$WORK/bench" >bench.log 2>&1 ||
  { cat bench.log; echo "slurm_jobs: srun -n 1 ddpx bench failed"; exit 1; }
grep -q "hook allreduce, bucket 25 MB | 2 | fp32" "$WORK/bench/bench.md" ||
  { cat bench.log; echo "slurm_jobs: the 2-rank bench row is missing"; exit 1; }
if timeout -k 5 120 srun -n 2 "$DDPX" $BENCH --out "$WORK/bench2" >bench2.log 2>&1; then
  cat bench2.log; echo "slurm_jobs: srun -n 2 ddpx bench was not refused"; exit 1
fi
grep -q "ddpx bench runs as one process.*started by Slurm" bench2.log ||
  { cat bench2.log; echo "slurm_jobs: the refusal does not name Slurm"; exit 1; }
echo "slurm_jobs: all Slurm launches trained and agree"
