#!/usr/bin/env bash
# Install what the live Prometheus test bed (tests/testbed/prometheus) needs: Debian's
# prometheus server (2.42 on Debian 12) and Debian's VictoriaMetrics (1.79, single node): the
# live tests of the Prometheus source run against both engines. Idempotent; quick when installed.
# The tests start their own servers on loopback with tmp storage: no service is started here.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS="prometheus victoria-metrics"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "prom-deps: all installed"; exit 0
fi
# maintainer scripts must not start daemons (no systemd here; the bed starts its own)
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
