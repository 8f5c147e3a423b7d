#!/usr/bin/env bash
# Install what the live Ceph test bed (tests/testbed/ceph) needs: Debian's Ceph 16.2 "pacific" mon, mgr,
# OSD (memstore), radosgw and the ceph CLI (97 packages, ~64 MB download, ~286 MB on disk). Idempotent;
# quick when installed. Nothing is started here (no systemd): the tests start their own one-node cluster on
# loopback in a tmp dir and stop it by pid.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS="ceph-mon ceph-mgr ceph-osd radosgw ceph-common"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "ceph-deps: all installed"; exit 0
fi
# maintainer scripts must not start daemons (no systemd here; the bed starts its own)
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
