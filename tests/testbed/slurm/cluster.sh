#!/usr/bin/env bash
# Single-host Slurm test cluster (22.05 on the host; 24.11 in a chroot, see ../slurm2411) for hpctui's live tests (Debian's slurm-wlm), no systemd.
#   usage: cluster.sh start|stop|reset|status|env
# Adapted from the measured recipe in the project docs (Slurm test bed): munged + slurmctld +
# 6 slurmd ("multiple slurmd" mode: gpu01-04 with fake H100/A100 GRES, cpu01-02; one port per node
# on 127.0.0.1, each in its own UTS namespace) + slurmrestd on a unix socket (rest_auth/local)
# + a 2nd slurmrestd on 127.0.0.1 with JWT auth (if slurm-wlm-jwt-plugin is installed)
# [+ accounting: a private MariaDB (127.0.0.1, data under $LAB/mysql) + slurmdbd, seeded with
# accounts ml/physics, users root/alice/bob with different fair-share, QoS normal/gpu-limited -
# when slurmdbd and mariadb-server are installed].
# Every daemon runs in the foreground under setsid; its pid is kept in $RUN/*.fg.pid (or
# munged.pid) and it is stopped by that pid only - never by name. Loopback only.
# Env: SLURMLAB (state dir, default $TMPDIR/hpctui-slurmlab), SLURMLAB_PORT_OFFSET (added to
# every port; lets two beds coexist), SLURMLAB_SLURMD_TIMEOUT (10),
# SLURMLAB_ACCOUNTING (auto|1|0; auto = on when $SBIN/slurmdbd and /usr/sbin/mariadbd exist).
# A Slurm built elsewhere (../slurm2511: 25.11 from source) sets SLURMLAB_SBIN (its daemons; its
# client tools first on PATH), SLURMLAB_PLUGDIR (also written as PluginDir=), SLURMLAB_REST_PING_V, SLURMLAB_RESTD_USER (the
# unix-socket slurmrestd runs as that user, for releases that refuse root; its socket is then
# $RUN/rest/slurmrestd.sock in a directory it owns) and SLURMLAB_CGROUP_CONF (cgroup.conf's text);
# SLURMLAB_EXTRA_CONF: lines appended to slurm.conf (bench/bench_slurm_big_queue.py: MaxJobCount, MaxArraySize).
set -euo pipefail
LAB=${SLURMLAB:-${TMPDIR:-/tmp}/hpctui-slurmlab}
ETC=$LAB/etc RUN=$LAB/run LOG=$LAB/log
export SLURM_CONF=$ETC/slurm.conf
OFF=${SLURMLAB_PORT_OFFSET:-0}
CTLD_PORT=$((16817 + OFF)) SLURMD_PORT=$((16818 + OFF))
GPU12_PORTS="$((17001 + OFF))-$((17002 + OFF))" GPU34_PORTS="$((17003 + OFF))-$((17004 + OFF))"
CPU_PORTS="$((17011 + OFF))-$((17012 + OFF))"
REST_PORT=$((6820 + OFF))
DBD_PORT=$((16819 + OFF)) DB_PORT=$((13306 + OFF))
SLURMD_TIMEOUT=${SLURMLAB_SLURMD_TIMEOUT:-10}
NODES="gpu01 gpu02 gpu03 gpu04 cpu01 cpu02"
SBIN=${SLURMLAB_SBIN:-/usr/sbin}
PLUGDIR=${SLURMLAB_PLUGDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
RESTD_USER=${SLURMLAB_RESTD_USER:-}
REST_SOCK=$RUN/slurmrestd.sock; [ -n "$RESTD_USER" ] && REST_SOCK=$RUN/rest/slurmrestd.sock
HAVE_JWT=0; [ -e $PLUGDIR/auth_jwt.so ] && HAVE_JWT=1
# slurmrestd plugins and the version its readiness ping asks for: 22.05 has one plugin per version,
# 23.02+ one per daemon serving every data_parser built (24.11: v0.0.40-42; slurmdbd only with accounting)
if [ -e $PLUGDIR/openapi_slurmctld.so ]; then
  OPENAPI=openapi/slurmctld OPENAPI_DB=openapi/slurmdbd PING_V=v0.0.40
else
  OPENAPI=openapi/v0.0.38,openapi/v0.0.37,openapi/v0.0.36 OPENAPI_DB=openapi/dbv0.0.38 PING_V=v0.0.38
fi
PING_V=${SLURMLAB_REST_PING_V:-$PING_V}
ACCT=${SLURMLAB_ACCOUNTING:-auto}
if [ "$ACCT" = auto ]; then ACCT=0; [ -x "$SBIN/slurmdbd" ] && [ -x /usr/sbin/mariadbd ] && ACCT=1; fi
DBRUN=$LAB/dbrun   # owned by mysql: socket, pid, error log (mariadbd cannot write root-owned dirs)
MYSQL="mariadb --no-defaults -S $DBRUN/mysqld.sock -uroot"

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
  local acct prio
  if [ "$ACCT" = 1 ]; then
    # Enforced, but only the non-default QoS (gpu-limited) has limits and root's default account
    # (ml) / QoS (normal) are unlimited: plain jobs run exactly as without accounting.
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
    prio="PriorityType=priority/multifactor
PriorityWeightQOS=10000
PriorityWeightAge=100
PriorityWeightFairshare=1000"
    cat > "$ETC/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=slurmpw
$jwt
CONF
    chmod 0600 "$ETC/slurmdbd.conf"   # slurmdbd refuses a config readable by others
  else
    acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
    prio="PriorityType=priority/basic"
    rm -f "$ETC/slurmdbd.conf"
  fi
  # topology/tree (issue 27): two leaf switches under one spine, read back by "scontrol show topology"
  local topo=""
  if [ -e "$PLUGDIR/topology_tree.so" ]; then
    topo="TopologyPlugin=topology/tree"
    cat > "$ETC/topology.conf" <<CONF
SwitchName=leaf1 Nodes=gpu[01-02] LinkSpeed=400
SwitchName=leaf2 Nodes=gpu[03-04],cpu[01-02] LinkSpeed=200
SwitchName=spine1 Switches=leaf[1-2]
CONF
  else
    rm -f "$ETC/topology.conf"
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
$([ -n "${SLURMLAB_PLUGDIR:-}" ] && echo "PluginDir=$PLUGDIR")
SlurmdLogFile=$LOG/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# "scontrol reboot" needs one; tests only ever leave ASAP reboots pending and cancel them
RebootProgram=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$acct
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SlurmdParameters=config_overrides
ReturnToService=1
MpiDefault=none
GresTypes=gpu
$prio
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
$topo
${SLURMLAB_EXTRA_CONF:-}
CONF
  if [ -n "${SLURMLAB_CGROUP_CONF:-}" ]; then printf '%s\n' "$SLURMLAB_CGROUP_CONF" > "$ETC/cgroup.conf"; fi
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

start_db() {  # $1=1: fresh cluster (empty accounting db). Private MariaDB on 127.0.0.1:$DB_PORT
  if ! alive "$RUN/mariadbd.fg.pid"; then
    install -d -o mysql -g mysql -m 0755 "$DBRUN"
    if [ ! -d "$LAB/mysql/mysql" ]; then
      mariadb-install-db --no-defaults --user=mysql --datadir="$LAB/mysql" \
          --auth-root-authentication-method=socket --skip-test-db >"$LOG/mariadb-install.log" 2>&1 \
        || { log "mariadb-install-db failed"; tail -20 "$LOG/mariadb-install.log" >&2; return 1; }
    fi
    # --user=mysql: mariadbd drops root itself (exec, no fork), so $! is its own pid.
    # Throwaway data: no doublewrite, lazy log flush, fast shutdown (~2 s less at stop).
    setsid /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$LAB/mysql" \
        --socket="$DBRUN/mysqld.sock" --bind-address=127.0.0.1 --port="$DB_PORT" \
        --pid-file="$DBRUN/mariadbd.pid" --log-error="$DBRUN/mariadb.err" \
        --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=0 \
        --innodb-doublewrite=0 --innodb-fast-shutdown=2 --skip-log-bin --performance-schema=OFF \
        >"$LOG/mariadb.out" 2>&1 </dev/null &
    echo $! > "$RUN/mariadbd.fg.pid"
    local ok=0
    for _ in $(seq 300); do $MYSQL -e 'select 1' >/dev/null 2>&1 && { ok=1; break; }; sleep 0.1; done
    [ $ok = 1 ] || { log "mariadbd did not come up"; tail -20 "$DBRUN/mariadb.err" >&2; return 1; }
  fi
  local fresh=""; [ "${1:-1}" = 1 ] && fresh="DROP DATABASE IF EXISTS slurm_acct_db;"
  $MYSQL -e "$fresh
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
}

start_dbd() {
  alive "$RUN/slurmdbd.fg.pid" && return
  # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF
  setsid "$SBIN/slurmdbd" -D >"$LOG/slurmdbd.out" 2>&1 </dev/null &
  echo $! > "$RUN/slurmdbd.fg.pid"
  for _ in $(seq 200); do sacctmgr -n list cluster >/dev/null 2>&1 && return; sleep 0.1; done
  log "slurmdbd did not come up"; tail -20 "$LOG/slurmdbd.log" >&2; return 1
}

# Accounts ml (Fairshare 60) and physics (40); root (10) and alice (30) in both, bob (15) in
# physics only. QoS normal (no limits) and gpu-limited (limits -> QOSMax* pending reasons).
# Two sacctmgr processes (each costs ~0.4 s): associations before slurmctld starts (it loads them
# at start and AccountingStorageEnforce=associations needs root's), the QoS once slurmctld has
# registered, because only then does slurmdbd know the gres/gpu TRES that MaxTRESPerUser names.
seed_accounts() {
  for u in alice bob; do id "$u" >/dev/null 2>&1 || useradd -M -d /nonexistent -s /usr/sbin/nologin "$u"; done
  sacctmgr -i >"$LOG/sacctmgr-seed.log" 2>&1 <<SEED
add cluster hpctuilab
add account ml Description="ML team" Organization=lab Fairshare=60
add account physics Description="Physics" Organization=lab Fairshare=40
add user root Account=ml,physics Fairshare=10 DefaultAccount=ml
add user alice Account=ml,physics Fairshare=30 DefaultAccount=ml MaxJobs=10
add user bob Account=physics Fairshare=15 DefaultAccount=physics MaxJobs=5 MaxSubmitJobs=20
SEED
  # sacctmgr -i exits 0 after failed commands: check that the last association is there
  sacctmgr -n -P show assoc where user=bob format=account | grep -qx physics \
    || { log "seeding accounts failed:"; cat "$LOG/sacctmgr-seed.log" >&2; return 1; }
}

seed_qos() {
  local tres=""
  for _ in $(seq 100); do   # slurmctld adds gres/gpu to the TRES table when it registers
    tres=$(sacctmgr -n -P show tres format=type,name 2>/dev/null)
    case "$tres" in *"gres|gpu"*) break ;; esac
    sleep 0.1
  done
  sacctmgr -i >>"$LOG/sacctmgr-seed.log" 2>&1 <<SEED
modify qos normal set Priority=100
add qos gpu-limited Priority=50 MaxJobsPerUser=2 MaxSubmitJobsPerUser=10 MaxTRESPerUser=gres/gpu=4 MaxWall=12:00:00
modify user where name=root,alice set QOS=normal,gpu-limited DefaultQOS=normal
SEED
  # (the user modification fails unless the QoS was added; the live tests check its limits)
  sacctmgr -n -P show assoc where user=alice format=qos | grep -q gpu-limited \
    || { log "seeding QoS failed:"; cat "$LOG/sacctmgr-seed.log" >&2; return 1; }
}

start_ctld() {  # $1=1: fresh cluster (-c: ignore saved state); 0: restart, keep jobs and node states
  if alive "$RUN/slurmctld.fg.pid"; then return; fi
  local clean=""; [ "${1:-1}" = 1 ] && clean="-c"
  setsid "$SBIN/slurmctld" -D $clean -f "$SLURM_CONF" >"$LOG/slurmctld.out" 2>&1 </dev/null &
  echo $! > "$RUN/slurmctld.fg.pid"
  for _ in $(seq 150); do scontrol ping 2>/dev/null | grep -q 'is UP' && return; sleep 0.1; done
  log "slurmctld did not come up"; tail -20 "$LOG/slurmctld.log" >&2; return 1
}

start_slurmds() {
  local n want up
  for n in $NODES; do
    alive "$RUN/slurmd.$n.fg.pid" && continue
    mkdir -p "$LAB/spool/slurmd.$n"
    setsid unshare --uts sh -c "hostname $n && exec $SBIN/slurmd -D -N $n -f $SLURM_CONF" \
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
  local OPENAPI=$OPENAPI
  [ "$ACCT" = 1 ] && OPENAPI=$OPENAPI,$OPENAPI_DB
  # Two processes: in 22.05 one slurmrestd cannot serve rest_auth/local and JWT at once.
  if ! alive "$RUN/slurmrestd.fg.pid"; then
    rm -f "$REST_SOCK"
    if [ -n "$RESTD_USER" ]; then  # 25.11 refuses root and disable_user_check (release builds)
      install -d -o "$RESTD_USER" -g "$RESTD_USER" -m 0755 "$RUN/rest"
      setsid "$SBIN/slurmrestd" -f "$SLURM_CONF" -u "$RESTD_USER" -g "$RESTD_USER" \
          -a rest_auth/local -s "$OPENAPI" "unix:$REST_SOCK" >"$LOG/slurmrestd.log" 2>&1 </dev/null &
    else
      SLURMRESTD_SECURITY=disable_user_check setsid "$SBIN/slurmrestd" -f "$SLURM_CONF" \
          -a rest_auth/local -s "$OPENAPI" "unix:$REST_SOCK" >"$LOG/slurmrestd.log" 2>&1 </dev/null &
    fi
    echo $! > "$RUN/slurmrestd.fg.pid"
  fi
  if [ "$HAVE_JWT" = 1 ] && ! alive "$RUN/slurmrestd-jwt.fg.pid"; then
    SLURM_JWT=daemon setsid "$SBIN/slurmrestd" -f "$SLURM_CONF" -u slurm -g slurm \
        -a rest_auth/jwt -s "$OPENAPI" "127.0.0.1:$REST_PORT" >"$LOG/slurmrestd-jwt.log" 2>&1 </dev/null &
    echo $! > "$RUN/slurmrestd-jwt.fg.pid"
  fi
  for _ in $(seq 100); do
    if curl -sf --unix-socket "$REST_SOCK" http://localhost/slurm/$PING_V/ping >/dev/null 2>&1; then
      [ "$HAVE_JWT" = 1 ] || return 0   # the jwt instance answers 401 without a token once it listens
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$REST_PORT/slurm/$PING_V/ping")" = 401 ] && return 0
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

slurmd_namespaces() {  # the UTS namespace of every slurmd (each runs in its own: unshare --uts)
  local f pid own
  own=$(readlink /proc/$$/ns/uts)
  for f in "$RUN"/slurmd.*.fg.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    ns=$(readlink "/proc/$pid/ns/uts" 2>/dev/null) || continue
    if [ "$ns" != "$own" ]; then echo "$ns"; fi
  done | sort -u
  return 0
}

kill_job_processes() {  # kill_job_processes NS...: SIGKILL, by pid, what is left in those namespaces
  # slurmstepd and slurm_script detach (own session, ppid 1) and may ignore SIGTERM: after scancel
  # and the wait, whatever still runs in a slurmd's namespace (other than slurmd) is killed by pid.
  [ $# -gt 0 ] || return 0
  local p ns pid n=0 keep
  keep=" $(cat "$RUN"/slurmd.*.fg.pid 2>/dev/null | tr '\n' ' ' || true) "
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    ns=$(readlink "$p/ns/uts" 2>/dev/null) || continue
    case " $* " in *" $ns "*) ;; *) continue ;; esac
    case "$keep" in *" $pid "*) continue ;; esac
    if kill -KILL "$pid" 2>/dev/null; then n=$((n+1)); fi
  done
  if [ $n -gt 0 ]; then log "killed $n leftover job process(es) (slurmstepd/slurm_script) by pid"; fi
  return 0
}

case "${1:-}" in
  start)
    T0=$(now)
    FRESH=1; alive "$RUN/slurmctld.fg.pid" && FRESH=0
    # a restart of a killed slurmctld keeps the config and the saved state (jobs, drained nodes)
    [ $FRESH = 1 ] && [ -f "$RUN/keep-state" ] && [ -s "$SLURM_CONF" ] && FRESH=0
    if [ $FRESH = 1 ]; then
      write_config
    else
      log "keeping $SLURM_CONF and saved state"
      ACCT=0; grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF" && ACCT=1
    fi
    start_munge;   T1=$(now)
    if [ "$ACCT" = 1 ]; then
      start_db $FRESH; TD=$(now)
      start_dbd;       TE=$(now)
      [ $FRESH = 1 ] && seed_accounts
      log "accounting: mariadb $(dt "$T1" "$TD")s, slurmdbd $(dt "$TD" "$TE")s, seed $(since "$TE")s"
    fi
    TA=$(now)
    start_ctld $FRESH; T2=$(now)
    if [ "$ACCT" = 1 ] && [ $FRESH = 1 ]; then seed_qos; log "QoS seeded in $(since "$T2")s"; T2=$(now); fi
    touch "$RUN/keep-state"
    start_slurmds; T3=$(now)
    start_restd;   T4=$(now)
    log "up: munge $(dt "$T0" "$T1")s, accounting $(dt "$T1" "$TA")s, slurmctld $(dt "$TA" "$T2")s, slurmd $(dt "$T2" "$T3")s, slurmrestd $(dt "$T3" "$T4")s, total $(since "$T0")s"
    ;;
  stop)
    T0=$(now)
    alive "$RUN/slurmctld.fg.pid" && { cancel_all || log "jobs still running at stop"; }
    NSS=$(slurmd_namespaces || true)
    # shellcheck disable=SC2086
    kill_job_processes $NSS
    T1=$(now)
    # slurmdbd together with slurmctld: the last job records it would miss die with the bed anyway
    for f in "$RUN"/slurmrestd*.fg.pid "$RUN"/slurmd.*.fg.pid "$RUN/slurmctld.fg.pid" "$RUN/slurmdbd.fg.pid"; do
      [ -e "$f" ] && stop_pidfile "$f" &
    done
    wait
    # shellcheck disable=SC2086
    kill_job_processes $NSS   # a step started while slurmd was going down
    T2=$(now)
    # MariaDB only once slurmdbd is gone (it would log lost connections and retry)
    stop_pidfile "$RUN/mariadbd.fg.pid" 30 & stop_pidfile "$RUN/munged.pid" &
    wait
    log "slurm daemons stopped in $(dt "$T1" "$T2")s, mariadbd/munged in $(since "$T2")s"
    rm -f "$REST_SOCK" "$RUN/keep-state"
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
    echo "export SLURMRESTD_SOCKET=$REST_SOCK"
    if [ "$HAVE_JWT" = 1 ]; then echo "export SLURMRESTD_URL=http://127.0.0.1:$REST_PORT"; fi
    if [ -s "$SLURM_CONF" ]; then   # a running bed: what its config says
      ACCT=0; grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF" && ACCT=1
    fi
    echo "export SLURMLAB_ACCOUNTING=$ACCT"
    ;;
  *) echo "usage: $0 start|stop|reset|status|env" >&2; exit 2 ;;
esac
