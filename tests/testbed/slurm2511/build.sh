#!/bin/bash
# Build the Slurm 25.11 test peer from SchedMD's source: Slurm (release tag $HPCTUI_SLURM2511_TAG,
# default slurm-25-11-7-1 = 25.11.7) configured, made and installed into a prefix, and a real
# pyslurm (PyPI sdist, default pyslurm==25.11.2) compiled against it for the test interpreter.
# Recipe, measured times and gotchas: ../shared/testbed/slurm-25.11/bed.sh.
#
# Idempotent and cached: everything lives under $HPCTUI_SLURM2511 (default
# ~/.cache/hpctui-slurm2511, outside the checkout) in a directory named by the tag
# (<cache>/<tag>/{inst,pyslurm-pyX.Y}; src/ and build/ only while building); a finished build (stamp file) is reused at once.
# Source, first that answers: the cached build; $SLURM2511_GIT (git dir or URL); the local bare
# mirror /work/.mirror/SchedMD+slurm/repo; https://github.com/SchedMD/slurm.git (shallow clone).
# pyslurm is installed with `pip install --target` into <cache>/<tag>/pyslurm-pyX.Y (X.Y of $PYTHON,
# default python3), which the bed puts on sys.path: the test venv itself is left alone.
# No daemon is started here. Prints the build directory on its last line.
#
# MEASURED (2 cores shared with other builds, load 8-9, nice 10): apt 10 s, git archive from the
# local mirror <1 s, configure 40 s, make -j2 489 s, make install 52 s, pip install pyslurm
# 1102 s (33 Cython modules) - 28 min cold; the recipe measured 339 s on 2 unloaded cores.
# Warm (cache present): 0.9 s. The cache is 132 MB (inst/ 65 MB + pyslurm 67 MB).
set -euo pipefail
TAG=${HPCTUI_SLURM2511_TAG:-slurm-25-11-7-1}
W=${HPCTUI_SLURM2511:-$HOME/.cache/hpctui-slurm2511}
B=$W/$TAG
P=$B/inst
PY=${PYTHON:-python3}
PYSLURM_SPEC=${HPCTUI_PYSLURM_SPEC:-pyslurm==25.11.2}
PYV=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
SITE=$B/pyslurm-py$PYV
STAMP="$TAG $PYSLURM_SPEC py$PYV v1"
MIRROR=/work/.mirror/SchedMD+slurm/repo
UPSTREAM=https://github.com/SchedMD/slurm.git
J=$(nproc)
# libmariadb-dev must be there at configure time, or accounting_storage/mysql is silently not built
DEPS="build-essential pkg-config git munge libmunge-dev libjson-c-dev libhttp-parser-dev libjwt-dev
      libyaml-dev liblz4-dev libssl-dev libmariadb-dev curl mariadb-server python3-venv"
log() { echo "[$(date +%T)] slurm2511-build: $*" >&2; }
# timed LABEL LOGFILE CMD...: run CMD with its output in LOGFILE, log the wall time
timed() {
  local l=$1 f=$2 s rc=0; shift 2; s=$(date +%s)
  "$@" >"$f" 2>&1 || rc=$?
  log "$l: $(( $(date +%s) - s )) s (rc=$rc, log $f)"
  [ $rc = 0 ] || { tail -30 "$f" >&2; return $rc; }
}

# the user both slurmrestd listeners run as (25.11 refuses root); also on a machine whose cache was restored
id slurm >/dev/null 2>&1 || useradd -r -M -d /nonexistent -s /usr/sbin/nologin slurm
mkdir -p "$B"
# the packages are checked even for a cached build: a restored cache needs their run-time libraries
missing=()
for p in $DEPS; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  { apt-get -o DPkg::Lock::Timeout=120 update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$W/apt.log" 2>&1 || { tail -20 "$W/apt.log" >&2; exit 1; }
fi

# a finished build of this tag, pyslurm and Python is reused at once
if [ -f "$B/.hpctui-ready" ] && [ "$(cat "$B/.hpctui-ready")" = "$STAMP" ]; then echo "$B"; exit 0; fi
T0=$(date +%s)

# export_tag GITDIR: the tag's tree into $B/src from a git dir (bare mirror or clone); 1 if absent
export_tag() {
  git --git-dir="$1" rev-parse -q --verify "$TAG^{commit}" >/dev/null 2>&1 || return 1
  log "source: git archive $TAG from $1"
  git --git-dir="$1" archive --format=tar "$TAG" | tar -x -C "$B/src"
}
# Slurm itself: source, configure, make, install; skipped while the prefix is complete
# (the source and build trees are removed once the prefix is ready: only inst/ is kept)
if [ ! -x "$P/sbin/slurmctld" ] || [ ! -e "$P/lib/slurm/libslurmfull.so" ]; then
  if [ ! -x "$B/src/configure" ]; then
    rm -rf "$B/src" "$B/build"; mkdir -p "$B/src"
    if [ -n "${SLURM2511_GIT:-}" ] && [ -d "$SLURM2511_GIT" ] && export_tag "$SLURM2511_GIT"; then :
    elif [ -n "${SLURM2511_GIT:-}" ] && [ ! -d "$SLURM2511_GIT" ]; then
      log "source: git clone --depth 1 --branch $TAG $SLURM2511_GIT"
      rm -rf "$B/src"; git clone -q --depth 1 --branch "$TAG" "$SLURM2511_GIT" "$B/src"
    elif [ -d "$MIRROR" ] && export_tag "$MIRROR"; then :
    else
      log "source: git clone --depth 1 --branch $TAG $UPSTREAM"
      rm -rf "$B/src"; git clone -q --depth 1 --branch "$TAG" "$UPSTREAM" "$B/src"
    fi
  fi
  mkdir -p "$B/build"
  if [ ! -f "$B/build/config.status" ]; then
    # --enable-multiple-slurmd: without it several `slurmd -N name` on one host are refused.
    # --disable-static halves the libtool compiles; the --without-* skip probes and plugins.
    (cd "$B/build" && timed configure "$B/configure.log" nice -n 10 ../src/configure --prefix="$P" \
      --sysconfdir="$B/etc" --enable-slurmrestd --with-jwt --with-http-parser --with-json --with-yaml \
      --with-munge --enable-multiple-slurmd --disable-static --disable-debug --disable-sview \
      --disable-x11 --without-hdf5 --without-hwloc --without-pmix --without-ucx --without-rdkafka \
      --without-lua --without-freeipmi --without-ofed --without-nvml --without-rsmi --without-oneapi \
      --without-bpf --without-libcurl)
  fi
  if [ ! -x "$P/sbin/slurmctld" ] || [ ! -e "$P/lib/slurm/libslurmfull.so" ]; then
    (cd "$B/build" && timed make "$B/make.log" nice -n 10 make -j"$J" &&
                      timed "make install" "$B/install.log" nice -n 10 make -j"$J" install)
  fi
fi
"$P/sbin/slurmctld" -V >&2
if [ ! -d "$SITE/pyslurm" ]; then
  # pyslurm's setup.py reads SLURM_INCLUDE_DIR (holds slurm/slurm.h) and SLURM_LIB_DIR (it finds
  # slurm/libslurmfull.so there and bakes that rpath in); DIST_EXTRA_CONFIG runs gcc $J-wide.
  printf '[build_ext]\nparallel = %s\n' "$J" >"$B/pydistutils.cfg"
  PIP=("$PY" -m pip)
  if ! "$PY" -m pip --version >/dev/null 2>&1; then  # Debian's python3 has no pip: a throwaway venv's
    "$PY" -m venv "$B/pipvenv"; PIP=("$B/pipvenv/bin/python" -m pip)
  fi
  rm -rf "$SITE.new"
  SLURM_INCLUDE_DIR="$P/include" SLURM_LIB_DIR="$P/lib" PYSLURM_BUILD_JOBS=$J \
    DIST_EXTRA_CONFIG="$B/pydistutils.cfg" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    timed "pip install $PYSLURM_SPEC" "$B/pyslurm-build.log" nice -n 10 "${PIP[@]}" install \
      --no-binary pyslurm --no-deps --target "$SITE.new" "$PYSLURM_SPEC"
  mv "$SITE.new" "$SITE"
fi
echo "$STAMP" > "$B/.hpctui-ready"
rm -rf "$B/src" "$B/build" "$B/pipvenv"   # ~280 MB the bed never needs (the cache keeps inst/ + pyslurm)
log "ready in $(( $(date +%s) - T0 )) s ($(du -sm "$B" | cut -f1) MB)"
echo "$B"
