#!/usr/bin/env bash
# Build what the live Slurm 24.11 test bed (tests/testbed/slurm2411) needs: a debootstrap'd
# Debian 13 chroot with Debian's slurm-wlm 24.11, slurmrestd, munge, slurmdbd + MariaDB.
# Idempotent. Cold: debootstrap + apt from Debian's mirror (measured in the README); warm: the
# chroot cached in $HPCTUI_SLURM2411 (default ~/.cache/hpctui-slurm2411, outside the checkout) is
# reused at once. Called by scripts/test.sh (root only).
set -euo pipefail
bash "$(dirname "$0")/../tests/testbed/slurm2411/build.sh" >/dev/null
echo "slurm2411-deps: Slurm 24.11 chroot ready"
