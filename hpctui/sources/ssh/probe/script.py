"""The remote probe: a POSIX ``sh`` loop (dash-compatible) sent as the command of one SSH channel.

No agent is installed on nodes. The loop prints one record per interval::

    @@hpctui begin <seq> <epoch_ns> <protocol>
    @@hpctui section <name> <rc> <late> [<extra>]
    ...what the probe printed (stdout and stderr)...
    @@hpctui section <name> ...
    @@hpctui end <seq>

``late`` is 0 (finished in time), 1 (hit its timeout, or still running when the record was
written; its output is then left out) or 2 (a previous run of the same probe is still stuck,
e.g. ``stat -f`` on a hung NFS mount in D state: no new one is started). ``rc`` is the
probe's exit status (124 when late). ``extra`` is ``<start_ns> <end_ns>`` for mount probes.

Markers count only at the start of a line, and no probe lets node data start a line: process
command lines are squeezed to printable ASCII on one ``cmd`` line, cgroup/uid lines are
prefixed, kernel and journal lines start with their timestamp, sysfs lines with their path.
So a user cannot forge or cut a record by naming a process ``@@hpctui end``.

Every probe that can block runs in the background under ``timeout -k 1``; the loop never
``wait``\\ s on one (a process in D state cannot be killed, and ``timeout`` would wait for it),
it polls for the exit status until a deadline and writes the record without the late ones.
Everything interpolated from config is ``shlex``-quoted; names and paths are also validated.

Sections (each can be switched off in :class:`ProbeOptions`):

``config``       slow_ms / interval, ``expect <path>`` per expected mount
``gpu-fields``   the ``--query-gpu`` field list (probed once per node with ``--help-query-gpu``)
``gpu``          ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``
``gpu-remap``    ``--query-remapped-rows`` when the driver lacks ``remapped_rows.*`` in ``--query-gpu``
``gpu-apps``     ``--query-compute-apps=pid,gpu_uuid,used_memory``; ``gpu-procs``: uid/user/cmd/cgroup per pid
``gpu-list`` ``nvlink`` ``nvlink-err`` ``mig-gi`` ``mig-ci`` ``gpu-mem``  (every ``slow_every`` records)
``xid``          kernel log lines with ``NVRM: Xid`` or NVSwitch ``SXid`` (``journalctl -k`` after a cursor kept
                 by the loop, or ``dmesg``)
``ib``           ``grep -H`` of /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer,counters/*}
``mounts``       network/parallel filesystem lines of /proc/self/mountinfo; ``stat.<mount id>``: ``stat -f``
``lfs`` ``beegfs``  ``lfs check servers`` / ``beegfs-check-servers`` where present (slow records)
``lfsdf``        ``lfs df`` (per-target usage, inactive/unreachable targets) where Lustre is mounted (slow)
``lctlimp``      ``lctl get_param osc.*.ost_server_uuid mdc.*.mds_server_uuid``: each target's import state
                 (FULL, DISCONN, EVICTED, recovery) where Lustre is mounted (slow; procfs, never blocks)
``beegfstgt``    ``beegfs-ctl --listtargets --nodetype=storage --state`` where BeeGFS is mounted (slow)
``svc``          ``systemctl show -p Id,LoadState,ActiveState,SubState``; ``svc-pid`` without systemd;
                 ``journal.<unit>``: last journal lines of a failed unit
``res``          load, CPU, memory, swap, disks, NICs from /proc
"""

from __future__ import annotations

import re
import shlex

import msgspec

MARK = "@@hpctui"
PROTOCOL = 1

DEFAULT_SERVICES: tuple[str, ...] = (
    "nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "slurmd", "kubelet", "containerd",
)
# Network/parallel file systems whose mounts are checked for hangs, by the fstype mountinfo shows (FACTS §5):
# ceph-fuse mounts show "fuse.ceph-fuse" (libfuse's subtype is the program name; "fuse.ceph" is kept for
# old helpers); BeeGFS and BeeOND mounts are both "beegfs"; WEKA "wekafs"; Spectrum Scale "gpfs"; the
# kernel SMB client registers "cifs" and "smb3"; JuiceFS "fuse.juicefs".
NETWORK_FSTYPES: tuple[str, ...] = ("lustre", "beegfs", "nfs", "nfs4", "ceph", "fuse.ceph", "fuse.ceph-fuse",
                                    "gpfs", "wekafs", "cifs", "smb3", "fuse.juicefs")

# --query-gpu fields, FACTS §1; alternatives in preference order (the first one the driver knows wins).
GPU_FIELD_GROUPS: tuple[tuple[str, ...], ...] = (
    ("index",), ("uuid",), ("name",), ("pci.bus_id",),
    ("utilization.gpu",), ("utilization.memory",), ("memory.used",), ("memory.total",),
    ("temperature.gpu",), ("temperature.memory",), ("power.draw",), ("enforced.power.limit", "power.limit"),
    ("clocks.current.sm", "clocks.sm"),
    ("ecc.errors.corrected.volatile.total",), ("ecc.errors.uncorrected.volatile.total",),
    ("ecc.errors.corrected.aggregate.total",), ("ecc.errors.uncorrected.aggregate.total",),
    ("remapped_rows.correctable",), ("remapped_rows.uncorrectable",),
    ("remapped_rows.pending",), ("remapped_rows.failure",),
    ("mig.mode.current",), ("mig.mode.pending",),
    ("clocks_event_reasons.active", "clocks_throttle_reasons.active"),
    ("pcie.link.gen.gpucurrent", "pcie.link.gen.current"), ("pcie.link.gen.max",),
    ("pcie.link.width.current",), ("pcie.link.width.max",),
    ("persistence_mode",),
    ("fabric.state",), ("fabric.status",),  # NVLink fabric registration (FACTS §8; R590 has them)
)
# Used when --help-query-gpu fails: fields every driver since R450 knows.
BASE_GPU_FIELDS: tuple[str, ...] = (
    "index", "uuid", "name", "pci.bus_id", "utilization.gpu", "utilization.memory", "memory.used",
    "memory.total", "temperature.gpu", "power.draw", "power.limit", "clocks.sm", "persistence_mode",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
)
# Error counters only (FACTS §4): they change rarely, so an unchanged IB section is parsed once.
# port_xmit_wait / port_{xmit,rcv}_data change all the time and are not shown anywhere.
IB_COUNTERS: tuple[str, ...] = (
    "symbol_error", "link_error_recovery", "link_downed", "local_link_integrity_errors",
    "port_rcv_errors", "port_rcv_remote_physical_errors", "excessive_buffer_overrun_errors",
    "port_xmit_discards",
)

_SAFE_NAME = re.compile(r"[A-Za-z0-9@_.:+][A-Za-z0-9@_.:+-]*\Z")
_SAFE_FSTYPE = re.compile(r"[a-z0-9_.][a-z0-9_.-]*\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ProbeOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """What the remote loop collects and how. Embeddable in a source's settings."""

    interval_s: float = 2.0
    """Seconds between records (the ssh source sets it to its own ``interval_s``)."""
    probe_timeout_s: float = 5.0
    """Limit of one probe: nvidia-smi, journalctl, systemctl, a grep of sysfs."""
    mount_timeout_s: float = 5.0
    """Limit of ``stat -f`` on one mount; past it (exit 124) the mount is hung."""
    slow_mount_ms: int = 1000
    """``stat -f`` slower than this: the mount is "slow"."""
    max_mount_probes: int = 64
    """``stat -f`` at most this many mounts per record (k8s nodes can have hundreds)."""
    slow_every: int = 5
    """MIG, NVLink, lfs/beegfs checks every Nth record (first record included)."""
    gpus: bool = True
    """The ``gpu*``, ``mig-*``, ``nvlink*`` and ``gpu-apps``/``gpu-procs`` sections."""
    xid: bool = True
    """The ``xid`` section: Xid events from the kernel log."""
    ib: bool = True
    """The ``ib`` section: InfiniBand ports from sysfs."""
    mounts: bool = True
    """The ``mounts`` section: network file systems and their health."""
    services: bool = True
    """The ``svc`` section: systemd units of ``service_names``."""
    resources: bool = True
    """The ``res`` section: load, CPU, memory, disks, NICs."""
    service_names: tuple[str, ...] = DEFAULT_SERVICES
    """Services whose state is read (nvidia-persistenced, nvidia-fabricmanager, nvidia-dcgm, slurmd, ...)."""
    expected_mounts: tuple[str, ...] = ()
    """Mount points that must be there: a missing one is a finding."""
    fstypes: tuple[str, ...] = NETWORK_FSTYPES
    """File system types watched (lustre, beegfs, nfs, nfs4, ceph, gpfs, ...)."""
    journal_lines: int = 5
    """Last journal lines sent with a failed unit."""
    max_records: int = 0
    """0 = run until the channel closes (tests use a small number)."""
    # Roots and PATH, for running the same loop against a shim tree (tests, containers).
    sys_root: str = "/sys"
    """Where the loop reads sysfs (a shim tree in tests)."""
    proc_root: str = "/proc"
    """Where the loop reads procfs (a shim tree in tests)."""
    run_root: str = "/run"
    """Where the loop looks for systemd's state and pid files (a shim tree in tests)."""
    path_prepend: tuple[str, ...] = ()
    """Directories put first on the node's ``PATH`` (e.g. where nvidia-smi lives)."""
    work_dirs: tuple[str, ...] = ("/dev/shm", "/tmp")
    """Scratch directory candidates on the node, first usable wins; removed on exit."""
    # Test beds only: pick sys/proc/run and PATH from <shim_root>/nodes/<node> at run time, the node
    # being $HPCTUI_SHIM_NODE or the server address of $SSH_CONNECTION (see tests/testbed/nodeshims).
    shim_root: str | None = None
    """Test beds only: the shim tree root (tests/testbed/nodeshims)."""

    def __post_init__(self) -> None:
        if not 0.1 <= self.interval_s <= 3600:
            raise ValueError("interval_s must be within 0.1..3600")
        for t in (self.probe_timeout_s, self.mount_timeout_s):
            if not 0.1 <= t <= 600:
                raise ValueError("probe timeouts must be within 0.1..600 s")
        if (self.slow_every < 1 or self.journal_lines < 0 or self.max_records < 0 or self.slow_mount_ms < 0
                or self.max_mount_probes < 0):
            raise ValueError("slow_every >= 1; journal_lines, max_records, slow_mount_ms, max_mount_probes >= 0")
        for name in self.service_names:
            if not _SAFE_NAME.match(name):
                raise ValueError(f"service name {name!r}: only letters, digits and @_.:+- allowed")
        for fs in self.fstypes:
            if not _SAFE_FSTYPE.match(fs):
                raise ValueError(f"filesystem type {fs!r}: only a-z, 0-9, _, . and - allowed")
        paths = (*self.expected_mounts, self.sys_root, self.proc_root, self.run_root,
                 *self.path_prepend, *self.work_dirs, *((self.shim_root,) if self.shim_root else ()))
        for p in paths:
            if not p.startswith("/") or _CONTROL.search(p):
                raise ValueError(f"path {p!r}: must be absolute, without control characters")
        for p in self.work_dirs:
            if any(c.isspace() or c in "*?[" for c in p):
                raise ValueError(f"work dir {p!r}: no spaces or glob characters")


def _q(value: str) -> str:
    return shlex.quote(value)


def _secs(value: float) -> str:
    """A duration for ``timeout``/``sleep``: plain decimal, no exponent."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _fstype_regex(fstypes: tuple[str, ...]) -> str:
    """An ERE for ``grep -E``: fstypes are ``[a-z0-9_.-]`` (validated), so only ``.`` needs escaping
    (``re.escape`` would write ``\\-``, which GNU grep ≥ 3.8 warns about on stderr)."""
    return " - (" + "|".join(f.replace(".", "\\.") for f in fstypes) + ") "


# awk over /proc: one fork for every resource figure. Prints "<tag> <original line>".
_RES_AWK = r"""
FILENAME ~ /\/stat$/ { if ($1 == "cpu" || $1 == "btime") print "stat " $0; else if ($1 ~ /^cpu[0-9]/) n++; next }
FILENAME ~ /loadavg$/ { print "loadavg " $0; next }
FILENAME ~ /meminfo$/ { if ($1 ~ /^(MemTotal|MemAvailable|SwapTotal|SwapFree):$/) print "meminfo " $0; next }
FILENAME ~ /diskstats$/ { if ($3 !~ /^(loop|ram|zram|sr|fd|dm-)/) print "diskstats " $0; next }
FILENAME ~ /dev$/ { if (FNR > 2) print "netdev " $0; next }
END { print "cpus " n }
"""

# Per GPU process: owner, command line (printable ASCII only), cgroup lines. $1 = proc root.
_PROCS_SH = r"""
P=$1; shift
for p; do
  echo "pid $p"
  if [ -r "$P/$p/status" ]; then
    while read -r k v r; do
      if [ "$k" = "Uid:" ]; then
        u=$(getent passwd "$v" 2>/dev/null | cut -d: -f1)
        echo "uid $v $u"; break
      fi
    done < "$P/$p/status"
    printf 'cmd '; tr '\000' ' ' < "$P/$p/cmdline" 2>/dev/null | tr -c '[:print:]' '?' | cut -c1-400; echo
    sed -n '1,8s/^/cgroup /p' "$P/$p/cgroup" 2>/dev/null
  else
    echo "gone"
  fi
done
"""

_XID_JOURNAL_SH = r"""
if [ -n "$1" ]; then
  journalctl -k -q -o short-unix --no-pager --show-cursor --after-cursor="$1"
else
  journalctl -k -q -o short-unix --no-pager --show-cursor -b
fi | grep -e 'NVRM: Xid' -e ': SXid (PCI:' -e '^-- cursor:' | tail -n 400
"""

_XID_DMESG_SH = r"""
dmesg 2>&1 | grep -e 'NVRM: Xid' -e ': SXid (PCI:' -e '^dmesg:' | tail -n 400
"""

_IB_SH = r"""
cd "$1/class/infiniband" 2>/dev/null || exit 0
shift
set -- */ports/*/state */ports/*/phys_state */ports/*/rate */ports/*/link_layer $@
exec grep -s -H '' "$@"
"""

_TEMPLATE = r"""# hpctui node probe, protocol @PROTOCOL@ (POSIX sh, generated by hpctui: do not edit)
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
LC_ALL=C
export PATH LC_ALL
IV_MS=@IV_MS@
PT=@PT@
MT=@MT@
MAXREC=@MAXREC@
SLOW=@SLOW@
JLINES=@JLINES@
SYS=@SYS@
PROC=@PROC@
RUN=@RUN@
SHIM=
@SHIM@
@PATHPRE@
umask 077
W=
for d in @WORKDIRS@; do
  if [ -d "$d" ] && [ -w "$d" ]; then W=$(mktemp -d "$d/hpctui-probe.XXXXXX" 2>/dev/null) && break; fi
done
if [ -z "$W" ]; then echo "@@hpctui fatal no writable work directory"; exit 1; fi
trap 'rm -rf "$W"' EXIT
trap 'exit 0' HUP INT TERM PIPE
HPCTUI_PROBE_PID=$$
export HPCTUI_PROBE_PID
printf '\n' > "$W/nl"
if sleep 0.01 2>/dev/null; then TICK=0.05; TICKS=@TICKS_FINE@; else TICK=1; TICKS=@TICKS_COARSE@; fi
have() { command -v "$1" >/dev/null 2>&1; }
if ! have timeout; then
  # No coreutils timeout on this node: a small stand-in with the same exit status (124).
  timeout() {
    [ "$1" = -k ] && shift 2
    _tt=$1; shift
    "$@" &
    _tp=$!
    ( sleep "$_tt" & _ts=$!
      trap 'kill "$_ts" 2>/dev/null; exit 0' TERM
      wait "$_ts"; kill -TERM "$_tp" 2>/dev/null; sleep 1; kill -KILL "$_tp" 2>/dev/null ) > /dev/null 2>&1 < /dev/null &
    _tw=$!
    wait "$_tp"; _tr=$?
    kill "$_tw" 2>/dev/null
    case $_tr in 143|137) _tr=124;; esac
    return "$_tr"
  }
fi
now_ns() {
  _t=$(date +%s%N 2>/dev/null)
  case $_t in ''|*[!0-9]*) _t=$(date +%s)000000000;; esac
  echo "$_t"
}
# st NAME TIMEOUT CMD...: start CMD under timeout in the background; never wait on it here.
st() {
  _n=$1; _t=$2; shift 2
  SECS="$SECS $_n"
  if [ -s "$W/$_n.pid" ] && [ ! -s "$W/$_n.rc" ]; then
    read -r _p < "$W/$_n.pid"
    if kill -0 "$_p" 2>/dev/null; then STUCK="$STUCK $_n "; return 0; fi
  fi
  rm -f "$W/$_n.rc"
  ( timeout -k 1 "$_t" "$@" > "$W/$_n.out" 2>&1 < /dev/null; echo "$?" > "$W/$_n.rc" ) &
  echo "$!" > "$W/$_n.pid"
  PEND="$PEND $_n"
}
# stt NAME TIMEOUT PATH: stat -f of a mount, recording when it started and ended (ns).
stt() {
  _n=$1; _t=$2; _m=$3
  SECS="$SECS $_n"
  if [ -s "$W/$_n.pid" ] && [ ! -s "$W/$_n.rc" ]; then
    read -r _p < "$W/$_n.pid"
    if kill -0 "$_p" 2>/dev/null; then STUCK="$STUCK $_n "; return 0; fi
  fi
  rm -f "$W/$_n.rc"
  ( _s=$(date +%s%N 2>/dev/null)
    timeout -k 1 "$_t" stat -f -- "$_m" > /dev/null 2> "$W/$_n.out" < /dev/null; _r=$?
    echo "$_r $_s $(date +%s%N 2>/dev/null)" > "$W/$_n.rc" ) &
  echo "$!" > "$W/$_n.pid"
  PEND="$PEND $_n"
}
# sy NAME CMD...: a probe that cannot block (reads of /proc), run in the foreground.
sy() {
  _n=$1; shift
  SECS="$SECS $_n"
  "$@" > "$W/$_n.out" 2>&1; echo "$?" > "$W/$_n.rc"
}
# sx NAME RC: a section whose output file is already written.
sx() { SECS="$SECS $1"; echo "$2" > "$W/$1.rc"; }
wt() {
  _k=0
  while :; do
    _l=
    for _n in $PEND; do [ -s "$W/$_n.rc" ] || _l="$_l $_n"; done
    PEND=$_l
    if [ -z "$PEND" ] || [ "$_k" -ge "$TICKS" ]; then return 0; fi
    sleep "$TICK"
    _k=$((_k + 1))
  done
}
rcof() { _rc=; [ -s "$W/$1.rc" ] && read -r _rc _x < "$W/$1.rc"; }
emit() {
  _f="$W/begin"
  for _n in $SECS; do
    _o="$W/$_n.out"; _x=
    case "$STUCK" in
      *" $_n "*) _rc=124; _late=2; _o=;;
      *) if [ -s "$W/$_n.rc" ]; then
           read -r _rc _x < "$W/$_n.rc"; _late=0
           case $_rc in 124|137) _late=1;; esac
         else _rc=124; _late=1; _o=; fi;;
    esac
    printf '@@hpctui section %s %s %s %s\n' "$_n" "$_rc" "$_late" "$_x" > "$W/$_n.h"
    _f="$_f $W/$_n.h $_o $W/nl"
  done
  cat $_f "$W/end"
}
GF=
NOGPU=
REMAP=
HELPTRIED=
gpu_fields() {
  _s=$SECS; _pd=$PEND
  PEND=
  st gpuhelp "$PT" nvidia-smi --help-query-gpu
  wt
  SECS=$_s; PEND=$_pd
  rcof gpuhelp
  GF=
  if [ "$_rc" = 0 ]; then
    HELPTRIED=1
    _h=$(cat "$W/gpuhelp.out")
    for _g in @GPU_GROUPS@; do
      _ifs=$IFS; IFS='|'; set -f; set -- $_g; set +f; IFS=$_ifs
      for _f; do case "$_h" in *"\"$_f\""*) GF="$GF${GF:+,}$_f"; break;; esac; done
    done
  fi
  case ",$GF," in *,index,*) ;; *) GF=@BASE_FIELDS@;; esac
  case ",$GF," in *,remapped_rows.correctable,*) REMAP=1;; *) REMAP=;; esac
}
@CONFIG@
CUR=
SEQ=0
while :; do
  SEQ=$((SEQ + 1))
  SECS= PEND= STUCK=
  SLOWREC=0
  [ $(((SEQ - 1) % SLOW)) -eq 0 ] && SLOWREC=1
  D0=$(now_ns)
  sx config 0
@GPU@
@XID@
@IB@
@SVC@
@MOUNTS@
@RES@
  wt
@ROUND2@
  wt
  printf '@@hpctui begin %s %s @PROTOCOL@\n' "$SEQ" "$D0" > "$W/begin"
  printf '@@hpctui end %s\n' "$SEQ" > "$W/end"
  emit || exit 0
@XIDCUR@
  if [ "$MAXREC" -gt 0 ] && [ "$SEQ" -ge "$MAXREC" ]; then break; fi
  _r=$(( IV_MS - ($(now_ns) - D0) / 1000000 ))
  [ "$_r" -lt 10 ] && _r=10
  sleep "$((_r / 1000)).$(printf '%03d' $((_r % 1000)))" 2>/dev/null || sleep $(((_r + 999) / 1000))
done
exit 0
"""

_SHIM = r"""SHIM=@SHIMROOT@
_node=${HPCTUI_SHIM_NODE:-}
if [ -z "$_node" ] && [ -n "${SSH_CONNECTION:-}" ]; then set -f; set -- $SSH_CONNECTION; set +f; _node=${3:-}; fi
case $_node in ''|*/*|.*) _node=_default;; esac
[ -d "$SHIM/nodes/$_node" ] || _node=_default
HPCTUI_SHIM_NODE=$_node
HPCTUI_SHIM_ROOT=$SHIM
export HPCTUI_SHIM_NODE HPCTUI_SHIM_ROOT
SYS=$SHIM/nodes/$_node/sys
PROC=$SHIM/nodes/$_node/proc
RUN=$SHIM/nodes/$_node/run
PATH=$SHIM/bin:$PATH
"""

_GPU = r"""  if [ -z "$NOGPU" ]; then
    if ! have nvidia-smi; then NOGPU=1
    elif [ -z "$HELPTRIED" ]; then gpu_fields
    fi
  fi
  if [ -n "$NOGPU" ]; then
    echo "nvidia-smi: not found" > "$W/gpu.out"; sx gpu 127
  else
    printf '%s\n' "$GF" > "$W/gpu-fields.out"; sx gpu-fields 0
    st gpu "$PT" nvidia-smi --query-gpu="$GF" --format=csv,noheader,nounits
    [ -n "$REMAP" ] || st gpu-remap "$PT" nvidia-smi --query-remapped-rows=gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv,noheader,nounits
    st gpu-apps "$PT" nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits
    if [ "$SLOWREC" = 1 ]; then
      st gpu-list "$PT" nvidia-smi -L
      st nvlink "$PT" nvidia-smi nvlink -s
      st nvlink-err "$PT" nvidia-smi nvlink -e
    fi
  fi"""

_GPU_ROUND2 = r"""  if [ -z "$NOGPU" ]; then
    rcof gpu
    if [ "$_rc" != 0 ] && grep -q 'not a valid field' "$W/gpu.out" 2>/dev/null; then GF=@BASE_FIELDS@; REMAP=; fi
    rcof gpu-apps
    _pids=
    if [ "$_rc" = 0 ]; then
      while IFS=', ' read -r _p _rest; do
        case $_p in ''|*[!0-9]*) ;; *) _pids="$_pids $_p";; esac
      done < "$W/gpu-apps.out"
    fi
    [ -n "$_pids" ] && st gpu-procs "$PT" sh -c @PROCS_SH@ sh "$PROC" $_pids
    rcof gpu-list
    if [ "$SLOWREC" = 1 ] && [ "$_rc" = 0 ] && grep -q '^ *MIG ' "$W/gpu-list.out"; then
      st mig-gi "$PT" nvidia-smi mig -lgi
      st mig-ci "$PT" nvidia-smi mig -lci
      st gpu-mem "$PT" nvidia-smi -q -d MEMORY
    fi
  fi"""

_XID = r"""  if have journalctl; then
    st xid "$PT" sh -c @XID_JOURNAL_SH@ sh "$CUR"
  elif have dmesg; then
    st xid "$PT" sh -c @XID_DMESG_SH@ sh
  else
    echo "neither journalctl nor dmesg found" > "$W/xid.out"; sx xid 127
  fi"""

_XIDCUR = r"""  if [ -s "$W/xid.rc" ] && have journalctl; then
    while read -r _a _b _c; do [ "$_a $_b" = "-- cursor:" ] && CUR=$_c; done < "$W/xid.out"
  fi"""

_IB = r"""  if [ -d "$SYS/class/infiniband" ]; then
    st ib "$PT" sh -c @IB_SH@ sh "$SYS" @IB_COUNTERS@
  else
    : > "$W/ib.out"; sx ib 0
  fi"""

_SVC = r"""  if have systemctl && { [ -d "$RUN/systemd/system" ] || [ -n "$SHIM" ]; }; then
    st svc "$PT" systemctl show -p Id -p LoadState -p ActiveState -p SubState -- @SERVICES@
  else
    for _s in @SERVICES@; do
      _st=not-found
      for _pf in "$RUN/$_s.pid" "$RUN/$_s/$_s.pid"; do
        if [ -r "$_pf" ]; then
          _st=inactive; read -r _p _x < "$_pf"
          case $_p in ''|*[!0-9]*) ;; *) [ -d "$PROC/$_p" ] && _st=active;; esac
          break
        fi
      done
      echo "$_s $_st"
    done > "$W/svc-pid.out"
    sx svc-pid 0
  fi"""

_SVC_ROUND2 = r"""  rcof svc
  if [ -n "$_rc" ] && [ -s "$W/svc.out" ]; then
    _id=
    while IFS='=' read -r _k _v; do
      case $_k in
        Id) _id=$_v;;
        ActiveState) if [ "$_v" = failed ]; then
            case $_id in ''|*[!A-Za-z0-9@_.:+-]*) ;; *) st "journal.$_id" "$PT" journalctl -u "$_id" -n "$JLINES" --no-pager -q -o short-iso;; esac
          fi;;
      esac
    done < "$W/svc.out"
  fi"""

_MOUNTS = r"""  if [ -r "$PROC/self/mountinfo" ]; then
    grep -E @FSRE@ "$PROC/self/mountinfo" > "$W/mounts.out" 2>&1
    echo 0 > "$W/mounts.rc"; SECS="$SECS mounts"
    _nm=0
    while read -r _id _par _mm _root _mp _rest; do
      case $_id in ''|*[!0-9]*) continue;; esac
      _nm=$((_nm + 1))
      [ "$_nm" -gt @MAXMOUNTS@ ] && continue
      _path=$(printf '%b' "$_mp")
      stt "stat.$_id" "$MT" "$_path"
    done < "$W/mounts.out"
    if [ "$SLOWREC" = 1 ]; then
      if have lfs && grep -q ' - lustre ' "$W/mounts.out"; then st lfs "$PT" lfs check servers; st lfsdf "$PT" lfs df; fi
      if have lctl && grep -q ' - lustre ' "$W/mounts.out"; then
        st lctlimp "$PT" lctl get_param 'osc.*.ost_server_uuid' 'mdc.*.mds_server_uuid'
      fi
      if have beegfs-check-servers && grep -q ' - beegfs ' "$W/mounts.out"; then st beegfs "$PT" beegfs-check-servers; fi
      if have beegfs-ctl && grep -q ' - beegfs ' "$W/mounts.out"; then
        st beegfstgt "$PT" beegfs-ctl --listtargets --nodetype=storage --state
      fi
    fi
  else
    echo "mountinfo not readable" > "$W/mounts.out"; sx mounts 2
  fi"""

_RES = '  sy res awk @RES_AWK@ "$PROC/loadavg" "$PROC/stat" "$PROC/meminfo" "$PROC/diskstats" "$PROC/net/dev"'


def _ticks(*timeouts: float, tick: float) -> int:
    return int((max(timeouts) + 1.5) / tick) + 1


def build_probe_script(interval_s: float | None = None, options: ProbeOptions | None = None) -> str:
    """The POSIX ``sh`` text of the probe loop for ``options`` (``interval_s`` overrides theirs)."""
    opts = options or ProbeOptions()
    if interval_s is not None:
        opts = msgspec.structs.replace(opts, interval_s=interval_s)
    groups = " ".join(_q("|".join(g)) for g in GPU_FIELD_GROUPS)
    base = _q(",".join(BASE_GPU_FIELDS))
    config_lines = [f"slow_ms {opts.slow_mount_ms}", f"interval_ms {int(opts.interval_s * 1000)}",
                    f"mount_timeout_s {_secs(opts.mount_timeout_s)}"]
    config = "{ " + " ; ".join(f"echo {_q(x)}" for x in config_lines)
    if opts.expected_mounts:
        config += " ; printf 'expect %s\\n' " + " ".join(_q(m) for m in opts.expected_mounts)
    config += "; } > \"$W/config.out\""
    services = " ".join(_q(s) for s in opts.service_names)

    def sub(text: str, mapping: dict[str, str]) -> str:
        for key, value in mapping.items():
            text = text.replace(f"@{key}@", value)
        return text

    parts = {
        "GPU": _GPU if opts.gpus else "",
        "XID": _XID if opts.xid else "",
        "IB": _IB if opts.ib else "",
        "SVC": _SVC if opts.services and opts.service_names else "",
        "MOUNTS": _MOUNTS if opts.mounts else "",
        "RES": _RES if opts.resources else "",
        "ROUND2": "\n".join(p for p in (
            _GPU_ROUND2 if opts.gpus else "",
            _SVC_ROUND2 if opts.services and opts.service_names else "",
        ) if p) or "  :",
        "XIDCUR": _XIDCUR if opts.xid else "  :",
    }
    script = sub(_TEMPLATE, parts)
    script = sub(script, {
        "PROTOCOL": str(PROTOCOL),
        "IV_MS": str(int(opts.interval_s * 1000)),
        "PT": _secs(opts.probe_timeout_s),
        "MT": _secs(opts.mount_timeout_s),
        "MAXREC": str(opts.max_records),
        "SLOW": str(opts.slow_every),
        "JLINES": str(opts.journal_lines),
        "SYS": _q(opts.sys_root),
        "PROC": _q(opts.proc_root),
        "RUN": _q(opts.run_root),
        "SHIM": sub(_SHIM, {"SHIMROOT": _q(opts.shim_root)}) if opts.shim_root else "",
        "PATHPRE": ("PATH=" + ":".join(_q(p) for p in opts.path_prepend) + ":$PATH") if opts.path_prepend else "",
        "WORKDIRS": " ".join(_q(d) for d in opts.work_dirs),
        "TICKS_FINE": str(_ticks(opts.probe_timeout_s, opts.mount_timeout_s, tick=0.05)),
        "TICKS_COARSE": str(_ticks(opts.probe_timeout_s, opts.mount_timeout_s, tick=1.0)),
        "CONFIG": config,
        "GPU_GROUPS": groups,
        "BASE_FIELDS": base,
        "PROCS_SH": _q(_PROCS_SH),
        "XID_JOURNAL_SH": _q(_XID_JOURNAL_SH),
        "XID_DMESG_SH": _q(_XID_DMESG_SH),
        "IB_SH": _q(_IB_SH),
        "IB_COUNTERS": " ".join(_q(f"*/ports/*/counters/{c}") for c in IB_COUNTERS),
        "SERVICES": services,
        "FSRE": _q(_fstype_regex(opts.fstypes)),
        "MAXMOUNTS": str(opts.max_mount_probes),
        "RES_AWK": _q(_RES_AWK),
    })
    return script


def remote_command(script: str) -> str:
    """The command line for an SSH exec channel: ``exec sh -c '<script>'``.

    Works under any POSIX login shell (bash, dash, zsh, ksh). For csh-family login shells,
    send ``exec sh -s`` as the command and write the script to the channel's stdin instead.
    """
    return "exec sh -c " + shlex.quote(script)
