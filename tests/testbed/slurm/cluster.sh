#!/usr/bin/env bash
# Single-host Slurm 22.05 test cluster for hpctui's live tests (Debian's slurm-wlm), no systemd.
#   usage: cluster.sh start|stop|reset|status|env
# Adapted from the measured recipe in the project docs (Slurm test bed): munged + slurmctld +
# 6 slurmd ("multiple slurmd" mode: gpu01-04 with fake H100/A100 GRES, cpu01-02; one port per node
# on 127.0.0.1, each in its own UTS namespace) + slurmrestd on a unix socket (rest_auth/local)
# + a 2nd slurmrestd on 127.0.0.1 with JWT auth (if slurm-wlm-jwt-plugin is installed).
# No accounting (slurmdbd/MariaDB): the tests do not need QoS.
# Every daemon runs in the foreground under setsid; its pid is kept in $RUN/*.fg.pid (or
# munged.pid) and it is stopped by that pid only - never by name. Loopback only.
# Env: SLURMLAB (state dir, default $TMPDIR/hpctui-slurmlab), SLURMLAB_PORT_OFFSET (added to
# every port; lets two beds coexist), SLURMLAB_SLURMD_TIMEOUT (10).
set -euo pipefail
LAB=${SLURMLAB:-${TMPDIR:-/tmp}/hpctui-slurmlab}
ETC=$LAB/etc RUN=$LAB/run LOG=$LAB/log
export SLURM_CONF=$ETC/slurm.conf
OFF=${SLURMLAB_PORT_OFFSET:-0}
CTLD_PORT=$((16817 + OFF)) SLURMD_PORT=$((16818 + OFF))
GPU12_PORTS="$((17001 + OFF))-$((17002 + OFF))" GPU34_PORTS="$((17003 + OFF))-$((17004 + OFF))"
CPU_PORTS="$((17011 + OFF))-$((17012 + OFF))"
REST_PORT=$((6820 + OFF))
SLURMD_TIMEOUT=${SLURMLAB_SLURMD_TIMEOUT:-10}
NODES="gpu01 gpu02 gpu03 gpu04 cpu01 cpu02"
PLUGDIR=/usr/lib/x86_64-linux-gnu/slurm-wlm
HAVE_JWT=0; [ -e $PLUGDIR/auth_jwt.so ] && HAVE_JWT=1
OPENAPI=openapi/v0.0.38,openapi/v0.0.37,openapi/v0.0.36

log() { printf '[cluster %s] %s\n' "$(date +%T.%3N)" "$*" >&2; }
now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
since() { dt "$1" "$(now)"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

write_config() {
  mkdir -p "$LAB"; chmod 0755 "$LAB"   # slurmrestd (JWT) runs as user slurm and must read slurm.conf
  mkdir -p "$ETC" "$RUN" "$LOG" "$LAB/spool" "$LAB/dev" "$LAB/jobs"
  chmod 1777 "$LAB/jobs"
  # fresh cluster: empty StateSaveLocation => job ids restart at 1, no old jobs
  rm -rf "$LAB/state"; rm -f "$LOG"/*.log; mkdir -p "$LAB/state"
  # gres/gpu (22.05) drops GPUs without File= and complains about regular files: char devices
  for i in 0 1 2 3 4 5 6 7; do
    [ -c "$LAB/dev/nvidia$i" ] || { rm -f "$LAB/dev/nvidia$i"; mknod "$LAB/dev/nvidia$i" c 195 "$i"; }
  done
  local jwt=""
  if [ "$HAVE_JWT" = 1 ]; then
    [ -s "$ETC/jwt_hs256.key" ] || dd if=/dev/urandom of="$ETC/jwt_hs256.key" bs=32 count=1 status=none
    chmod 0600 "$ETC/jwt_hs256.key"
    jwt="AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$ETC/jwt_hs256.key"
  fi
  cat > "$ETC/slurm.conf" <<CONF
ClusterName=hpctuilab
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
$jwt
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/slurmd.%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.%n.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# "scontrol reboot" needs one; tests only ever leave ASAP reboots pending and cancel them
RebootProgram=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SlurmdParameters=config_overrides
ReturnToService=1
MpiDefault=none
GresTypes=gpu
PriorityType=priority/basic
SlurmdTimeout=$SLURMD_TIMEOUT
SlurmctldTimeout=60
InactiveLimit=0
MinJobAge=300
KillWait=2
SchedulerParameters=batch_sched_delay=0,bf_interval=5,sched_min_interval=0
Waittime=0
NodeName=gpu[01-02] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$GPU12_PORTS] CPUs=64 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:h100:8 Feature=h100,ib
NodeName=gpu[03-04] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$GPU34_PORTS] CPUs=64 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:a100:4 Feature=a100
NodeName=cpu[01-02] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$CPU_PORTS] CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=128000 Feature=epyc
PartitionName=cpu Nodes=cpu[01-02] Default=YES MaxTime=INFINITE DefaultTime=01:00:00 State=UP
PartitionName=gpu Nodes=gpu[01-04] MaxTime=2-00:00:00 DefaultTime=01:00:00 State=UP
PartitionName=debug Nodes=ALL MaxTime=00:30:00 DefaultTime=00:10:00 State=UP
CONF
  cat > "$ETC/gres.conf" <<CONF
AutoDetect=off
NodeName=gpu[01-02] Name=gpu Type=h100 File=$LAB/dev/nvidia[0-7]
NodeName=gpu[03-04] Name=gpu Type=a100 File=$LAB/dev/nvidia[0-3]
CONF
}

start_munge() {
  if [ ! -s /etc/munge/munge.key ]; then mkdir -p /etc/munge; mungekey --create --keyfile=/etc/munge/munge.key; fi
  chown munge:munge /etc/munge /etc/munge/munge.key
  chmod 0700 /etc/munge; chmod 0600 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
  if alive "$RUN/munged.pid"; then return; fi
  if munge -n </dev/null >/dev/null 2>&1; then log "using a munged not started by us"; return; fi
  setsid setpriv --reuid=munge --regid=munge --init-groups -- /usr/sbin/munged -F \
      >"$LOG/munged.out" 2>&1 </dev/null &
  echo $! > "$RUN/munged.pid"
  for _ in $(seq 100); do munge -n </dev/null >/dev/null 2>&1 && return; sleep 0.1; done
  log "munged did not come up"; cat "$LOG/munged.out" >&2; return 1
}

start_ctld() {  # $1=1: fresh cluster (-c: ignore saved state); 0: restart, keep jobs and node states
  if alive "$RUN/slurmctld.fg.pid"; then return; fi
  local clean=""; [ "${1:-1}" = 1 ] && clean="-c"
  setsid /usr/sbin/slurmctld -D $clean -f "$SLURM_CONF" >"$LOG/slurmctld.out" 2>&1 </dev/null &
  echo $! > "$RUN/slurmctld.fg.pid"
  for _ in $(seq 150); do scontrol ping 2>/dev/null | grep -q 'is UP' && return; sleep 0.1; done
  log "slurmctld did not come up"; tail -20 "$LOG/slurmctld.log" >&2; return 1
}

start_slurmds() {
  local n want up
  for n in $NODES; do
    alive "$RUN/slurmd.$n.fg.pid" && continue
    mkdir -p "$LAB/spool/slurmd.$n"
    setsid unshare --uts sh -c "hostname $n && exec /usr/sbin/slurmd -D -N $n -f $SLURM_CONF" \
        >"$LOG/slurmd.$n.out" 2>&1 </dev/null &
    echo $! > "$RUN/slurmd.$n.fg.pid"
  done
  want=$(echo $NODES | wc -w)
  for _ in $(seq 300); do
    up=$(sinfo -h -N -r -t idle,alloc,mix -o '%N' 2>/dev/null | sort -u | wc -l)
    [ "$up" -ge "$want" ] && return
    sleep 0.1
  done
  log "not all nodes came up:"; sinfo -N -o '%N %T %E' >&2; return 1
}

start_restd() {
  # Two processes: in 22.05 one slurmrestd cannot serve rest_auth/local and JWT at once.
  if ! alive "$RUN/slurmrestd.fg.pid"; then
    rm -f "$RUN/slurmrestd.sock"
    SLURMRESTD_SECURITY=disable_user_check setsid /usr/sbin/slurmrestd -f "$SLURM_CONF" \
        -a rest_auth/local -s "$OPENAPI" "unix:$RUN/slurmrestd.sock" >"$LOG/slurmrestd.log" 2>&1 </dev/null &
    echo $! > "$RUN/slurmrestd.fg.pid"
  fi
  if [ "$HAVE_JWT" = 1 ] && ! alive "$RUN/slurmrestd-jwt.fg.pid"; then
    SLURM_JWT=daemon setsid /usr/sbin/slurmrestd -f "$SLURM_CONF" -u slurm -g slurm \
        -a rest_auth/jwt -s "$OPENAPI" "127.0.0.1:$REST_PORT" >"$LOG/slurmrestd-jwt.log" 2>&1 </dev/null &
    echo $! > "$RUN/slurmrestd-jwt.fg.pid"
  fi
  for _ in $(seq 100); do
    if curl -sf --unix-socket "$RUN/slurmrestd.sock" http://localhost/slurm/v0.0.38/ping >/dev/null 2>&1; then
      [ "$HAVE_JWT" = 1 ] || return 0   # the jwt instance answers 401 without a token once it listens
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$REST_PORT/slurm/v0.0.38/ping")" = 401 ] && return 0
    fi
    sleep 0.1
  done
  log "slurmrestd did not come up"; cat "$LOG"/slurmrestd*.log >&2; return 1
}

stop_pidfile() {  # stop_pidfile FILE [timeout_s]: TERM, wait, then KILL - by pid only
  local f=$1 t=${2:-15} pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((t*20))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then log "SIGKILL $pid ($f)"; kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$f"
}

cancel_all() {  # slurmstepd detaches (own session, ppid 1): always cancel jobs before stopping slurmd
  local ids
  ids=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
  [ -n "$ids" ] && { scancel --quiet $ids 2>/dev/null || true; }
  for _ in $(seq 200); do [ -z "$(squeue -h -t PD,R,CG,S,CF -o %i 2>/dev/null)" ] && return 0; sleep 0.1; done
  return 1
}

case "${1:-}" in
  start)
    T0=$(now)
    FRESH=1; alive "$RUN/slurmctld.fg.pid" && FRESH=0
    # a restart of a killed slurmctld keeps the config and the saved state (jobs, drained nodes)
    [ $FRESH = 1 ] && [ -f "$RUN/keep-state" ] && [ -s "$SLURM_CONF" ] && FRESH=0
    if [ $FRESH = 1 ]; then write_config; else log "keeping $SLURM_CONF and saved state"; fi
    start_munge;   T1=$(now)
    start_ctld $FRESH; T2=$(now)
    touch "$RUN/keep-state"
    start_slurmds; T3=$(now)
    start_restd;   T4=$(now)
    log "up: munge $(dt "$T0" "$T1")s, slurmctld $(dt "$T1" "$T2")s, slurmd $(dt "$T2" "$T3")s, slurmrestd $(dt "$T3" "$T4")s, total $(since "$T0")s"
    ;;
  stop)
    T0=$(now)
    alive "$RUN/slurmctld.fg.pid" && { cancel_all || log "jobs still running at stop"; }
    T1=$(now)
    for f in "$RUN"/slurmrestd*.fg.pid "$RUN"/slurmd.*.fg.pid "$RUN/slurmctld.fg.pid"; do
      [ -e "$f" ] && stop_pidfile "$f" &
    done
    wait
    stop_pidfile "$RUN/munged.pid"
    rm -f "$RUN/slurmrestd.sock" "$RUN/keep-state"
    log "jobs cancelled in $(dt "$T0" "$T1")s, down in $(since "$T0")s"
    ;;
  reset)  # between tests: cancel every job, RESUME every node, cancel reboots, wait until all are idle
    scontrol cancel_reboot ALL >/dev/null 2>&1 || true   # first: a job ending would trigger it
    cancel_all || true
    scontrol update NodeName=ALL State=RESUME >/dev/null 2>&1 || true   # rc=1 when some were not drained
    want=$(echo $NODES | wc -w)
    for _ in $(seq 200); do
      [ "$(sinfo -h -N -r -t idle -o %N 2>/dev/null | sort -u | wc -l)" -ge "$want" ] && exit 0; sleep 0.1
    done
    log "nodes not idle after reset:"; sinfo -N -o '%N %T %E' >&2; exit 1
    ;;
  status)
    for f in "$RUN"/*.pid; do [ -e "$f" ] || continue; printf '%-24s %-7s %s\n' "$(basename "$f")" "$(cat "$f")" "$(alive "$f" && echo alive || echo dead)"; done
    scontrol ping || true; sinfo || true
    ;;
  env)
    echo "export SLURMLAB=$LAB"
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "export SLURMRESTD_SOCKET=$RUN/slurmrestd.sock"
    if [ "$HAVE_JWT" = 1 ]; then echo "export SLURMRESTD_URL=http://127.0.0.1:$REST_PORT"; fi
    ;;
  *) echo "usage: $0 start|stop|reset|status|env" >&2; exit 2 ;;
esac
