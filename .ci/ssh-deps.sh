#!/usr/bin/env bash
# Install exactly what the live SSH test bed (tests/testbed/ssh) and bench/bench_ssh.py need:
# OpenSSH's sshd (the node peer and the bastion) and pdsh (a benchmark peer).
# ClusterShell's clush comes from PyPI through the test extras. Idempotent; Debian 12.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS="openssh-server openssh-client pdsh"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && { echo "ssh-deps: all installed"; exit 0; }
# maintainer scripts must not start daemons (no systemd here; the bed starts its own sshd)
[ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
