#!/bin/bash
# Record the samples: healthy JSON, S3 timings and error bodies, then break the cluster on purpose
# (RGW bucket quota, pool quotas full, PGs degraded, OSD down) and record what status/health say.
# Usage: bed.sh venv; bed.sh start; capture.sh OUTDIR      (ends with the bed healthy again)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BED=$HERE/bed.sh
eval "$("$BED" info)"
export S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
O=${1:?usage: capture.sh OUTDIR}; mkdir -p "$O"
C() { ceph -c "$CEPH_CONF" --connect-timeout 10 "$@"; }
RA() { timeout 30 radosgw-admin -c "$CEPH_CONF" "$@"; }
j() { local n=$1; shift; C "$@" -f json-pretty > "$O/$n.json"; echo "wrote $n.json" >&2; }
# wait_check <seconds> <CHECK_NAME|HEALTH_OK>: poll `ceph health` until that check shows up
wait_check() {
  local end=$(( $(date +%s) + $1 )) t0; t0=$(date +%s.%N)
  until C health -f json | grep -q "\"$2\""; do
    [ "$(date +%s)" -lt "$end" ] || { echo "timeout waiting for $2" >&2; return 1; }
    sleep 0.5
  done
  printf '%s after %.1fs\n' "$2" "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$O/timings.txt" >&2
}

# 1. healthy
j status-healthy status
j health-detail-healthy health detail
j osd-tree-healthy osd tree
j df-healthy df detail
j osd-df-healthy osd df
j pg-stat-healthy pg stat
j versions versions
C health > "$O/health-healthy.txt"; C status > "$O/status-healthy.txt"

# 2. S3: timed round trip (twice) and raw error responses
"$PYTHON" "$HERE/s3_checks.py" roundtrip | tee "$O/s3-roundtrip-timings.jsonl"
"$PYTHON" "$HERE/s3_checks.py" errors "$O"

# 3. RGW bucket quota (1 object): 403 QuotaExceeded
RA quota set --quota-scope=bucket --uid=lab --max-objects=1
RA quota enable --quota-scope=bucket --uid=lab
"$PYTHON" - <<'EOF'
import os, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="quota-bucket"); s3.put_object(Bucket="quota-bucket", Key="k0", Body=b"x")
EOF
"$PYTHON" "$HERE/s3_checks.py" put quota-bucket k1 "$O/rgw-error-quota-exceeded.txt"
RA quota disable --quota-scope=bucket --uid=lab

# 4. pool quotas: a rados pool with max_objects 10 filled past it, and RGW's data pool at max_objects 1
C osd pool create quota-test 8 >/dev/null
C osd pool application enable quota-test rados >/dev/null
C osd pool set-quota quota-test max_objects 10
head -c 4096 /dev/urandom > "$O/.obj"
for i in $(seq 1 12); do timeout 5 rados -c "$CEPH_CONF" -p quota-test put "o$i" "$O/.obj" || echo "rados put o$i: rc=$?" >&2; done
C osd pool set-quota default.rgw.buckets.data max_objects 1
wait_check 60 POOL_FULL
sleep 6   # let the second pool's full flag land too
j status-pool-full status
j health-detail-pool-full health detail
j df-pool-full df detail
C health detail > "$O/health-detail-pool-full.txt"
"$PYTHON" "$HERE/s3_checks.py" put quota-bucket k2 "$O/rgw-put-data-pool-full.txt" 10
timeout 5 rados -c "$CEPH_CONF" -p quota-test put o99 "$O/.obj" && echo "rados put into full pool: ok" >> "$O/timings.txt" \
  || echo "rados put into full pool: rc=$? (blocks; killed by timeout 5)" >> "$O/timings.txt"
rm -f "$O/.obj"
C osd pool set-quota default.rgw.buckets.data max_objects 0
C osd pool set-quota quota-test max_objects 0
wait_check 60 HEALTH_OK
C osd pool rm quota-test quota-test --yes-i-really-really-mean-it

# 5. degraded: a size-2 pool on the single OSD (undersized+degraded)
C osd pool create degraded-test 8 >/dev/null
C osd pool set degraded-test size 2
C osd pool application enable degraded-test rados >/dev/null
echo hello > "$O/.obj"; for i in 1 2 3; do timeout 10 rados -c "$CEPH_CONF" -p degraded-test put "d$i" "$O/.obj"; done; rm -f "$O/.obj"
wait_check 60 PG_DEGRADED
j status-pg-degraded status
j health-detail-pg-degraded health detail
C osd pool rm degraded-test degraded-test --yes-i-really-really-mean-it
wait_check 60 HEALTH_OK

# 6. OSD down (SIGTERM to the OSD's pid; the OSD tells the mon on the way out)
"$PYTHON" - <<'EOF'
import os, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
s3.put_object(Bucket="quota-bucket", Key="survivor", Body=b"still here")
EOF
S=$(dirname "$CEPH_CONF"); P=$(cat "$S/run/osd.pid"); t0=$(date +%s.%N)
kill -TERM "$P"; while kill -0 "$P" 2>/dev/null; do sleep 0.05; done
printf 'osd exit after SIGTERM: %.1fs\n' "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$O/timings.txt"
rm -f "$S/run/osd.pid"
wait_check 30 OSD_DOWN
j status-osd-down status
j health-detail-osd-down health detail
j osd-tree-osd-down osd tree
j df-osd-down df
C health detail > "$O/health-detail-osd-down.txt"
"$PYTHON" - <<'EOF' | tee -a "$O/timings.txt"
import os, time, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"},
                                connect_timeout=3, read_timeout=5))
t = time.perf_counter()
try:
    s3.get_object(Bucket="quota-bucket", Key="survivor")["Body"].read(); r = "ok"
except Exception as e:
    r = f"{type(e).__name__}"
print(f"S3 GET with the OSD down: {r} after {time.perf_counter() - t:.1f}s")
EOF
wait_check 90 PG_AVAILABILITY || true
j status-osd-down-later status
j health-detail-osd-down-later health detail
t0=$(date +%s.%N)
"$BED" start
printf 'osd restart to HEALTH_OK: %.1fs\n' "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$O/timings.txt"
"$PYTHON" - <<'EOF' | tee -a "$O/timings.txt"
import os, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, read_timeout=30))
print("object written before the OSD stop, after restart:", s3.get_object(Bucket="quota-bucket", Key="survivor")["Body"].read())
for k in ("k0", "k2", "survivor"): s3.delete_object(Bucket="quota-bucket", Key=k)
s3.delete_bucket(Bucket="quota-bucket")
EOF
j status-after-recovery status
