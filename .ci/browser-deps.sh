#!/usr/bin/env bash
# Install exactly what the live browser test (tests/ui/test_serve_browser.py) needs: Debian's
# headless-capable Chromium and its WebDriver (selenium comes from PyPI through the test extras).
# Idempotent; Debian 12.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS="chromium chromium-driver fonts-dejavu-core"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && { echo "browser-deps: all installed"; exit 0; }
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
