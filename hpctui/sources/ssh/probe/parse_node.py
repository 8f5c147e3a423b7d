"""Pure parsers of what the probe reads off a node besides nvidia-smi: kernel log (Xid),
InfiniBand sysfs, mountinfo and mount liveness, services, and /proc resources.

Formats: FACTS §1 (Xid regex), §4 (IB sysfs), §5 (mountinfo, mount states). Every string
that reaches the model goes through :func:`hpctui.base.sanitize.clean_text`.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterable, MutableMapping
from datetime import datetime

import msgspec

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.model.mount import Mount, MountState
from hpctui.model.probe import ServiceState, ServiceStatus
from hpctui.model.validate import COUNT, COUNTER, COUNTER_LIMIT, EPOCH_S, LOAD, MEMORY_KIB, XID, Drops, ib_rate_ok

# ---------------------------------------------------------------- Xid

XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)(?: GPU-I:(\d+))?\): (\d+), (.*)")  # FACTS §1
# The process the driver names first: "pid='<unknown>', name=<unknown>, …" (R5xx), "pid=2024380, name=nvidia-smi, …",
# or "pid=7194, Contained: …" (no name). Real lines: tests/fixtures/probes/dmesg-*.log.
_XID_PID = re.compile(r"^pid=('?<unknown>'?|\d{1,10}),(?: name=(<unknown>|[^,\s]{1,64}),)? ")
# NVSwitch driver: "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 …" (FACTS §8).
SXID_RE = re.compile(r"(nvidia-nvswitch\d{1,4}): SXid \(PCI:([0-9a-fA-F:.]+)\): (\d+), (.*)")
_SXID_CLASS = re.compile(r"^(Fatal|Non-fatal)(?:,\s*|$)")
_T_UNIX = re.compile(r"^(\d{9,11}\.\d+)\s")  # journalctl -o short-unix
_T_MONO = re.compile(r"^\[\s*(\d+\.\d+)\]")  # dmesg
_T_HUMAN = re.compile(r"^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]")  # dmesg -T
_T_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[,.]\d+)?(?:[+-]\d\d:?\d\d|Z)?)")  # --time-format iso


class XidLine(msgspec.Struct, frozen=True, kw_only=True):
    time: float | None  # None: the line carries no time the parser understands
    pci_bus_id: str
    gpu_instance: int | None
    xid: int
    message: str
    raw: str
    pid: int | None = None
    process: str | None = None


def split_xid_process(message: str) -> tuple[str, int | None, str | None]:
    """``pid=…, name=…, <text>`` → (text, pid, process name); ``'<unknown>'`` is None."""
    m = _XID_PID.match(message)
    if not m:
        return message, None, None
    pid = int(m.group(1)) if m.group(1).isdigit() else None
    name = m.group(2) if m.group(2) and m.group(2) != "<unknown>" else None
    return message[m.end():].strip(), pid, clean_text(name) if name else None


def xid_time(line: str, boot_time: float | None) -> float | None:
    if m := _T_UNIX.match(line):
        return float(m.group(1))
    if m := _T_MONO.match(line):
        return None if boot_time is None else boot_time + float(m.group(1))
    if m := _T_HUMAN.match(line):
        try:
            return time.mktime(time.strptime(m.group(1), "%a %b %d %H:%M:%S %Y"))
        except ValueError:
            return None
    if m := _T_ISO.search(line.split("NVRM:", 1)[0]):
        try:
            dt = datetime.fromisoformat(m.group(1).replace(",", "."))
        except ValueError:
            return None
        return dt.timestamp() if dt.tzinfo else float(calendar.timegm(dt.timetuple()))
    return None


def parse_xid_lines(text: str, boot_time: float | None = None, drops: Drops | None = None,
                    node: str = "", seen: MutableMapping[str, None] | None = None) -> list[XidLine]:
    """Every ``NVRM: Xid`` line of a kernel log excerpt (journalctl, dmesg, dmesg -T, iso).

    A line whose Xid is not a plausible code (:data:`hpctui.model.validate.XID`) is dropped, recorded in ``drops``.
    With ``seen``: a line (stripped) already in it is skipped, kept or dropped alike, and each line read is
    added, so that a line of an excerpt read again is neither an event nor a warning twice."""
    out = []
    for line in text.splitlines():
        m = XID_RE.search(line)
        if not m:
            continue
        if seen is not None:
            raw = line.strip()
            if raw in seen:
                continue
            seen[raw] = None
        code = m.group(3)
        xid = int(code) if len(code) < 6 else -1  # digits only: 6+ of them is no Xid (nor a 5000-digit int())
        if not XID.ok(xid):
            if drops is not None:
                drops.value("Xid", int(code) if len(code) < 4000 else code[:20] + "…", node)
            continue
        message, pid, process = split_xid_process(m.group(4).strip())
        out.append(XidLine(
            time=xid_time(line, boot_time),
            pci_bus_id=m.group(1).lower(),
            gpu_instance=int(m.group(2)) if m.group(2) and len(m.group(2)) < 6 else None,
            xid=xid,
            message=clean_text(message),
            raw=line.strip(),
            pid=pid,
            process=process,
        ))
    return out


class SxidLine(msgspec.Struct, frozen=True, kw_only=True):
    time: float | None
    switch: str  # "nvidia-nvswitch3"
    pci_bus_id: str
    sxid: int
    fatal: bool | None  # None: a detail line ("Severity 1 Engine instance …", "Data {…}")
    message: str
    raw: str


def parse_sxid_lines(text: str, boot_time: float | None = None, drops: Drops | None = None,
                     node: str = "") -> list[SxidLine]:
    """The NVSwitch SXid events of a kernel log excerpt, one per headline line (FACTS §8).

    One event spans several lines with the same SXid: the headline (``Fatal, Link 48 LTSSM Fault Up`` /
    ``Non-fatal, …``) and detail lines (``Severity 1 Engine instance …``, ``Data {…}``). Detail lines are
    dropped when a headline of the same switch and SXid is in the excerpt; alone, they stand for their
    event (class unknown). An SXid outside 1..99999 is dropped, recorded in ``drops``."""
    heads: list[SxidLine] = []
    details: list[SxidLine] = []
    for line in text.splitlines():
        if "SXid (" not in line:
            continue
        m = SXID_RE.search(line)
        if not m:
            continue
        code = m.group(3)
        sxid = int(code) if len(code) < 7 else -1
        if not 1 <= sxid <= 99999:
            if drops is not None:
                drops.value("SXid", sxid if sxid >= 0 else code[:20] + "…", node)
            continue
        rest = m.group(4).strip()
        cm = _SXID_CLASS.match(rest)
        fatal = None if cm is None else cm.group(1) == "Fatal"
        x = SxidLine(time=xid_time(line[:m.start()], boot_time), switch=m.group(1),
                     pci_bus_id=m.group(2).lower(), sxid=sxid, fatal=fatal,
                     message=clean_text(rest[cm.end():] if cm else rest)[:300], raw=line.strip())
        (details if fatal is None else heads).append(x)
    headed = {(h.switch, h.sxid) for h in heads}
    alone: dict[tuple[str, int], SxidLine] = {}
    for d in details:
        if (d.switch, d.sxid) not in headed:
            alone.setdefault((d.switch, d.sxid), d)
    return sorted([*heads, *alone.values()], key=lambda x: (x.time or 0.0))


# ---------------------------------------------------------------- InfiniBand

class IbRaw(msgspec.Struct, kw_only=True):
    device: str
    port: int
    state: str | None = None
    phys_state: str | None = None
    rate_text: str | None = None
    rate_gbps: float | None = None
    link_layer: str | None = None
    counters: dict[str, int] = msgspec.field(default_factory=dict)


_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")
_IB_LINE = re.compile(r"^(?:[^\n:]*?class/infiniband/)?([^/\n:]+)/ports/(\d+)/(?:(counters)/)?([^/\n:]+):(.*)$", re.M)
_STATE_CACHE: dict[str, str] = {}


def _after_colon_number(value: str) -> str:
    """``"4: ACTIVE"`` → ``"ACTIVE"`` (sysfs ``"%d: %s"``), sanitised; the few distinct values are cached."""
    cached = _STATE_CACHE.get(value)
    if cached is None:
        head, sep, tail = value.partition(":")
        cached = clean_text(tail.strip() if sep and head.strip().isdigit() else value.strip())
        if len(_STATE_CACHE) < 512:
            _STATE_CACHE[value] = cached
    return cached


def parse_ib_sysfs(text: str, drops: Drops | None = None, node: str = "") -> list[IbRaw]:
    """``grep -H`` lines of ``…/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer,counters/*}``.

    Paths may be absolute (``/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE``) or relative
    to ``class/infiniband``. Files other than those are ignored. A counter beyond 2**63 or a rate
    that is no InfiniBand link rate is N/A, recorded in ``drops``.
    """
    ports: dict[tuple[str, str], IbRaw] = {}
    for dev, port, counters, leaf, value in _IB_LINE.findall(text):
        raw = ports.get((dev, port))
        if raw is None:
            raw = ports[(dev, port)] = IbRaw(device=clean_text(dev), port=int(port))
        if counters:
            v = value.strip()
            if is_uint(v):
                n = int(v) if len(v) < 20 else COUNTER_LIMIT  # 20+ digits is beyond 2**63
                if COUNTER.ok(n):
                    raw.counters[clean_text(leaf)] = n
                elif drops is not None:
                    shown = int(v) if len(v) < 4000 else v[:20] + "…"
                    drops.value(f"{clean_text(dev)}/{port} {clean_text(leaf)}", shown, node)
        elif leaf == "state":
            raw.state = _after_colon_number(value)
        elif leaf == "phys_state":
            raw.phys_state = _after_colon_number(value)
        elif leaf == "rate":
            raw.rate_text = _after_colon_number(value)
            m = _RATE.match(value)
            raw.rate_gbps = float(m.group(1)) if m else None
            if raw.rate_gbps is not None and not ib_rate_ok(raw.rate_gbps):
                if drops is not None:
                    drops.value(f"{clean_text(dev)}/{port} rate", raw.rate_gbps, node)
                raw.rate_gbps = None
        elif leaf == "link_layer":
            raw.link_layer = _after_colon_number(value)
    return sorted(ports.values(), key=lambda r: (r.device, r.port))


# ---------------------------------------------------------------- mounts

class MountInfo(msgspec.Struct, frozen=True, kw_only=True):
    mount_id: int
    target: str
    fstype: str
    source: str
    read_only: bool


_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape_mount_path(value: str) -> str:
    """mountinfo paths are octal-escaped (``\\040`` = space)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), value)


def parse_mountinfo(text: str, fstypes: Iterable[str] | None = None) -> list[MountInfo]:
    """``/proc/<pid>/mountinfo`` lines (proc_pid_mountinfo(5)); the last mount of a target wins."""
    wanted = set(fstypes) if fstypes is not None else None
    by_target: dict[str, MountInfo] = {}
    for line in text.splitlines():
        fields = line.split()
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3 or not is_uint(fields[0]):
            continue
        fstype = fields[sep + 1]
        if wanted is not None and fstype not in wanted:
            continue
        options = set(fields[5].split(",")) | set(fields[sep + 3].split(",") if len(fields) > sep + 3 else ())
        target = clean_text(unescape_mount_path(fields[4]))
        by_target[target] = MountInfo(
            mount_id=int(fields[0]), target=target, fstype=clean_text(fstype),
            source=clean_text(unescape_mount_path(fields[sep + 2])), read_only="ro" in options)
    return list(by_target.values())


class StatResult(msgspec.Struct, frozen=True, kw_only=True):
    rc: int | None
    late: bool
    latency_ms: float | None
    error: str | None


def mount_state(info: MountInfo, stat: StatResult | None, slow_ms: float,
                fs_problem: str | None = None) -> Mount:
    """ok / slow / hung / read-only / degraded, FACTS §5."""
    state, detail, latency = MountState.UNKNOWN, None, None
    if stat is not None:
        latency = stat.latency_ms
        if stat.late:
            state, detail = MountState.HUNG, "stat -f did not return in time"
        elif stat.rc not in (0, None):
            state, detail = MountState.DEGRADED, stat.error or f"stat -f exit {stat.rc}"
        elif latency is not None and latency > slow_ms:
            state = MountState.SLOW
        else:
            state = MountState.OK
    if state in (MountState.OK, MountState.SLOW, MountState.UNKNOWN) and info.read_only:
        state = MountState.READ_ONLY
    if fs_problem and state in (MountState.OK, MountState.SLOW, MountState.UNKNOWN):
        state, detail = MountState.DEGRADED, fs_problem
    return Mount(node="", target=info.target, fstype=info.fstype, source=info.source, state=state,
                 latency_ms=latency, detail=clean_text(detail) if detail else None)


def parse_lfs_check_servers(text: str) -> list[str]:
    """Problems in ``lfs check servers`` output: ``<obd> inactive.`` / ``error: check '<obd>'``."""
    bad = []
    for line in text.splitlines():
        s = line.strip()
        if s.endswith(" inactive.") or s.startswith("error:"):
            bad.append(clean_text(s))
    return bad


def parse_beegfs_check_servers(text: str) -> list[str]:
    """Problems in ``beegfs-check-servers`` output. The script (BeeGFS 7.4.7 utils/scripts/beegfs-check-servers)
    prints a ``Management`` / ``Metadata`` / ``Storage`` heading, then per server ``<node> [ID: n]: reachable at
    <ip:port> (protocol: TCP)`` or ``<node> [ID: n]: UNREACHABLE``; when beegfs-ctl fails it prints beegfs-ctl's
    own error text instead. Problems: the UNREACHABLE lines and error lines (``Error…``/``error:…`` at the
    start: a server named ``error-stor1`` that is reachable is not one)."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.endswith(": UNREACHABLE") or re.match(r"(?i)error\b(?!-)", line):
            out.append(clean_text(line))
    return out


# ---------------------------------------------------------------- services

_ACTIVE = {
    "active": ServiceStatus.ACTIVE, "reloading": ServiceStatus.ACTIVE, "inactive": ServiceStatus.INACTIVE,
    "deactivating": ServiceStatus.INACTIVE, "failed": ServiceStatus.FAILED,
    "activating": ServiceStatus.ACTIVATING,
}


def unit_name(unit_id: str) -> str:
    return unit_id[:-len(".service")] if unit_id.endswith(".service") else unit_id


def parse_systemctl_show(node: str, text: str) -> list[ServiceState]:
    """``systemctl show -p Id -p LoadState -p ActiveState -p SubState -- units…`` (blank-line separated)."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        unit = props.get("Id")
        if not unit:
            continue
        if props.get("LoadState") == "not-found":
            status = ServiceStatus.NOT_FOUND
        else:
            status = _ACTIVE.get(props.get("ActiveState", ""), ServiceStatus.UNKNOWN)
        sub = props.get("SubState")
        out.append(ServiceState(node=node, name=clean_text(unit_name(unit)), status=status,
                                detail=clean_text(sub) if sub and status not in (ServiceStatus.ACTIVE, ServiceStatus.NOT_FOUND)
                                else None))
    return out


def parse_service_pids(node: str, text: str) -> list[ServiceState]:
    """The ``svc-pid`` section of nodes without systemd: ``<name> active|inactive|not-found``."""
    out = []
    for line in text.splitlines():
        name, _, state = line.strip().partition(" ")
        if name:
            status = {"active": ServiceStatus.ACTIVE, "inactive": ServiceStatus.INACTIVE,
                      "not-found": ServiceStatus.NOT_FOUND}.get(state.strip(), ServiceStatus.UNKNOWN)
            out.append(ServiceState(node=node, name=clean_text(name), status=status))
    return out


# ---------------------------------------------------------------- resources

class ProcSample(msgspec.Struct, kw_only=True):
    load: tuple[float, float, float] | None = None
    cpu_busy: int | None = None  # jiffies
    cpu_total: int | None = None
    cpu_count: int | None = None
    boot_time: float | None = None
    mem_kib: dict[str, int] = msgspec.field(default_factory=dict)
    disk_io_ms: dict[str, int] = msgspec.field(default_factory=dict)
    nic: dict[str, tuple[int, int, int]] = msgspec.field(default_factory=dict)  # rx bytes, tx bytes, errors


_PARTITION = re.compile(r"^(?:(?:sd|vd|xvd|hd)[a-z]+\d+|nvme\d+n\d+p\d+|mmcblk\d+p\d+)$")


class _Implausible(ValueError):
    """A /proc value outside its plausible range: the line is skipped, the value recorded."""

    def __init__(self, field: str, value: object) -> None:
        super().__init__(field)
        self.field, self.value = field, value


def _counters(field: str, values: Iterable[str]) -> list[int]:
    """Non-negative integer counters below 2**63 (:data:`hpctui.model.validate.COUNTER`), else _Implausible."""
    out = []
    for x in values:
        n = int(x)  # ValueError: not a number (the line is skipped, as before)
        if not COUNTER.ok(n):
            raise _Implausible(field, n)
        out.append(n)
    return out


def parse_proc_resources(text: str, drops: Drops | None = None, node: str = "") -> ProcSample:
    """The ``res`` section: ``<tag> <line of /proc/…>`` as printed by the probe's awk.

    A value outside its plausible range (a negative or beyond-2**63 counter, an infinite load, an
    exabyte of memory) leaves its line out (N/A), recorded in ``drops``."""
    s = ProcSample()
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        f = rest.split()
        try:
            if tag == "loadavg" and len(f) >= 3:
                load = (float(f[0]), float(f[1]), float(f[2]))
                if not all(LOAD.ok(v) for v in load):
                    raise _Implausible("load", next(v for v in load if not LOAD.ok(v)))
                s.load = load
            elif tag == "stat" and f and f[0] == "cpu":
                vals = _counters("cpu jiffies", f[1:9])
                total = sum(vals)
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                s.cpu_busy, s.cpu_total = total - idle, total
            elif tag == "stat" and f and f[0] == "btime" and len(f) > 1:
                boot = float(f[1])
                if not EPOCH_S.ok(boot):
                    raise _Implausible("btime", boot)
                s.boot_time = boot
            elif tag == "meminfo" and len(f) >= 2:
                kib = int(f[1])
                if not MEMORY_KIB.ok(kib):
                    raise _Implausible(clean_text(f[0].rstrip(":"))[:40], kib)
                s.mem_kib[f[0].rstrip(":")] = kib
            elif tag == "diskstats" and len(f) >= 13:
                name = f[2]
                if not _PARTITION.match(name):
                    s.disk_io_ms[clean_text(name)] = _counters(f"{clean_text(name)[:40]} io ms", f[12:13])[0]
            elif tag == "netdev":
                name, _, counters = rest.partition(":")
                c = counters.split()
                name = name.strip()
                if len(c) >= 11 and name and name != "lo":
                    rx, tx, rx_err, tx_err = _counters(f"{clean_text(name)[:40]} counters", (c[0], c[8], c[2], c[10]))
                    s.nic[clean_text(name)] = (rx, tx, rx_err + tx_err)
            elif tag == "cpus" and f and is_uint(f[0]) and int(f[0]) > 0:
                if not COUNT.ok(int(f[0])):
                    raise _Implausible("cpus", int(f[0]))
                s.cpu_count = int(f[0])
        except _Implausible as bad:
            if drops is not None:
                drops.value(bad.field, bad.value, node)
        except (ValueError, IndexError):
            continue
    return s
