"""Records of the probe loop: split a byte stream into records, parse one record into the model.

One bad record costs that record only: garbage between records, binary (NUL) bytes, invalid
UTF-8, an oversized or cut record (a new ``begin`` before the ``end``, a mismatched ``end``)
are dropped with a warning, and the splitter resynchronises on the next ``begin`` line.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import msgspec

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.model.common import Severity
from hpctui.model.event import Event
from hpctui.model.gpu import XID_ACTION, XID_MEANING, Gpu, XidEvent, xid_severity
from hpctui.model.ib import IbPort
from hpctui.model.mount import FsTarget, Mount, MountState, TargetState
from hpctui.model.nvswitch import SXID_MEANING, NvSwitch, SxidEvent, sxid_class, sxid_severity
from hpctui.model.probe import GpuProcess, NodeResources, NvLink, ServiceState, ServiceStatus
from hpctui.model.validate import BYTE_RATE, Drops
from hpctui.sources.ssh.probe import parse_gpu as pg
from hpctui.sources.ssh.probe import parse_node as pn
from hpctui.sources.ssh.probe import parse_pfs as pp

_BEGIN = b"@@hpctui begin "
_END = b"@@hpctui end "
_LINE_BEGIN = b"\n" + _BEGIN
_LINE_END = b"\n" + _END
MAX_RECORD_BYTES = 8 << 20
XID_KEEP_PER_GPU = 20
SXID_KEEP_PER_SWITCH = 20
MAX_NVSWITCHES = 64  # a node has at most a dozen (HGX B200: 2, DGX-2: 12); more is garbage
XID_SEEN_MAX = 5000


class RecordSplitter:
    """Feed bytes as they arrive; get back complete records as text.

    ``warnings`` collects one line per dropped piece; the caller drains it with
    :meth:`take_warnings` and shows it next to the node (never raises on bad input).
    """

    def __init__(self, max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_record_bytes
        self.warnings: list[str] = []
        self.records = 0
        self.dropped = 0

    def take_warnings(self) -> list[str]:
        out, self.warnings = self.warnings, []
        return out

    def end_of_stream(self) -> None:
        """The channel closed (or is being reconnected): a partial record is lost, with a warning."""
        if self._find_begin() >= 0:
            self._drop("record cut off (stream ended mid-record)")
        elif self._buf.strip():
            self._drop(f"{len(self._buf)} bytes outside a record dropped")
        self._buf.clear()

    def _drop(self, why: str) -> None:
        self.dropped += 1
        self.warnings.append(why)

    def _find_begin(self, start: int = 0) -> int:
        """Index of the next ``@@hpctui begin`` at a line start, or -1."""
        if start == 0 and self._buf.startswith(_BEGIN):
            return 0
        i = self._buf.find(_LINE_BEGIN, max(0, start - 1))
        return -1 if i < 0 else i + 1

    def feed(self, data: bytes) -> list[str]:
        self._buf += data
        out: list[str] = []
        while True:
            b = self._find_begin()
            if b < 0:
                # Keep only a tail that could be the start of a begin line.
                keep = len(_BEGIN)
                if len(self._buf) > keep:
                    junk = self._buf[:-keep]
                    if junk.strip():
                        self._drop(f"{len(junk)} bytes outside a record dropped")
                    del self._buf[:-keep]
                return out
            if b > 0:
                if self._buf[:b].strip():
                    self._drop(f"{b} bytes outside a record dropped")
                del self._buf[:b]
            nxt = self._find_begin(1)
            e = self._buf.find(_LINE_END)
            if nxt >= 0 and (e < 0 or nxt < e):
                self._drop("record cut off (a new record began before its end)")
                del self._buf[:nxt]
                continue
            if e < 0:
                if len(self._buf) > self._max:
                    self._drop(f"record larger than {self._max} bytes dropped")
                    del self._buf[:len(_BEGIN)]  # resync on the next begin
                    continue
                return out
            eol = self._buf.find(b"\n", e + 1)
            if eol < 0:
                return out
            raw = bytes(self._buf[:eol + 1])
            del self._buf[:eol + 1]
            text = self._decode(raw)
            if text is not None:
                self.records += 1
                out.append(text)

    def _decode(self, raw: bytes) -> str | None:
        if len(raw) > self._max:
            self._drop(f"record larger than {self._max} bytes dropped")
            return None
        if b"\x00" in raw:
            self._drop("record with binary (NUL) bytes dropped")
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._drop("record with invalid UTF-8 dropped")
            return None
        first, _, _ = text.partition("\n")
        last = text.rstrip("\n").rsplit("\n", 1)[-1]
        seq_b, seq_e = first.split()[2:3], last.split()[2:3]
        if not seq_b or seq_b != seq_e:
            self._drop("record with mismatched begin/end dropped")
            return None
        return text


class Section(msgspec.Struct, frozen=True):
    name: str
    rc: int | None
    late: int  # 0 in time, 1 late, 2 still stuck from an earlier record
    extra: str
    text: str


_SECTION_SEP = "\n@@hpctui section "
_END_SEP = "\n@@hpctui end "


def split_sections(text: str) -> tuple[int, float | None, dict[str, Section]]:
    """(seq, epoch seconds, sections) of one record."""
    chunks = text.split(_SECTION_SEP)
    head = chunks[0].partition("\n")[0]
    fields = head.split()
    seq = int(fields[2]) if len(fields) > 2 and is_uint(fields[2]) else -1
    epoch: float | None = None
    if len(fields) > 3 and is_uint(fields[3]) and len(fields[3]) <= 20:  # ns since 1970: 20 digits at most
        v = int(fields[3])
        epoch = v / 1e9 if v > 10**14 else float(v)  # the loop prints ns; seconds from old loops
    sections: dict[str, Section] = {}
    last = len(chunks) - 1
    for i in range(1, len(chunks)):
        chunk = chunks[i]
        if i == last:
            cut = chunk.find(_END_SEP)
            if cut >= 0:
                chunk = chunk[:cut]
        meta_line, _, body = chunk.partition("\n")
        meta = meta_line.split()
        if len(meta) < 3:
            continue
        if body.endswith("\n"):
            body = body[:-1]  # the separator newline the loop adds after each section
        rc = int(meta[1]) if is_uint(meta[1].removeprefix("-")) else None
        late = int(meta[2]) if is_uint(meta[2]) else 1
        name = clean_text(meta[0])
        sections[name] = Section(name, rc, late, " ".join(meta[3:]), body)
    return seq, epoch, sections


Fingerprint = tuple[int, int]  # (length, hash) of a section's text


def fingerprint(text: str | None) -> Fingerprint | None:
    """What the unchanged-section caches compare: the text's length and 64-bit ``hash()`` (salted per
    process, so another node's output cannot be made to collide), not the text itself. Keeping texts
    cost ~26 KiB per 8-GPU node (NVLink status and error counters, IB sysfs, mountinfo, services, lfs df)."""
    return None if text is None else (len(text), hash(text))


@dataclass
class ProbeState:
    """What one node's parser remembers between records (deltas, flaps, seen Xids, slow sections)."""

    last_seq: int | None = None
    last_epoch: float | None = None
    boot_time: float | None = None
    proc: pn.ProcSample | None = None
    ib_counters: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    ib_up: dict[tuple[str, int], bool] = field(default_factory=dict)
    ib_flaps: dict[tuple[str, int], int] = field(default_factory=dict)
    ib_last_down: dict[tuple[str, int], float] = field(default_factory=dict)
    ib_best_rate: dict[tuple[str, int], float] = field(default_factory=dict)
    xid_seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    xid_by_gpu: dict[str, list[XidEvent]] = field(default_factory=dict)  # bus key -> recent events
    nvlinks: dict[int, tuple[NvLink, ...]] = field(default_factory=dict)
    nvlink_unsupported: set[int] = field(default_factory=set)
    nvlink_notes: dict[int, str] = field(default_factory=dict)  # gpu index -> "none" | "inactive"
    sxid_by_switch: dict[str, NvSwitch] = field(default_factory=dict)  # switch name -> recent SXids
    nvswitches: tuple[NvSwitch, ...] = ()  # sxid_by_switch as shown: the same object while nothing changed
    mig_devices: list[pg.MigDevice] = field(default_factory=list)
    mig_lgi: list[pg.GpuInstanceRow] = field(default_factory=list)
    mig_lci: list[pg.ComputeInstanceRow] = field(default_factory=list)
    mig_memory: list[pg.MigMemory] = field(default_factory=list)
    mig_drops: Drops = field(default_factory=Drops)  # implausible values of mig_memory's text
    slow_ms: float = 1000.0
    # Parse caches: a section whose text did not change since the last record is not parsed again.
    nvlinks_steady: dict[int, tuple[NvLink, ...]] = field(default_factory=dict)  # deltas cleared
    nvlink_texts: tuple[Fingerprint | None, Fingerprint | None] = (None, None)
    nvlink_drops: Drops = field(default_factory=Drops)  # implausible values of nvlink_texts
    gpu_key: tuple[Fingerprint | None, Fingerprint | None] | None = None  # (gpu, gpu-fields)
    gpu_rows: list[Gpu] = field(default_factory=list)
    gpu_drops: Drops = field(default_factory=Drops)  # implausible values of gpu_rows' text
    ib_text: Fingerprint | None = None
    ib_steady: tuple[IbPort, ...] = ()
    ib_drops: Drops = field(default_factory=Drops)  # implausible values of ib_text
    mountinfo_text: Fingerprint | None = None
    mountinfo: list[pn.MountInfo] = field(default_factory=list)
    # lfs df / beegfs-ctl targets of the last slow record that had them (kept between slow records)
    lustre_targets: dict[str, tuple[FsTarget, ...]] = field(default_factory=dict)  # by mount point
    beegfs_targets: tuple[FsTarget, ...] = ()
    lfsdf_text: Fingerprint | None = None
    beegfstgt_text: Fingerprint | None = None
    # lctl's import state of every Lustre target this client holds, by (fs, target) (kept between slow records)
    lustre_imports: dict[tuple[str, str], tuple[TargetState, str]] = field(default_factory=dict)
    lctlimp_text: Fingerprint | None = None
    svc_text: Fingerprint | None = None
    # GPU processes per GPU index, kept while gpu-apps, gpu-procs and the GPUs' UUIDs are unchanged (a job's
    # processes stay for its lifetime: re-parsing them every record was ~11% of the SSH source's CPU)
    procs_key: tuple[object, ...] | None = None
    procs_by_gpu: dict[int | None, tuple[GpuProcess, ...]] = field(default_factory=dict)
    svc: list[ServiceState] = field(default_factory=list)


class ProbeReading(msgspec.Struct, frozen=True, kw_only=True):
    """One record of one node, as model objects. ``None`` parts: not in this record (keep the last)."""

    node: str
    time: float
    seq: int
    gpus: tuple[Gpu, ...] | None = None
    ib: tuple[IbPort, ...] | None = None
    mounts: tuple[Mount, ...] | None = None
    services: tuple[ServiceState, ...] | None = None
    resources: NodeResources | None = None
    nvswitches: tuple[NvSwitch, ...] | None = None  # the NVSwitches that logged SXids (None: log not read)
    events: tuple[Event, ...] = ()
    late_probes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _ok(sec: Section | None, *good: int) -> bool:
    return sec is not None and not sec.late and sec.rc in (good or (0,))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return clean_text(line.strip()[:200])
    return ""


def parse_record(node: str, text: str, state: ProbeState, now: float) -> ProbeReading:
    """One record (from :class:`RecordSplitter`) into a :class:`ProbeReading`; updates ``state``."""
    seq, epoch, secs = split_sections(text)
    t = epoch if epoch is not None else now
    warnings: list[str] = []
    late = tuple(sorted(name for name, s in secs.items() if s.late))
    for name in late:
        warnings.append(f"{name}: probe late" + (" (still stuck from an earlier record)"
                                                  if secs[name].late == 2 else ""))
    if state.last_seq is not None and seq == state.last_seq + 1 and state.last_epoch is not None:
        dt = t - state.last_epoch
    else:
        dt = None  # first record or a restarted loop: no rates this time
    config = secs.get("config")
    expected: list[str] = []
    if config is not None:
        for line in config.text.splitlines():
            key, _, value = line.partition(" ")
            if key == "slow_ms" and is_uint(value.strip()):
                state.slow_ms = float(value)
            elif key == "expect" and value:
                expected.append(clean_text(value))

    drops = Drops()  # implausible values in this record (hpctui.model.validate): N/A plus one warning
    resources = None
    res = secs.get("res")
    if res is not None and not res.late:
        sample = pn.parse_proc_resources(res.text, drops, node)
        if sample.boot_time is not None:
            state.boot_time = sample.boot_time
        resources = _resources(node, sample, state.proc if dt else None, dt, drops)
        state.proc = sample

    events: list[Event] = []
    xids = _xids(node, secs.get("xid"), state, warnings, drops)
    nvswitches = _sxids(node, secs.get("xid"), state, events, drops, t)
    gpus = _gpus(node, secs, state, warnings, xids, events, drops, t)
    ib = _ib(node, secs.get("ib"), state, t, warnings)
    if gpus:
        drops.merge(state.gpu_drops)
        drops.merge(state.nvlink_drops)
        drops.merge(state.mig_drops)
    if ib:
        drops.merge(state.ib_drops)
    warnings.extend(drops.warnings())
    mounts = _mounts(node, secs, state, expected, warnings)
    services = _services(node, secs, state, warnings)

    state.last_seq, state.last_epoch = seq, t
    return ProbeReading(node=node, time=t, seq=seq, gpus=gpus, ib=ib, mounts=mounts, services=services,
                        resources=resources, nvswitches=nvswitches, events=tuple(events), late_probes=late,
                        warnings=tuple(clean_text(w) for w in warnings))


def _resources(node: str, s: pn.ProcSample, prev: pn.ProcSample | None, dt: float | None,
               drops: Drops | None = None) -> NodeResources:
    """/proc sample → resources; rates from the previous sample. A NIC rate beyond any NIC's
    (hpctui.model.validate.BYTE_RATE: a forged counter jump) is N/A, recorded in ``drops``."""
    mem = s.mem_kib
    busy = None
    disk: dict[str, float] = {}
    rx: dict[str, float] = {}
    tx: dict[str, float] = {}
    errs: dict[str, int] = {}
    if prev is not None and dt and dt > 0:
        if None not in (s.cpu_busy, s.cpu_total, prev.cpu_busy, prev.cpu_total):
            dtot = s.cpu_total - prev.cpu_total  # type: ignore[operator]
            if dtot > 0:
                busy = max(0.0, min(100.0, 100.0 * (s.cpu_busy - prev.cpu_busy) / dtot))  # type: ignore[operator]
        for dev, ticks in s.disk_io_ms.items():
            if dev in prev.disk_io_ms and ticks >= prev.disk_io_ms[dev]:
                disk[dev] = min(100.0, (ticks - prev.disk_io_ms[dev]) / (dt * 10.0))
        for nic, (r, w, e) in s.nic.items():
            if nic in prev.nic:
                pr, pw, pe = prev.nic[nic]
                if r >= pr and w >= pw:
                    rx[nic], tx[nic] = (r - pr) / dt, (w - pw) / dt
                    if not (BYTE_RATE.ok(rx[nic]) and BYTE_RATE.ok(tx[nic])):
                        if drops is not None:
                            drops.value(f"{nic} B/s", max(rx[nic], tx[nic]), node)
                        del rx[nic], tx[nic]
                errs[nic] = max(0, e - pe)

    def mib(key: str) -> float | None:
        return mem[key] / 1024.0 if key in mem else None

    return NodeResources(
        node=node, load1=s.load[0] if s.load else None, load5=s.load[1] if s.load else None,
        load15=s.load[2] if s.load else None, cpu_busy_pct=busy, cpu_count=s.cpu_count,
        mem_total_mib=mib("MemTotal"), mem_available_mib=mib("MemAvailable"),
        swap_total_mib=mib("SwapTotal"), swap_free_mib=mib("SwapFree"),
        disk_busy_pct=disk, nic_rx_bps=rx, nic_tx_bps=tx, nic_errors=errs)


def _xids(node: str, sec: Section | None, state: ProbeState, warnings: list[str],
          drops: Drops) -> list[pn.XidLine]:
    if sec is None or sec.late:
        return []
    if sec.rc not in (0, 1):
        warnings.append(f"xid: kernel log not readable (exit {sec.rc}): {_first_line(sec.text)}")
        return []
    for line in sec.text.splitlines():
        if line.startswith("dmesg:"):
            warnings.append(f"xid: {clean_text(line[:200])}")
    new = pn.parse_xid_lines(sec.text, state.boot_time, drops, node, state.xid_seen)  # each line once
    while len(state.xid_seen) > XID_SEEN_MAX:
        state.xid_seen.popitem(last=False)
    return new


def _sxids(node: str, sec: Section | None, state: ProbeState, events: list[Event],
            drops: Drops, now: float) -> tuple[NvSwitch, ...] | None:
    """New SXid lines of the kernel-log section onto their NVSwitch (kept in ``state``), one event each;
    a line without a time of its own is dated ``now`` (the record's time).

    None when the log was not read this record (the node keeps its last NVSwitches)."""
    if sec is None or sec.late or sec.rc not in (0, 1):
        return None
    changed = False
    for x in pn.parse_sxid_lines(sec.text, state.boot_time, drops, node):
        if x.raw in state.xid_seen:
            continue
        state.xid_seen[x.raw] = None
        t = x.time if x.time is not None else now
        ev = SxidEvent(time=t, sxid=x.sxid, switch=x.switch, pci_bus_id=x.pci_bus_id, fatal=x.fatal,
                       message=x.message)
        sw = state.sxid_by_switch.get(x.switch)
        if sw is None and len(state.sxid_by_switch) >= MAX_NVSWITCHES:
            continue
        recent = (*(sw.sxid_events if sw is not None else ()), ev)[-SXID_KEEP_PER_SWITCH:]
        state.sxid_by_switch[x.switch] = NvSwitch(node=node, name=x.switch, pci_bus_id=x.pci_bus_id,
                                                  sxid_events=recent)
        changed = True
        meaning = SXID_MEANING.get(x.sxid) or sxid_class(x.sxid, x.fatal)
        events.append(Event(time=t, source="nvswitch", object=f"nvswitch/{node}/{x.switch}",
                            severity=sxid_severity(x.sxid, x.fatal),
                            message=clean_text(f"SXid {x.sxid} on {x.switch} ({x.pci_bus_id}): {meaning}"
                                               + f" — {x.message}"[:400])))
    while len(state.xid_seen) > XID_SEEN_MAX:
        state.xid_seen.popitem(last=False)
    if changed:
        state.nvswitches = tuple(state.sxid_by_switch[k] for k in sorted(state.sxid_by_switch))
    return state.nvswitches


def _gpus(node: str, secs: dict[str, Section], state: ProbeState, warnings: list[str],
          xids: list[pn.XidLine], events: list[Event], drops: Drops, now: float) -> tuple[Gpu, ...] | None:
    sec = secs.get("gpu")
    if sec is None:
        return None
    if not sec.late and (sec.rc == 127 or "No devices were found" in sec.text):
        return ()  # no nvidia-smi, or no NVIDIA GPU, on this node
    if not _ok(sec):
        if not sec.late:
            warnings.append(f"gpu: nvidia-smi exit {sec.rc}: {_first_line(sec.text)}")
        return None
    fields_sec = secs.get("gpu-fields")
    fields = [f for f in fields_sec.text.strip().split(",") if f] if fields_sec else []
    gpu_key = (fingerprint(sec.text), fingerprint(fields_sec.text) if fields_sec else None)
    if gpu_key == state.gpu_key:
        gpus = state.gpu_rows  # same text as the last record (an idle node): same values
    else:
        state.gpu_drops = Drops()
        gpus = pg.parse_query_gpu(node, sec.text, fields or None, state.gpu_drops)
        state.gpu_key, state.gpu_rows = gpu_key, gpus
    bad_rows = sec.text.count("\n") + 1 - len(gpus) if sec.text.strip() else 0
    if bad_rows > 0:
        warnings.append(f"gpu: {bad_rows} unparseable nvidia-smi row(s) dropped")
    remap = secs.get("gpu-remap")
    if _ok(remap):
        rows = pg.parse_remapped_rows(remap.text)  # type: ignore[union-attr]
        gpus = [pg.apply_remap(g, rows.get(g.uuid or "")) for g in gpus]
    # Slow sections: refresh the cached values when present.
    lst = secs.get("gpu-list")
    if _ok(lst):
        _, state.mig_devices = pg.parse_list_gpus(lst.text)  # type: ignore[union-attr]
        if not state.mig_devices:
            state.mig_lgi, state.mig_lci, state.mig_memory = [], [], []
    for name, attr, fn in (("mig-gi", "mig_lgi", pg.parse_mig_lgi), ("mig-ci", "mig_lci", pg.parse_mig_lci)):
        s = secs.get(name)
        if _ok(s):
            setattr(state, attr, fn(s.text))  # type: ignore[union-attr]
    mem_sec = secs.get("gpu-mem")
    if _ok(mem_sec):
        state.mig_drops = Drops()  # warned while these values are shown
        state.mig_memory = pg.parse_q_mig_memory(mem_sec.text, state.mig_drops, node)  # type: ignore[union-attr]
    nvs, nve = secs.get("nvlink"), secs.get("nvlink-err")
    status: dict[int, list[NvLink]] | None = None
    errors: dict[int, dict[int, dict[str, int]]] = {}
    nvs_text = nvs.text if nvs is not None and not nvs.late else None
    nve_text = nve.text if _ok(nve) else None  # type: ignore[union-attr]
    nv_key = (fingerprint(nvs_text), fingerprint(nve_text))
    if nv_key != (None, None) and nv_key == state.nvlink_texts:
        nvs_text = nve_text = None  # unchanged since the last read: links as they were, no deltas
    elif nv_key != (None, None):
        state.nvlink_texts = nv_key
        state.nvlink_drops = Drops()  # warned while the links read from these texts are shown
    if nvs_text is not None:
        status, state.nvlink_unsupported = pg.parse_nvlink_status(nvs_text, state.nvlink_drops, node)
        state.nvlink_notes = pg.parse_nvlink_notes(nvs_text)
    if nve_text is not None:
        errors = pg.parse_nvlink_errors(nve_text, state.nvlink_drops, node)
    # Processes.
    apps_sec, procs_sec = secs.get("gpu-apps"), secs.get("gpu-procs")
    apps_text = apps_sec.text if _ok(apps_sec) else None  # type: ignore[union-attr]
    procs_text = procs_sec.text if _ok(procs_sec) else None  # type: ignore[union-attr]
    by_uuid = {g.uuid: g.index for g in gpus if g.uuid}
    # MIG device UUIDs map to their parent GPU too.
    for d in state.mig_devices:
        by_uuid.setdefault(d.uuid, d.gpu)
    procs_by_gpu: dict[int | None, tuple[GpuProcess, ...]] | None = None
    if apps_text is not None:
        procs_key = (fingerprint(apps_text), fingerprint(procs_text), tuple(by_uuid.items()))
        if procs_key != state.procs_key:
            procs = pg.parse_procs(procs_text) if procs_text is not None else {}
            grouped: dict[int | None, list[GpuProcess]] = {}
            for p in pg.merge_processes(pg.parse_compute_apps(apps_text), procs, by_uuid):
                grouped.setdefault(p.gpu_index, []).append(p)
            state.procs_key = procs_key
            state.procs_by_gpu = {k: tuple(v) for k, v in grouped.items()}
        procs_by_gpu = state.procs_by_gpu
    # Xid events by bus id.
    by_bus = {pg.bus_key(g.pci_bus_id): g for g in gpus if g.pci_bus_id}
    for x in xids:
        key = pg.bus_key(x.pci_bus_id) or x.pci_bus_id
        gpu = by_bus.get(key)
        t = x.time if x.time is not None else now  # no time of its own: the record's
        ev = XidEvent(time=t, xid=x.xid, pci_bus_id=x.pci_bus_id, message=x.message, gpu_instance=x.gpu_instance,
                      pid=x.pid, process=x.process)
        lst_ev = state.xid_by_gpu.setdefault(key, [])
        lst_ev.append(ev)
        del lst_ev[:-XID_KEEP_PER_GPU]
        meaning = XID_MEANING.get(x.xid, "see NVIDIA's Xid catalogue")
        action = XID_ACTION.get(x.xid)
        obj = f"gpu/{node}/{gpu.index}" if gpu is not None else f"node/{node}"
        events.append(Event(time=t, source="gpu", object=obj, severity=xid_severity(x.xid),
                            message=clean_text(f"Xid {x.xid} on {x.pci_bus_id}"
                                               f"{f' GI {x.gpu_instance}' if x.gpu_instance is not None else ''}: "
                                               f"{meaning}" + (f"; action: {action}" if action else "")
                                               + f" — {x.message}"[:400]
                                               + (f" [pid {x.pid} {x.process or ''}]".replace(" ]", "]")
                                                  if x.pid is not None else ""))))
    out = []
    for g in gpus:
        upd: dict[str, object] = {}
        recent = state.xid_by_gpu.get(pg.bus_key(g.pci_bus_id) or "", [])
        if recent:
            upd["xid_events"] = tuple(recent)
            upd["last_xid"] = recent[-1].xid
        note = state.nvlink_notes.get(g.index)
        if note is not None:
            upd["nvlink_state"] = note
        if status is not None or errors:
            links = pg.merge_nvlinks((status or {}).get(g.index, []), errors.get(g.index, {}),
                                     g.index in state.nvlink_unsupported, state.nvlinks.get(g.index, ()))
            if status is None:  # errors only: keep the last known up/down
                prev = {link.link: link for link in state.nvlinks.get(g.index, ())}
                links = tuple(msgspec.structs.replace(link, up=prev[link.link].up, speed_gbps=prev[link.link].speed_gbps)
                              if link.link in prev else link for link in links)
            state.nvlinks[g.index] = links
        if status is not None or errors:
            state.nvlinks_steady.pop(g.index, None)
            if state.nvlinks.get(g.index):
                upd["nvlinks"] = state.nvlinks[g.index]
        elif state.nvlinks.get(g.index):  # no NVLink read in this record: the last one, without deltas
            steady = state.nvlinks_steady.get(g.index)
            if steady is None:
                steady = state.nvlinks_steady[g.index] = tuple(
                    pg.steady_link(msgspec.structs.replace(link, deltas={})) if link.deltas else link
                    for link in state.nvlinks[g.index])
            upd["nvlinks"] = steady
        if g.mig_mode_current and (state.mig_devices or state.mig_lgi):
            upd["mig_instances"] = pg.mig_instances(g, state.mig_devices, state.mig_lgi, state.mig_lci,
                                                    state.mig_memory)
        if procs_by_gpu is not None:
            upd["processes"] = procs_by_gpu.get(g.index, ())
        out.append(msgspec.structs.replace(g, **upd) if upd else g)
    return tuple(out)


def _ib(node: str, sec: Section | None, state: ProbeState, t: float,
        warnings: list[str]) -> tuple[IbPort, ...] | None:
    if sec is None or sec.late:
        return None
    if sec.rc not in (0, 1, 2):
        warnings.append(f"ib: sysfs read failed (exit {sec.rc})")
        return None
    ib_key = fingerprint(sec.text)
    if ib_key == state.ib_text:
        return state.ib_steady  # nothing changed: no deltas, no new flaps
    out = []
    state.ib_drops = Drops()
    for raw in pn.parse_ib_sysfs(sec.text, state.ib_drops, node):
        key = (raw.device, raw.port)
        prev = state.ib_counters.get(key)
        deltas = {}
        if prev is not None:
            for name, v in raw.counters.items():
                if name in prev and v > prev[name]:
                    deltas[name] = v - prev[name]
        state.ib_counters[key] = dict(raw.counters)
        up = raw.state == "ACTIVE"
        was_up = state.ib_up.get(key)
        downs = deltas.get("link_downed", 0)
        if was_up and not up:
            downs = max(downs, 1)
        if downs:
            state.ib_flaps[key] = state.ib_flaps.get(key, 0) + downs
            state.ib_last_down[key] = t
        state.ib_up[key] = up
        if up and raw.rate_gbps is not None:
            state.ib_best_rate[key] = max(raw.rate_gbps, state.ib_best_rate.get(key, 0.0))
        out.append(IbPort(node=node, device=raw.device, port=raw.port, state=raw.state,
                          phys_state=raw.phys_state, rate_gbps=raw.rate_gbps, rate_text=raw.rate_text,
                          max_rate_gbps=state.ib_best_rate.get(key), link_layer=raw.link_layer,
                          counters=raw.counters, deltas=deltas, flaps=state.ib_flaps.get(key, 0),
                          last_down=state.ib_last_down.get(key)))
    state.ib_text = ib_key
    state.ib_steady = tuple(msgspec.structs.replace(p, deltas={}) if p.deltas else p for p in out)
    return tuple(out)


def _mounts(node: str, secs: dict[str, Section], state: ProbeState, expected: list[str],
            warnings: list[str]) -> tuple[Mount, ...] | None:
    sec = secs.get("mounts")
    if sec is None:
        return None
    if sec.rc != 0:
        warnings.append(f"mounts: {_first_line(sec.text) or 'mountinfo not readable'}")
        return None
    mi_key = fingerprint(sec.text)
    if mi_key != state.mountinfo_text:
        state.mountinfo_text, state.mountinfo = mi_key, pn.parse_mountinfo(sec.text)
    infos = state.mountinfo
    lfs = secs.get("lfs")
    lfs_bad = pn.parse_lfs_check_servers(lfs.text) if lfs is not None and not lfs.late else []
    bee = secs.get("beegfs")
    bee_bad = pn.parse_beegfs_check_servers(bee.text) if bee is not None and not bee.late else []
    _targets(secs, state)
    out = []
    for info in infos:
        st = secs.get(f"stat.{info.mount_id}")
        stat = None
        if st is not None:
            latency = None
            times = st.extra.split()
            if len(times) == 2 and all(is_uint(x) for x in times) and not st.late:
                latency = max(0.0, (int(times[1]) - int(times[0])) / 1e6)
            stat = pn.StatResult(rc=st.rc, late=bool(st.late), latency_ms=latency,
                                 error=_first_line(st.text) or None)
        problem = None
        if info.fstype == "lustre" and lfs_bad:
            problem = "lfs check servers: " + "; ".join(lfs_bad[:3])
        elif info.fstype == "beegfs" and bee_bad:
            problem = "beegfs-check-servers: " + "; ".join(bee_bad[:3])
        m = pn.mount_state(info, stat, state.slow_ms, problem)
        if stat is None and m.detail is None:
            m = msgspec.structs.replace(m, detail="liveness not probed (max_mount_probes)")
        targets = state.lustre_targets.get(info.target, ()) if info.fstype == "lustre" else \
            state.beegfs_targets if info.fstype == "beegfs" else ()
        if info.fstype == "lustre" and state.lustre_imports:
            targets = shared_targets(pp.with_imports(targets, pp.lustre_fsname(info.source), state.lustre_imports))
        if targets:
            m = msgspec.structs.replace(m, targets=targets)
        out.append(msgspec.structs.replace(m, node=node))
    present = {m.target for m in out}
    for path in expected:
        if path not in present:
            out.append(Mount(node=node, target=path, fstype="unknown", state=MountState.MISSING,
                             detail="expected but not mounted"))
    return tuple(out)


# lfs df / beegfs-ctl answers by value, shared by every node that reads the same (the nodes of one file
# system mostly do: usage is kept as a whole percent); bounded, cleared when full.
_SHARED_TARGETS: dict[tuple[FsTarget, ...], tuple[FsTarget, ...]] = {}
_SHARED_TARGETS_MAX = 4096


def shared_targets(targets: tuple[FsTarget, ...]) -> tuple[FsTarget, ...]:
    """The one tuple equal to ``targets`` that nodes reading the same targets share."""
    shared = _SHARED_TARGETS.get(targets)
    if shared is None:
        if len(_SHARED_TARGETS) >= _SHARED_TARGETS_MAX:
            _SHARED_TARGETS.clear()
        shared = _SHARED_TARGETS[targets] = targets
    return shared


def _targets(secs: dict[str, Section], state: ProbeState) -> None:
    """Keep the targets of this record's ``lfsdf``/``beegfstgt`` sections (slow records only): a section
    that came in complete replaces the last one; a late or missing one keeps it."""
    df = secs.get("lfsdf")
    if df is not None and not df.late and (df.text.strip() or df.rc == 0) and fingerprint(df.text) != state.lfsdf_text:
        state.lfsdf_text = fingerprint(df.text)  # same text: the very same tuples (the findings read each distinct one once)
        old = state.lustre_targets  # equal targets (usage % moved by less than 1): the very same tuples
        new = {k: shared_targets(tuple(v)) for k, v in pp.parse_lfs_df(df.text).items()}
        state.lustre_targets = {k: old[k] if old.get(k) == v else v for k, v in new.items()}
    imp = secs.get("lctlimp")
    if imp is not None and not imp.late and (imp.text.strip() or imp.rc == 0) and fingerprint(imp.text) != state.lctlimp_text:
        state.lctlimp_text = fingerprint(imp.text)
        state.lustre_imports = pp.parse_lctl_imports(imp.text)
    bee = secs.get("beegfstgt")
    if bee is not None and not bee.late and (bee.text.strip() or bee.rc == 0) and fingerprint(bee.text) != state.beegfstgt_text:
        state.beegfstgt_text = fingerprint(bee.text)
        targets = shared_targets(tuple(pp.parse_beegfs_targets(bee.text, "storage")))
        if targets != state.beegfs_targets:
            state.beegfs_targets = targets


def _services(node: str, secs: dict[str, Section], state: ProbeState,
              warnings: list[str]) -> tuple[ServiceState, ...] | None:
    sec = secs.get("svc")
    if sec is not None:
        if sec.late:
            return None
        svc_key = fingerprint(sec.text)
        if svc_key != state.svc_text:
            state.svc_text, state.svc = svc_key, pn.parse_systemctl_show(node, sec.text)
        states = state.svc
        if not states:
            warnings.append(f"services: systemctl exit {sec.rc}: {_first_line(sec.text)}")
            return None
        out = []
        for s in states:
            if s.status is ServiceStatus.FAILED:
                j = secs.get(f"journal.{s.name}.service") or secs.get(f"journal.{s.name}")
                if j is not None and not j.late and j.text.strip():
                    s = msgspec.structs.replace(s, detail=clean_text(j.text.strip()[-2000:], keep_newlines=True))
            out.append(s)
        return tuple(out)
    pid = secs.get("svc-pid")
    if pid is not None and not pid.late:
        return tuple(pn.parse_service_pids(node, pid.text))
    return None


def severity_of(reading: ProbeReading) -> Severity:
    """Worst severity among the reading's events (for callers that want one number)."""
    return max((e.severity for e in reading.events), default=Severity.OK)
