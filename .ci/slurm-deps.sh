#!/usr/bin/env bash
# Install exactly what the live Slurm test bed (tests/testbed/slurm/cluster.sh) needs.
# Idempotent; Debian 12 (slurm-wlm 22.05). Called by .ci/run.
# slurmdbd + mariadb-server: the bed turns on accounting (fair-share, QoS) when both are there.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS="slurm-wlm slurmctld slurmd slurm-client munge slurmrestd slurm-wlm-jwt-plugin slurmdbd mariadb-server curl"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && { echo "slurm-deps: all installed"; exit 0; }
# maintainer scripts must not start daemons (no systemd here; the bed starts its own)
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
