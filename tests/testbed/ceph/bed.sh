#!/bin/bash
# A real, minimal Ceph 16.2.15 "pacific" cluster (Debian bookworm packages) with an S3 gateway, on
# loopback only: 1 mon, 1 mgr (its prometheus module on 127.0.0.1:29283/metrics, refreshed every second),
# 1 OSD on memstore (no block device, no file), 1 radosgw (beast on 127.0.0.1:27480). cephx auth on (keys made with ceph-authtool). No systemd: each daemon runs in the
# foreground (-f) under setsid, pid in $CEPHLAB_DIR/run/<mon|mgr|osd|rgw>.pid, stopped by that pid.
#
# Usage: bed.sh setup | venv | start | stop | info | clean
#   setup  apt packages (if missing; .ci/ceph-deps.sh does the same)              (idempotent)
#   venv   a venv with boto3 under the state dir, for capture.sh / s3_checks.py  (idempotent)
#   start  first time: mkfs mon, create mgr/osd/rgw keys, mkfs osd, S3 user; then start the daemons
#          that are not running and wait for HEALTH_OK with every PG active+clean   (idempotent)
#   stop   SIGTERM each daemon by pid (rgw, osd, mgr, mon), SIGKILL after 30 s     (idempotent)
#   info   shell assignments: CEPH_CONF, S3_ENDPOINT, AWS_ACCESS_KEY_ID/SECRET, PYTHON (the venv)
#   clean  stop + delete the cluster state (keeps the venv)
# Talk to it with `ceph -c $CEPH_CONF ...` (the conf names the admin keyring), radosgw-admin -c, S3.
# Env: CEPHLAB_DIR (default /tmp/cephlab), CEPHLAB_MON_PORT (23300, msgr2), CEPHLAB_MON_V1_PORT
#      (23789), CEPHLAB_RGW_PORT (27480), CEPHLAB_MS_PORT_MIN/MAX (26800-26899, mgr/osd ports),
#      CEPHLAB_PROM_PORT (29283, the mgr's prometheus module),
#      CEPHLAB_HOSTNAME (cephlab), CEPHLAB_PYTHON (/usr/bin/python3, for the venv).
# See capture.sh (records tests/fixtures/ceph and breaks the cluster on purpose) and s3_checks.py.
# hpctui's copy: default ports moved off the Slurm beds' ranges (16817-20012 and 13306-16206 with their
# offsets: tests/testbed/slurm/slurmlab.py), `setup` without the boto3 venv (`venv` makes it). The tests
# drive it through cephlab.py (tests/ceph/conftest.py), one bed per pytest session, stopped by pid.
#
# Measured on a 2-core Debian 12 VM (other jobs running):
# - apt-get install of the 5 packages: 97 packages, 64 MB download (72.7 MB archives), 286 MB on disk,
#   32 s. Nothing is started by the install (no systemd). venv + boto3 1.44: ~7 s.
# - start from an empty state dir to HEALTH_OK with all PGs active+clean: 13-20 s (3 runs)
#   (mon up 0.5 s, osd up ~4 s, radosgw answering ~9 s later: it creates its 4 pools first).
# - restart of a stopped OSD to HEALTH_OK: 8.8 s; data survives (memstore saved at shutdown, see below).
# - RSS: mon ~45-58 MB, mgr ~310 MB, osd ~53 MB, radosgw ~56-63 MB (601 threads); total ~480 MB.
# - idle CPU: mon 0.4 %, mgr 0.3 %, osd 0.15 %, rgw 0.4-0.5 % of one core; ~1.3 % all together.
# - stop: 8.6 s (rgw 1.6 s, osd 3 s, mgr 2 s, mon 2 s), nothing left running, no port left open.
# - S3 (boto3, path style, 1 MiB object), warm: create_bucket 8 ms, put 12 ms, get 5 ms, list 48 ms,
#   delete_object 5 ms, delete_bucket 19 ms. The FIRST create_bucket takes ~2.9 s and the first put
#   ~2.0 s: radosgw creates default.rgw.buckets.index / .data pools on first use.
#
# Gotchas found while making it:
# - memstore OSD + the default osd_fast_shutdown=true: SIGTERM exits without unmounting, memstore's
#   contents are never written out, and the restarted OSD comes up with no PGs (256 slow ops "queued
#   for pg", every rados/radosgw-admin call hangs). `osd fast shutdown = false` makes memstore save to
#   the osd dir on SIGTERM (~3 s), and the data is back after a restart.
# - A stopped OSD is marked down at once only because osd_fast_shutdown_notify_mon (default true)
#   tells the mon; a SIGKILLed single OSD has no peers to report it and stays "up" until
#   mon_osd_report_timeout (900 s).
# - HEALTH_OK is reported while freshly created PGs are still "unknown"/"creating+peering": wait for
#   HEALTH_OK *and* every PG active+clean (health_ok below).
# - Set up front, not hit (documented pacific behaviour): size-1 pools need `mon allow pool size one`
#   and `mon warn on pool no redundancy = false` (else HEALTH_WARN POOL_NO_REDUNDANCY);
#   `auth allow insecure global id reclaim = false` (else AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED);
#   mon_data_avail_warn is 30 % free on the mon's filesystem and this VM had ~28 % free, so it is
#   lowered to 2 % (else MON_DISK_LOW); pg num 8 + autoscale off keeps the bed at 49 PGs.
# - Bind: `public network = 127.0.0.1/32`, `public addr`/`cluster addr = 127.0.0.1`, `ms bind ipv6 =
#   false`, a private `ms bind port` range, beast `endpoint=127.0.0.1:PORT`. Checked with ss: every
#   listener is on 127.0.0.1. mgr's restful module is on but has no certificate, so it listens nowhere.
# - Daemons put the host name in metadata and the OSD in CRUSH as host=<hostname>; each daemon runs in
#   its own UTS namespace (unshare --uts) named $CEPHLAB_HOSTNAME so outputs don't depend on the
#   machine; CONTAINER_NAME is removed from their environment (Ceph records it in daemon metadata).
# - ceph-authtool has no -q (it fails with "unexpected '<keyring>'"); silence it with >/dev/null.
# - A pool at its quota (POOL_FULL) does not fail writes: `rados put` and an S3 PUT into a bucket
#   whose data pool is full BLOCK (no HTTP answer; clients need timeouts). Pool quotas are applied
#   from PG stats a few seconds late, so a few writes past the quota succeed. RGW's own quota
#   (radosgw-admin quota set/enable) answers 403 QuotaExceeded at once.
# - With the OSD down, S3 calls and radosgw-admin hang (no error): always run them under a timeout.
#   PG_AVAILABILITY (PGs stale) joins OSD_DOWN ~50 s after the OSD stops. Size-1 PGs never show
#   "degraded"; capture.sh gets PG_DEGRADED from a size-2 pool on the single OSD.
# - The prometheus module: `mgr initial modules` (read by the mon at mkfs) turns it on from the start; its
#   options are NOT read from ceph.conf (set there, the module bound *:9283), so they go into the mon's
#   config store before the mgr first starts, with `config set --force` (the mon does not know a module's
#   options before a mgr has reported them: without --force EINVAL, and `config assimilate-conf` drops them
#   silently). Enabling it on a
#   running mgr instead costs ~5.5 s before /metrics answers with the PGs counted (its first answers count
#   every PG as 0). With the default scrape_interval (15 s) an OSD stopped shows in the metrics 15.1 s later.
# - radosgw starts 601 threads (rgw thread pool size 512) - fine, but it shows in ps/thread counts.
set -euo pipefail

S=${CEPHLAB_DIR:-/tmp/cephlab}            # all state: conf, keys, mon/mgr/osd/rgw data, logs, pids, venv
MON_V2=${CEPHLAB_MON_PORT:-23300}         # msgr2
MON_V1=${CEPHLAB_MON_V1_PORT:-23789}      # legacy msgr1
RGW_PORT=${CEPHLAB_RGW_PORT:-27480}
PROM_PORT=${CEPHLAB_PROM_PORT:-29283}     # the mgr's prometheus module (/metrics)
MS_MIN=${CEPHLAB_MS_PORT_MIN:-26800}      # mgr/osd/rgw messenger ports
MS_MAX=${CEPHLAB_MS_PORT_MAX:-26899}
S3_USER=lab
S3_ACCESS=LABACCESSKEY000000001
S3_SECRET=labsecretkey0000000000000000000000000001
CONF=$S/ceph.conf
PY=${CEPHLAB_PYTHON:-/usr/bin/python3}
HOSTN=${CEPHLAB_HOSTNAME:-cephlab}        # daemons run in their own UTS namespace with this hostname
PKGS="ceph-mon ceph-mgr ceph-osd radosgw ceph-common"

now() { date +%s.%N; }
log() { printf '[bed %6.2fs] %s\n' "$(echo "$(now) - $T0" | bc)" "$*" >&2; }
T0=$(now)
c() { ceph -c "$CONF" --connect-timeout 10 "$@"; }

# wait_for <seconds> <what> <command...>: poll until the command succeeds
wait_for() {
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { log "timeout waiting for $what"; return 1; }
    sleep 0.2
  done
  log "$what"
}

alive() { [ -s "$S/run/$1.pid" ] && kill -0 "$(cat "$S/run/$1.pid")" 2>/dev/null; }

# spawn <name> <command...>: foreground daemon in its own session, pid recorded
spawn() {
  local n=$1; shift
  if alive "$n"; then log "$n already running (pid $(cat "$S/run/$n.pid"))"; return 0; fi
  # setsid/env/unshare/sh all exec in place, so $! is the daemon's own pid
  setsid env -u CONTAINER_NAME unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$HOSTN" "$@" \
    >>"$S/log/$n.out" 2>&1 < /dev/null &
  echo $! > "$S/run/$n.pid"
  log "started $n pid $!"
}

write_conf() {
  local fsid=$1
  cat > "$CONF" <<EOF
[global]
fsid = $fsid
mon initial members = a
mon host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
public network = 127.0.0.1/32
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind port min = $MS_MIN
ms bind port max = $MS_MAX
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
keyring = $S/keys/\$name.keyring
run dir = $S/run
admin socket = $S/run/\$name.asok
log file = $S/log/\$name.log
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon data avail warn = 2
mon data avail crit = 1
mgr initial modules = restful iostat nfs prometheus

[mon]
mon data = $S/mon/\$name
mon cluster log file = $S/log/cluster.log

[mgr]
mgr data = $S/mgr/\$name

[osd]
osd data = $S/osd/\$name
osd objectstore = memstore
osd fast shutdown = false
memstore device bytes = 1073741824

[client.rgw.a]
rgw data = $S/rgw/\$name
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw dns name = localhost
EOF
}

setup() {
  if ! command -v ceph-mon >/dev/null || ! command -v radosgw >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PKGS
  fi
  log "setup done ($(ceph --version | cut -d' ' -f1-3))"
}

venv() {   # boto3 for capture.sh and s3_checks.py (hpctui itself uses the minio client)
  mkdir -p "$S"
  if [ ! -x "$S/venv/bin/python" ] || ! "$S/venv/bin/python" -c 'import boto3' 2>/dev/null; then
    "$PY" -m venv "$S/venv"
    "$S/venv/bin/pip" install -q boto3
  fi
}

bootstrap() {   # first start on an empty state dir: mkfs the mon (daemons started by start)
  mkdir -p "$S"/{keys,run,log,mon/mon.a,mgr/mgr.x,osd/osd.0,rgw/client.rgw.a}
  local fsid; fsid=$(uuidgen)
  write_conf "$fsid"
  ceph-authtool --create-keyring "$S/keys/mon..keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$S/keys/client.admin.keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
  ceph-authtool "$S/keys/mon..keyring" --import-keyring "$S/keys/client.admin.keyring" >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" "$S/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$S/monmap" --keyring "$S/keys/mon..keyring"
  log "mon mkfs done (fsid $fsid)"
}

start() {
  command -v ceph-mon >/dev/null || { echo "run '$0 setup' first" >&2; exit 1; }
  [ -s "$S/mon/mon.a/keyring" ] || bootstrap
  mkdir -p "$S"/{run,log}

  spawn mon ceph-mon -c "$CONF" -f -i a
  wait_for 60 "mon answers" c mon stat

  if [ ! -s "$S/keys/mgr.x.keyring" ]; then
    # the prometheus module's options live in the mon's config store (not read from ceph.conf); before the
    # mgr ever ran the mon does not know them yet: --force
    c config set mgr mgr/prometheus/server_addr 127.0.0.1 --force
    c config set mgr mgr/prometheus/server_port "$PROM_PORT" --force
    c config set mgr mgr/prometheus/scrape_interval 1 --force
    c auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' -o "$S/keys/mgr.x.keyring"
  fi
  spawn mgr ceph-mgr -c "$CONF" -f -i x

  if [ ! -s "$S/osd/osd.0/whoami" ]; then
    local uuid secret; uuid=$(uuidgen); secret=$(ceph-authtool --gen-print-key)
    echo "{\"cephx_secret\": \"$secret\"}" | c osd new "$uuid" 0 -i - >/dev/null
    ceph-authtool --create-keyring "$S/keys/osd.0.keyring" -n osd.0 --add-key "$secret" >/dev/null
    ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$uuid" 2>>"$S/log/osd.out"
    log "osd.0 mkfs done (memstore)"
  fi
  spawn osd ceph-osd -c "$CONF" -f -i 0
  wait_for 90 "osd.0 up" osd_up

  if [ ! -s "$S/keys/client.rgw.a.keyring" ]; then
    c auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' mgr 'allow rw' -o "$S/keys/client.rgw.a.keyring"
  fi
  spawn rgw radosgw -c "$CONF" -f -n client.rgw.a
  wait_for 120 "rgw answers on 127.0.0.1:$RGW_PORT" curl -fsS -o /dev/null "http://127.0.0.1:$RGW_PORT/"

  if ! timeout 30 radosgw-admin -c "$CONF" user info --uid="$S3_USER" >/dev/null 2>&1; then
    timeout 30 radosgw-admin -c "$CONF" user create --uid="$S3_USER" --display-name="Lab user" \
      --access-key="$S3_ACCESS" --secret-key="$S3_SECRET" >/dev/null
    log "rgw user $S3_USER created"
  fi
  wait_for 180 "HEALTH_OK, all PGs active+clean" health_ok
}

osd_up() { c osd stat -f json | grep -q '"num_up_osds":1'; }
# HEALTH_OK alone is not enough: it is reported while new PGs are still "unknown"/"creating"
health_ok() {
  c status -f json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); p=d["pgmap"]
sys.exit(not (d["health"]["status"] == "HEALTH_OK" and p["num_pgs"] > 0 and
  sum(s["count"] for s in p["pgs_by_state"] if s["state_name"] == "active+clean") == p["num_pgs"]))'
}

stop() {
  local n p end
  for n in rgw osd mgr mon; do
    [ -s "$S/run/$n.pid" ] || continue
    p=$(cat "$S/run/$n.pid")
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p"
      end=$(( $(date +%s) + 30 ))
      while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
      kill -0 "$p" 2>/dev/null && { kill -KILL "$p"; log "$n pid $p needed SIGKILL"; }
      log "stopped $n (pid $p)"
    fi
    rm -f "$S/run/$n.pid"
  done
}

info() {
  cat <<EOF
CEPH_CONF=$CONF
CEPH_KEYRING=$S/keys/client.admin.keyring
S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
METRICS_URL=http://127.0.0.1:$PROM_PORT/metrics
AWS_ACCESS_KEY_ID=$S3_ACCESS
AWS_SECRET_ACCESS_KEY=$S3_SECRET
PYTHON=$S/venv/bin/python
EOF
}

case "${1:-}" in
  setup) setup ;;
  venv)  venv ;;
  start) start ;;
  stop)  stop ;;
  info)  info ;;
  clean) stop; rm -rf "$S"/{ceph.conf,monmap,keys,run,log,mon,mgr,osd,rgw} ;;
  *) echo "usage: $0 setup | venv | start | stop | info | clean" >&2; exit 2 ;;
esac
