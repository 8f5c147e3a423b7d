#!/usr/bin/env bash
# Install what the live Alertmanager test bed (tests/testbed/alertmanager) needs: Debian's
# prometheus-alertmanager (0.25 on Debian 12). Idempotent; quick when already installed.
# The tests start their own Alertmanager on loopback with tmp storage: no service is started here.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if dpkg-query -W -f='${Status}' prometheus-alertmanager 2>/dev/null | grep -q 'install ok installed'; then
  echo "alertmanager-deps: all installed"; exit 0
fi
# maintainer scripts must not start daemons (no systemd here; the bed starts its own)
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus-alertmanager
