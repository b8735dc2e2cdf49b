#!/usr/bin/env bash
# A real one-node Slurm on this machine, from Debian's packages (slurmctld slurmd slurm-client
# munge), for trying scripts/slurm/train.sbatch as a cluster would run it:
#   scripts/slurm/local_slurm.sh COMMAND [ARGS...]
# starts munged, slurmctld and slurmd (as root, everything under a temporary directory, free ports,
# Slurm's defaults otherwise: MpiDefault=none), waits until the node is idle, runs COMMAND with
# SLURM_CONF pointing at the cluster, then stops the daemons by PID and removes the directory.
# Exits with COMMAND's status, or 77 (nothing run) when it cannot: not root, or a package missing.
# No cgroups are needed (proctrack/linuxproc, task/none). The node has this machine's CPUs; the
# partition oversubscribes (OverSubscribe=FORCE) so more tasks than cores can run.
set -euo pipefail

SKIP=77
READY_TIMEOUT_S=${LOCAL_SLURM_READY_TIMEOUT_S:-60}

(($#)) || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
  echo "local_slurm: needs root (Slurm daemons run as SlurmUser=root here)" >&2
  exit $SKIP
fi
for tool in munged slurmctld slurmd sbatch sinfo scontrol; do
  if ! command -v "$tool" >/dev/null && [[ ! -x /usr/sbin/$tool ]]; then
    echo "local_slurm: $tool not found (apt-get install slurmctld slurmd slurm-client munge)" >&2
    exit $SKIP
  fi
done
export PATH=$PATH:/usr/sbin

dir=$(mktemp -d /tmp/local-slurm.XXXXXX)
pids=()

stop() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  # Jobs still running end with slurmd; give the daemons a moment, then make sure.
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -n ${LOCAL_SLURM_KEEP:-} ]]; then
    echo "local_slurm: kept $dir (logs: slurmctld.log slurmd.log)" >&2
  else
    rm -rf "$dir"
  fi
}
trap stop EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_munge() {
  mungekey --create --keyfile="$dir/munge.key"
  chmod 0400 "$dir/munge.key"
  munged --foreground --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" >"$dir/munged.stderr" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do [[ -S $dir/munge.socket ]] && return 0; sleep 0.1; done
  echo "local_slurm: munged did not start:" >&2
  cat "$dir/munged.log" >&2 || true
  exit 1
}

write_conf() {
  local host cpus
  host=$(hostname -s)
  cpus=$(nproc)
  mkdir -p "$dir/state" "$dir/spool/$host"
  cat >"$dir/slurm.conf" <<EOF
ClusterName=dynamixtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: how long slurmd refuses a revoked job credential, and so how long a requeued job
# waits before it starts again (default 120 s); 5 s keeps requeue tests short.
AuthInfo=socket=$dir/munge.socket,cred_expire=5
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# The main loop and backfill each second (defaults 60 s and 30 s): a requeued job starts as soon
# as its hold ends instead of at the next pass.
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=600
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

wait_until_idle() {
  local state=""
  for _ in $(seq $((READY_TIMEOUT_S * 2))); do
    state=$(sinfo --noheader --format=%T 2>/dev/null || true)
    [[ $state == idle* ]] && return 0
    sleep 0.5
  done
  echo "local_slurm: the node is not idle after ${READY_TIMEOUT_S}s (state: ${state:-none})" >&2
  tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  exit 1
}

start_munge
write_conf
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.stderr" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.stderr" 2>&1 &
pids+=($!)
wait_until_idle
echo "local_slurm: node $(hostname -s) idle (SLURM_CONF=$SLURM_CONF)"
set +e
"$@"
status=$?
set -e
exit $status
