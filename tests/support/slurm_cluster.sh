#!/usr/bin/env bash
# A real one-node Slurm cluster for tests: munged, slurmctld and slurmd of Debian's slurm-wlm and munge, all
# with files under one folder of the test's own, so nothing of the machine's own Slurm/munge set-up is used or
# changed.
# Guarantees:
#  - `up DIR` writes DIR/slurm.conf (this host's short name as the only node, or localhost where that name does
#    not resolve, 4 CPUs, one partition `ddpx`,
#    SlurmUser root, loopback ports derived from DIR so concurrent tests differ), a munge key, socket, pid and log
#    files, state and spool folders in DIR; starts munged, slurmctld and slurmd; waits (bounded, 60 s) until the
#    node answers `sinfo` as idle. Prints the line `export SLURM_CONF=DIR/slurm.conf` for the caller to eval.
#    On any failure it stops what it started, prints the daemons' logs and exits non-zero.
#  - `down DIR` stops the daemons by their pid files (SIGTERM, then SIGKILL after 10 s), idempotent, never fails.
#  - Needs root and the commands munged, slurmctld, slurmd, srun; exits 77 (the tests' skip code) otherwise.
set -euo pipefail

need() {
  [[ $(id -u) -eq 0 ]] || { echo "slurm_cluster: needs root (SlurmUser root)" >&2; exit 77; }
  local c
  for c in munged slurmctld slurmd srun sbatch sinfo; do
    command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$c" >/dev/null 2>&1 ||
      { echo "slurm_cluster: '$c' not found (apt-get install slurm-wlm munge)" >&2; exit 77; }
  done
}

stop_pid_file() {  # SIGTERM, up to 10 s, then SIGKILL
  local file=$1 pid i
  [[ -s $file ]] || return 0
  pid=$(cat "$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || { rm -f "$file"; return 0; }
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$file"
}

down() {
  local dir=$1
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  stop_pid_file "$dir/munged.pid"
}

up() {
  local dir
  dir=$(realpath -m "$1")
  need
  export PATH=$PATH:/usr/sbin
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir/munge"
  local host node base
  host=$(hostname -s)
  # The node's name is what jobs see in SLURM_JOB_NODELIST (and ddpx resolves as the master address): this host's
  # name where it resolves, else localhost (slurmd -N takes that name).
  node=$host
  getent hosts "$host" >/dev/null 2>&1 || node=localhost
  base=$((20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 5000 * 2))
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  cat >"$dir/slurm.conf" <<EOF
ClusterName=ddpxtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmctldPort=$base
SlurmdPort=$((base + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=ddpx Nodes=$node Default=YES MaxTime=30 State=UP OverSubscribe=YES
EOF
  trap 'echo "slurm_cluster: start failed; logs:" >&2; tail -n 20 "$dir"/*.log >&2 || true; down "$dir"' ERR
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF" -N "$node"
  local i state=""
  for ((i = 0; i < 120; i++)); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
    [[ $state == idle ]] && break
    sleep 0.5
  done
  if [[ $state != idle ]]; then
    echo "slurm_cluster: the node is '$state', not idle, after 60 s" >&2
    false
  fi
  trap - ERR
  echo "export SLURM_CONF=$SLURM_CONF"
}

case ${1:-} in
  up) up "$2" ;;
  down) down "$2" ;;
  *) echo "usage: $0 up DIR | down DIR" >&2; exit 2 ;;
esac
