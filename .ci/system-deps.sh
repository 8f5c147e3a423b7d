#!/usr/bin/env bash
# Debian packages the test beds need; idempotent and quick when already installed.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# maintainer scripts must not start daemons: the tests start their own, by pid
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
PKGS=(slurm-wlm slurmctld slurmd slurm-client munge slurmrestd slurm-wlm-jwt-plugin)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
