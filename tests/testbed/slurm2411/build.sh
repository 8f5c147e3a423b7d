#!/bin/bash
# Build the Slurm 24.11 test peer: a debootstrap'd Debian 13 "trixie" chroot with Debian's own
# slurm-wlm 24.11 (slurmctld, slurmd, slurmrestd + JWT plugin, munge, client commands), curl; with
# HPCTUI_SLURM2411_ACCOUNTING=1 also slurmdbd + MariaDB (not used by the bed: Debian 13's slurmdbd
# 24.11.5 dies at start against its MariaDB 11.8, see slurm2411lab.py). Recipe and gotchas:
# ../shared/testbed/slurm-24.11/bed.sh. Only Debian's package mirror is used.
# Idempotent: the chroot lives under $HPCTUI_SLURM2411 (default ~/.cache/hpctui-slurm2411), outside
# the checkout, and is reused once complete (stamp file); a half-built one is thrown away.
# No daemon is started here (policy-rc.d in the chroot); the bed (slurm2411lab.py) mounts /proc,
# /dev, /sys only inside its own private mount namespace, so nothing here is ever mounted.
# Prints the chroot's path on its last line.
set -euo pipefail
W=${HPCTUI_SLURM2411:-$HOME/.cache/hpctui-slurm2411}
R=$W/root
ACCT=${HPCTUI_SLURM2411_ACCOUNTING:-0}
PKGS=slurm-wlm,slurmctld,slurmd,slurm-client,slurmrestd,slurm-wlm-jwt-plugin,munge,curl,hostname
STAMP="trixie $PKGS acct=$ACCT v1"
MIRROR=${HPCTUI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { echo "[$(date +%T)] slurm2411-build: $*" >&2; }

if [ -f "$R/.hpctui-ready" ] && [ "$(cat "$R/.hpctui-ready")" = "$STAMP" ]; then echo "$R"; exit 0; fi

if ! command -v debootstrap >/dev/null; then
  log "apt: installing debootstrap"
  apt-get -o DPkg::Lock::Timeout=120 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends debootstrap >/dev/null
fi

chroot_pids() {  # pids of processes whose root is the chroot being built (none expected)
  local p
  for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"; done
  return 0
}

mkdir -p "$W"
T=$W/root.new
# never rm -rf a tree that may have a mount under it (a killed earlier build)
if [ -d "$T" ] && grep -q " $T/" /proc/self/mounts; then log "$T has mounts; refusing to remove it"; exit 1; fi
rm -rf "$T"
T0=$(date +%s)
log "debootstrap trixie ($PKGS)"
debootstrap --variant=minbase --include=$PKGS trixie "$T" "$MIRROR" >"$W/debootstrap.log" 2>&1 \
  || { tail -30 "$W/debootstrap.log" >&2; exit 1; }
printf '#!/bin/sh\nexit 101\n' > "$T/usr/sbin/policy-rc.d"; chmod +x "$T/usr/sbin/policy-rc.d"
if [ "$ACCT" = 1 ]; then
  log "apt in the chroot: slurmdbd mariadb-server"
  cp /etc/resolv.conf "$T/etc/resolv.conf"
  chroot "$T" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$W/apt.log" 2>&1
  chroot "$T" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmdbd mariadb-server >>"$W/apt.log" 2>&1 \
    || { tail -30 "$W/apt.log" >&2; exit 1; }
  chroot "$T" apt-get clean
fi
left=$(chroot_pids "$T")
# shellcheck disable=SC2086
[ -z "$left" ] || { log "killing processes the package scripts started: $left"; kill -9 $left; }
# users the bed needs: alice/bob (accounting), slurm (the unprivileged JWT slurmrestd)
chroot "$T" sh -c 'id slurm >/dev/null 2>&1 || useradd -r -M -d /nonexistent -s /usr/sbin/nologin slurm
  for u in alice bob; do id $u >/dev/null 2>&1 || useradd -M -d /nonexistent -s /usr/sbin/nologin $u; done'
echo "$STAMP" > "$T/.hpctui-ready"
if [ -d "$R" ]; then
  if grep -q " $R/" /proc/self/mounts; then log "$R has mounts; refusing to replace it"; exit 1; fi
  rm -rf "$R"
fi
mv "$T" "$R"
log "chroot ready in $(( $(date +%s) - T0 )) s ($(du -sm "$R" | cut -f1) MB)"
echo "$R"
