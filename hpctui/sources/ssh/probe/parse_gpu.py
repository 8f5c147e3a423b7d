"""Pure parsers of ``nvidia-smi`` outputs (FACTS §1, §2), tested against real recorded outputs.

Values ``[N/A]``, ``N/A``, ``[Not Supported]``, ``[Requested functionality has been deprecated]``,
``[Unknown Error]`` and empty cells are "not available" (``None``), never 0. Every string
that reaches the model goes through :func:`hpctui.base.sanitize.clean_text`.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Callable, Iterable, Sequence

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.gpu import Gpu, MigInstance
from hpctui.model.probe import GpuProcess, NvLink
from hpctui.model.validate import COUNTER, GPU_BOUNDS, GPU_INDEX, MEMORY_MIB, NVLINK_GBPS, SMALL_ENUM, Bounds, Drops

_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")  # "memory.total [MiB]" -> "memory.total"
_VALUE_UNIT = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(?:MiB|W|MHz|%|C|us|KiB|GiB|GB/s)?$")
_GPU_LOST = "[GPU is lost]"
_GPU_RESET = "[GPU requires reset]"  # the driver's other GPU state in place of values (a GPU that must be reset)


def field_name(header: str) -> str:
    return _UNIT.sub("", header.strip())


def cell(value: str | None) -> str | None:
    """A CSV cell, or ``None`` when nvidia-smi says it is not available."""
    if value is None:
        return None
    v = value.strip()
    if not v or v in ("N/A", "n/a") or (v.startswith("[") and v.endswith("]")):
        return None
    return v


def num(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        f = float(value)  # the common case with nounits: a plain number
    except ValueError:
        v = cell(value)
        if v is None:
            return None
        m = _VALUE_UNIT.match(v)
        return float(m.group(1)) if m else None
    return f if math.isfinite(f) else None


def integer(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        pass
    v = cell(value)
    if v is None:
        return None
    try:
        return int(v, 16) if v.lower().startswith("0x") else int(float(v))
    except (ValueError, OverflowError):  # OverflowError: int(float("1e400")) is int(inf)
        f = num(v)
        return None if f is None else int(f)


_FLAG = {"Enabled": True, "Disabled": False, "Yes": True, "No": False, "Active": True, "Not Active": False}


def flag(value: str | None) -> bool | None:
    if value is None:
        return None
    v = value.strip()
    fast = _FLAG.get(v)
    if fast is not None:
        return fast
    if cell(v) is None:
        return None
    low = v.lower()
    if low in ("enabled", "yes", "active", "on", "true", "1"):
        return True
    if low in ("disabled", "no", "not active", "off", "false", "0"):
        return False
    return None


def _csv_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return [[c.strip() for c in row] for row in csv.reader(lines, skipinitialspace=True)]


def query_rows(text: str, fields: Sequence[str] | None = None) -> list[dict[str, str]]:
    """Rows of a ``--query-*`` CSV as ``{field: cell}``.

    With ``fields`` the CSV has no header (``noheader``); without, the first row is the header
    (units in brackets are dropped from the names). Rows of the wrong width are skipped.
    """
    rows = _csv_rows(text)
    if fields is None:
        if not rows:
            return []
        fields = [field_name(h) for h in rows[0]]
        rows = rows[1:]
    out = []
    for row in rows:
        if len(row) != len(fields):
            continue
        out.append(dict(zip(fields, row, strict=True)))
    return out


def _first(row: dict[str, str], *names: str) -> str | None:
    for n in names:
        if n in row:
            return row[n]
    return None


def _text_cell(value: str | None) -> str | None:
    v = cell(value)
    return clean_text(v) if v is not None else None


def _hex_or_int(value: str | None) -> int | None:
    return integer(value)


# --query-gpu field -> (Gpu attribute, converter). For an attribute named by several fields,
# the first of them in this table that the row has wins (enforced.power.limit over power.limit).
# Each numeric attribute has its plausible range (hpctui.model.validate, BOUNDS below).
_FIELDS: tuple[tuple[str, str, Callable[[str | None], object]], ...] = (
    ("index", "index", integer), ("uuid", "uuid", _text_cell), ("name", "model", _text_cell),
    ("pci.bus_id", "pci_bus_id", _text_cell), ("gpu_bus_id", "pci_bus_id", _text_cell),
    ("utilization.gpu", "util_pct", num), ("utilization.memory", "mem_util_pct", num),
    ("memory.used", "memory_used_mib", num), ("memory.total", "memory_total_mib", num),
    ("temperature.gpu", "temp_c", num), ("temperature.memory", "hbm_temp_c", num),
    ("power.draw", "power_w", num),
    ("enforced.power.limit", "power_limit_w", num), ("power.limit", "power_limit_w", num),
    ("clocks.current.sm", "sm_clock_mhz", num), ("clocks.sm", "sm_clock_mhz", num),
    ("ecc.errors.corrected.volatile.total", "ecc_corrected_volatile", integer),
    ("ecc.errors.uncorrected.volatile.total", "ecc_uncorrected_volatile", integer),
    ("ecc.errors.corrected.aggregate.total", "ecc_corrected_aggregate", integer),
    ("ecc.errors.uncorrected.aggregate.total", "ecc_uncorrected_aggregate", integer),
    ("remapped_rows.correctable", "remapped_correctable", integer),
    ("remapped_rows.uncorrectable", "remapped_uncorrectable", integer),
    ("remapped_rows.pending", "remap_pending", flag), ("remapped_rows.failure", "remap_failure", flag),
    ("mig.mode.current", "mig_mode_current", flag), ("mig.mode.pending", "mig_mode_pending", flag),
    ("clocks_event_reasons.active", "throttle_reasons", _hex_or_int),
    ("clocks_throttle_reasons.active", "throttle_reasons", _hex_or_int),
    ("pcie.link.gen.gpucurrent", "pcie_gen_current", integer), ("pcie.link.gen.current", "pcie_gen_current", integer),
    ("pcie.link.gen.max", "pcie_gen_max", integer), ("pcie.link.gen.gpumax", "pcie_gen_max", integer),
    ("pcie.link.width.current", "pcie_width_current", integer), ("pcie.link.width.max", "pcie_width_max", integer),
    ("persistence_mode", "persistence_mode", flag),
    ("fabric.state", "fabric_state", _text_cell), ("fabric.status", "fabric_status", _text_cell),
)


BOUNDS: dict[str, Bounds] = GPU_BOUNDS


class _Bad:
    """A memoised cell whose value is implausible: the row gets N/A and the value is reported."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


class RowParser:
    """``--query-gpu`` rows for one field list, with the field -> attribute plan computed once."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.width = len(fields)
        position = {f: i for i, f in enumerate(fields)}
        plan: list[tuple[int, str, Callable[[str | None], object]]] = []
        taken: set[str] = set()
        self.field_of: dict[str, str] = {}
        for field_, attr, conv in _FIELDS:
            if field_ in position and attr not in taken:
                taken.add(attr)
                plan.append((position[field_], attr, conv))
                self.field_of[attr] = field_
        self.plan = plan
        self.index_pos = position.get("index")
        # Converted values by raw cell, per field: most cells repeat record after record (ids, names,
        # ECC counts, PCIe, modes), so a dict lookup replaces the conversion. Bounded per field.
        self.memo: list[dict[str, object]] = [{} for _ in plan]

    def convert(self, attr: str, conv: Callable[[str | None], object], raw: str) -> object:
        """One cell converted, or a :class:`_Bad` when outside its attribute's plausible range."""
        value = conv(raw)
        bounds = BOUNDS.get(attr)
        if bounds is not None and isinstance(value, (int, float)) and not bounds.ok(value):
            return _Bad(value)
        return value

    def parse(self, node: str, lines: Iterable[str], drops: Drops | None = None) -> list[Gpu]:
        """Rows → GPUs; an implausible cell is N/A (recorded in ``drops``), a row without a valid index is skipped."""
        out: list[Gpu] = []
        if self.index_pos is None:
            return out
        plan = list(zip(self.plan, self.memo, strict=True))
        for line in lines:
            cells = line.split(",")
            if len(cells) != self.width:
                continue
            kwargs: dict[str, object] = {}
            bad = False
            for (i, attr, conv), memo in plan:
                raw = cells[i]
                if raw in memo:
                    value = kwargs[attr] = memo[raw]
                else:
                    value = kwargs[attr] = self.convert(attr, conv, raw)
                    if len(memo) < 256:
                        memo[raw] = value
                bad = bad or type(value) is _Bad
            if bad:
                self._drop_bad(node, kwargs, drops)
            if kwargs.get("index") is None:
                continue
            out.append(Gpu(node=node, lost=_GPU_LOST in line, reset_required=_GPU_RESET in line,
                           **kwargs))  # type: ignore[arg-type]
        return out


    def _drop_bad(self, node: str, kwargs: dict[str, object], drops: Drops | None) -> None:
        for attr, value in kwargs.items():
            if type(value) is _Bad:
                kwargs[attr] = None
                if drops is not None:
                    drops.value(self.field_of.get(attr, attr), value.value, node)


_ROW_PARSERS: dict[tuple[str, ...], RowParser] = {}


def row_parser(fields: Sequence[str]) -> RowParser:
    key = tuple(fields)
    p = _ROW_PARSERS.get(key)
    if p is None:
        if len(_ROW_PARSERS) > 64:
            _ROW_PARSERS.clear()
        p = _ROW_PARSERS[key] = RowParser(key)
    return p


def parse_query_gpu(node: str, text: str, fields: Sequence[str] | None = None,
                    drops: Drops | None = None) -> list[Gpu]:
    """``nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]``.

    nvidia-smi never quotes cells and no queried value contains a comma, so rows are split on
    commas (a row of the wrong width is skipped).
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if fields is None:
        if not lines:
            return []
        fields = [field_name(h) for h in lines[0].split(",")]
        lines = lines[1:]
    return row_parser(fields).parse(node, lines, drops)


class RemapRow(msgspec.Struct, frozen=True):
    correctable: int | None
    uncorrectable: int | None
    pending: bool | None
    failure: bool | None


REMAP_FIELDS = ("gpu_uuid", "remapped_rows.correctable", "remapped_rows.uncorrectable",
                "remapped_rows.pending", "remapped_rows.failure")


def parse_remapped_rows(text: str) -> dict[str, RemapRow]:
    """``--query-remapped-rows=gpu_uuid,…`` (noheader) → {gpu uuid: counts}."""
    rows = query_rows(text, None if text.lstrip().startswith("gpu_uuid") else REMAP_FIELDS)
    out = {}
    for row in rows:
        uuid = cell(row.get("gpu_uuid"))
        if uuid:
            out[clean_text(uuid)] = RemapRow(
                integer(row.get("remapped_rows.correctable")), integer(row.get("remapped_rows.uncorrectable")),
                flag(row.get("remapped_rows.pending")), flag(row.get("remapped_rows.failure")))
    return out


def apply_remap(gpu: Gpu, remap: RemapRow | None) -> Gpu:
    if remap is None:
        return gpu
    return msgspec.structs.replace(
        gpu, remapped_correctable=remap.correctable, remapped_uncorrectable=remap.uncorrectable,
        remap_pending=remap.pending, remap_failure=remap.failure)


# ---------------------------------------------------------------- processes

APPS_FIELDS = ("pid", "gpu_uuid", "used_memory")
_JOB = re.compile(r"/job_(\d+)(?:/|$)")
_POD = re.compile(r"pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12})")


def parse_compute_apps(text: str, fields: Sequence[str] | None = APPS_FIELDS) -> list[GpuProcess]:
    """``--query-compute-apps=pid,gpu_uuid,used_memory`` (or any field list with a header)."""
    out = []
    for row in query_rows(text, fields):
        pid = integer(row.get("pid"))
        if pid is None:
            continue
        uuid = cell(row.get("gpu_uuid"))
        name = cell(row.get("process_name"))
        out.append(GpuProcess(
            pid=pid,
            gpu_uuid=clean_text(uuid) if uuid else None,
            used_memory_mib=num(_first(row, "used_memory", "used_gpu_memory")),
            command=clean_text(name) if name else None,
        ))
    return out


class ProcInfo(msgspec.Struct, frozen=True, kw_only=True):
    pid: int
    uid: int | None = None
    user: str | None = None
    command: str | None = None
    slurm_job_id: str | None = None
    pod: str | None = None
    gone: bool = False


def job_from_cgroup(lines: Iterable[str]) -> tuple[str | None, str | None]:
    """(Slurm job id, pod uid) from ``/proc/PID/cgroup`` lines (v1 or v2)."""
    job = pod = None
    for line in lines:
        if job is None and (m := _JOB.search(line)):
            job = m.group(1)
        if pod is None and "kubepods" in line and (m := _POD.search(line)):
            pod = m.group(1).replace("_", "-").lower()
    return job, pod


def parse_procs(text: str) -> dict[int, ProcInfo]:
    """The ``gpu-procs`` section: ``pid N`` / ``uid U name`` / ``cmd …`` / ``cgroup …`` / ``gone``."""
    out: dict[int, ProcInfo] = {}
    pid: int | None = None
    fields: dict[str, object] = {}
    cgroups: list[str] = []

    def flush() -> None:
        if pid is None:
            return
        job, pod = job_from_cgroup(cgroups)
        out[pid] = ProcInfo(pid=pid, slurm_job_id=job, pod=pod, **fields)  # type: ignore[arg-type]

    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "pid":
            flush()
            pid = integer(rest)
            fields, cgroups = {}, []
        elif pid is None:
            continue
        elif key == "uid":
            parts = rest.split()
            fields["uid"] = integer(parts[0]) if parts else None
            if len(parts) > 1:
                fields["user"] = clean_text(parts[1])
        elif key == "cmd":
            cmd = rest.strip()
            if cmd:
                fields["command"] = clean_text(cmd)
        elif key == "cgroup":
            cgroups.append(rest)
        elif key == "gone":
            fields["gone"] = True
    flush()
    return out


def merge_processes(apps: list[GpuProcess], procs: dict[int, ProcInfo],
                    index_by_uuid: dict[str, int]) -> list[GpuProcess]:
    out = []
    for app in apps:
        info = procs.get(app.pid) if app.pid is not None else None
        upd: dict[str, object] = {}
        if app.gpu_uuid and app.gpu_uuid in index_by_uuid:
            upd["gpu_index"] = index_by_uuid[app.gpu_uuid]
        if info is not None and not info.gone:
            upd.update(user=info.user or (str(info.uid) if info.uid is not None else None),
                       command=info.command or app.command,
                       slurm_job_id=info.slurm_job_id, pod=info.pod)
        out.append(msgspec.structs.replace(app, **upd) if upd else app)
    return out


# ---------------------------------------------------------------- MIG

_L_GPU = re.compile(r"^GPU (\d+): (.*?) \(UUID: ([^)]+)\)")
_L_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)")
_LGI_ROW = re.compile(r"^\|\s+(\d+)\s+MIG (\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s+\|")
_LCI_ROW = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+MIG (\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s+\|")


_CI_PREFIX = re.compile(r"^\d+c\.(?=\d+g\.)")


class MigDevice(msgspec.Struct, frozen=True):
    gpu: int
    device: int
    profile: str
    uuid: str


def parse_list_gpus(text: str) -> tuple[dict[int, str], list[MigDevice]]:
    """``nvidia-smi -L`` → ({gpu index: uuid}, MIG devices)."""
    gpus: dict[int, str] = {}
    migs: list[MigDevice] = []
    current: int | None = None
    for line in text.splitlines():
        if m := _L_GPU.match(line):
            current = int(m.group(1))
            gpus[current] = clean_text(m.group(3))
        elif current is not None and (m := _L_MIG.match(line)):
            migs.append(MigDevice(current, int(m.group(2)), clean_text(m.group(1)), clean_text(m.group(3))))
    return gpus, migs


class GpuInstanceRow(msgspec.Struct, frozen=True):
    gpu: int
    profile: str
    profile_id: int
    gi_id: int


def parse_mig_lgi(text: str) -> list[GpuInstanceRow]:
    """``nvidia-smi mig -lgi`` table rows."""
    return [GpuInstanceRow(int(m.group(1)), clean_text(m.group(2)), int(m.group(3)), int(m.group(4)))
            for line in text.splitlines() if (m := _LGI_ROW.match(line))]


class ComputeInstanceRow(msgspec.Struct, frozen=True):
    gpu: int
    gi_id: int
    profile: str
    ci_id: int


def parse_mig_lci(text: str) -> list[ComputeInstanceRow]:
    """``nvidia-smi mig -lci`` table rows (GPU, GPU instance ID, name, profile ID, CI ID, placement)."""
    return [ComputeInstanceRow(int(m.group(1)), int(m.group(2)), clean_text(m.group(3)), int(m.group(5)))
            for line in text.splitlines() if (m := _LCI_ROW.match(line))]


class MigMemory(msgspec.Struct, frozen=True):
    gpu_bus_id: str
    device: int
    gi_id: int | None
    ci_id: int | None
    total_mib: float | None
    used_mib: float | None


_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])\s*$")
_Q_KV = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*?)\s*$")


def _checked(value: float | None, bounds: Bounds, field: str, drops: Drops | None, where: str) -> float | None:
    """``value`` when plausible (None stays None); else None, recorded in ``drops``."""
    if value is None or bounds.ok(value):
        return value
    if drops is not None:
        drops.value(field, value, where)
    return None


def parse_q_mig_memory(text: str, drops: Drops | None = None, node: str = "") -> list[MigMemory]:
    """``MIG Device`` blocks of ``nvidia-smi -q [-d MEMORY]``: index, GI/CI ids, FB memory.

    An implausible id or memory size (a negative or 1 EiB MiB count) is N/A, recorded in ``drops``;
    a device without a plausible index is left out."""
    out: list[MigMemory] = []
    bus: str | None = None
    cur: dict[str, float | int | None] | None = None
    indent = 0
    header = ""

    def flush() -> None:
        if cur is not None and bus is not None and cur.get("device") is not None:
            gi, ci = cur.get("gi"), cur.get("ci")
            out.append(MigMemory(bus, int(cur["device"] or 0), None if gi is None else int(gi),
                                 None if ci is None else int(ci), cur.get("total"), cur.get("used")))

    for line in text.splitlines():
        if m := _Q_GPU.match(line):
            flush()
            cur, bus = None, m.group(1)
            continue
        stripped = line.strip()
        if not stripped:
            continue
        depth = len(line) - len(line.lstrip())
        if stripped == "MIG Device":
            flush()
            cur, indent, header = {}, depth, ""
            continue
        if cur is None:
            continue
        if depth <= indent:  # left the MIG Device block
            flush()
            cur = None
            continue
        m = _Q_KV.match(line)
        if not m or not m.group(3):
            header = stripped
            continue
        key, value = m.group(2), m.group(3)
        where = f"{node} {bus or '?'}"
        if key == "Index":
            cur["device"] = _checked(integer(value), SMALL_ENUM, "MIG device index", drops, where)
        elif key == "GPU Instance ID":
            cur["gi"] = _checked(integer(value), SMALL_ENUM, "MIG GPU instance id", drops, where)
        elif key == "Compute Instance ID":
            cur["ci"] = _checked(integer(value), SMALL_ENUM, "MIG compute instance id", drops, where)
        elif header.endswith("FB Memory Usage") and key in ("Total", "Used"):
            cur[key.lower()] = _checked(num(value), MEMORY_MIB, f"MIG memory {key.lower()} MiB", drops, where)
    flush()
    return out


@functools.lru_cache(maxsize=8192)
def bus_key(bus_id: str | None) -> str | None:
    """Canonical ``dddd:bb:dd`` (domain, bus, device; lowercase) of any PCI bus id spelling."""
    if not bus_id:
        return None
    m = re.search(r"([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})", bus_id)
    if not m:
        return None
    return f"{int(m.group(1), 16):04x}:{m.group(2).lower()}:{m.group(3).lower()}"


def mig_instances(gpu: Gpu, migs: list[MigDevice], lgi: list[GpuInstanceRow], lci: list[ComputeInstanceRow],
                  memory: list[MigMemory]) -> tuple[MigInstance, ...]:
    """The MIG instances of one GPU, joined from ``-L`` / ``-q`` (by device index) and ``-lgi``/``-lci``."""
    key = bus_key(gpu.pci_bus_id)
    mem = {m.device: m for m in memory if bus_key(m.gpu_bus_id) == key}
    devs = [d for d in migs if d.gpu == gpu.index]
    out: list[MigInstance] = []
    seen: set[tuple[int, int | None]] = set()
    for d in devs:
        mm = mem.get(d.device)
        gi = mm.gi_id if mm else None
        profile = _CI_PREFIX.sub("", d.profile)  # "1c.3g.71gb" (a CI of a 3g GI) -> "3g.71gb"
        if gi is None:
            continue
        seen.add((gi, mm.ci_id if mm else None))
        out.append(MigInstance(gi_id=gi, profile=profile, ci_id=mm.ci_id if mm else None, uuid=d.uuid,
                               memory_used_mib=mm.used_mib if mm else None,
                               memory_total_mib=mm.total_mib if mm else None))
    if not out:
        cis: dict[tuple[int, int], list[int | None]] = {}  # a GI may hold several CIs: one instance each
        for c in lci:
            cis.setdefault((c.gpu, c.gi_id), []).append(c.ci_id)
        for g in lgi:
            if g.gpu == gpu.index:
                out.extend(MigInstance(gi_id=g.gi_id, profile=g.profile, ci_id=ci)
                           for ci in cis.get((g.gpu, g.gi_id)) or [None])
        if not out:
            # -L alone: profiles and UUIDs, instance ids unknown -> number them by device index.
            out = [MigInstance(gi_id=d.device, profile=d.profile, uuid=d.uuid) for d in devs]
    return tuple(sorted(out, key=lambda i: (i.gi_id, i.ci_id if i.ci_id is not None else -1)))


# ---------------------------------------------------------------- NVLink

_NV_STATUS = re.compile(r"^GPU (\d+): |^[ \t]+Link (\d+): (?:([\d.]+) GB/s|(.*))$|^(.*not supported.*)$",
                        re.M | re.I)
# the common "Link 0: Replay Errors: 0" first (no lazy label: ~3x faster over 440 lines), then any label
_NV_ERR = re.compile(r"^GPU (\d+): |^[ \t]+Link (\d+): (?:(Replay|Recovery|CRC|CRC Flit|CRC Data) Errors: (\d+)$"
                     r"|([A-Za-z][A-Za-z ]*?)[ \t]*(?:Errors?)?[ \t]*:[ \t]*(\S+))", re.M)
# (link digits, label, value text) of a valid counter line -> (link, kind, value)
_ERR_LINES: dict[tuple[str, str, str], tuple[int, str, int]] = {}
NVLINK_UNSUPPORTED = "not supported"
_ERR_KIND: dict[str, str | None] = {}


def _small(digits: str, bounds: Bounds, field: str, drops: Drops | None, where: str) -> int | None:
    """A GPU or link index (regex digits): None, recorded, when outside ``bounds`` (no 5000-digit int())."""
    n = int(digits) if len(digits) < 6 else None
    if n is not None and bounds.ok(n):
        return n
    if drops is not None:
        drops.value(field, n if n is not None else digits if len(digits) <= 20 else digits[:20] + "…", where)
    return None


def _speed(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "1.2.3": the regex takes digits and dots
        return None


# (link digits, speed text) of a valid up link -> its NvLink: 144 per 8-GPU node, a few dozen distinct
_UP_LINKS: dict[tuple[str | None, ...], NvLink] = {}


def parse_nvlink_status(text: str, drops: Drops | None = None, node: str = "") -> tuple[dict[int, list[NvLink]], set[int]]:
    """``nvidia-smi nvlink -s`` → ({gpu index: links}, {gpu indexes where NVLink queries are unsupported}).

    ``Link N: 26.562 GB/s`` is up; ``Link N: <inactive>`` (or any non-speed text) is down; "Nvlink
    queries are not supported for Devices in MIG mode" makes the GPU's link state unknown. An
    implausible GPU or link index leaves that GPU or link out, an implausible speed is N/A (the link
    up); each recorded in ``drops``.
    """
    links: dict[int, list[NvLink]] = {}
    unsupported: set[int] = set()
    gpu: int | None = None
    known = _UP_LINKS
    for m in _NV_STATUS.finditer(text):
        if gpu is not None and (seen := known.get(m.group(2, 3))) is not None:
            links[gpu].append(seen)  # "Link 3: 26.562 GB/s" read before: valid, the same (frozen) object
            continue
        if m.group(1) is not None:
            gpu = _small(m.group(1), GPU_INDEX, "nvlink GPU index", drops, node)
            if gpu is not None:
                links.setdefault(gpu, [])
        elif gpu is None:
            continue
        elif m.group(5) is not None:
            unsupported.add(gpu)
        elif (link := _small(m.group(2), SMALL_ENUM, "nvlink link index", drops, f"{node} GPU {gpu}")) is None:
            continue
        elif m.group(3) is not None:
            speed = _speed(m.group(3))
            if (speed is None or not NVLINK_GBPS.ok(speed)) and drops is not None:
                drops.value(f"nvlink {link} GB/s", m.group(3)[:20] if speed is None else speed, f"{node} GPU {gpu}")
            link_up = NvLink(link=link, up=True, speed_gbps=speed if speed is not None and NVLINK_GBPS.ok(speed)
                             else None)
            if link_up.speed_gbps is not None and len(known) < 4096:
                known[m.group(2, 3)] = link_up
            links[gpu].append(link_up)
        else:
            links[gpu].append(NvLink(link=link, up=False))
    return links, unsupported


_NV_NOTE = re.compile(r"^GPU (\d+): |^\s*(?:NVML: )?(Unable to retrieve NVLink information as all links are inActive"
                      r"|Device does not have or support NVLink)", re.M | re.I)


def parse_nvlink_notes(text: str) -> dict[int, str]:
    """What ``nvidia-smi nvlink -s`` says instead of links, per GPU index: ``"inactive"`` for
    "NVML: Unable to retrieve NVLink information as all links are inActive" (a PCIe card without a
    bridge, or an SXM GPU whose links are all down), ``"none"`` for "Device does not have or support
    Nvlink" (R595 on a device without NVLink). GPUs that list links are not in the result."""
    out: dict[int, str] = {}
    gpu: int | None = None
    for m in _NV_NOTE.finditer(text):
        if m.group(1) is not None:
            gpu = int(m.group(1)) if len(m.group(1)) < 6 else None
        elif gpu is not None:
            out[gpu] = "inactive" if m.group(2).lower().startswith("unable") else "none"
    return out


def _err_kind(label: str) -> str | None:
    kind = _ERR_KIND.get(label)
    if kind is None and label not in _ERR_KIND:
        low = label.lower()
        kind = "crc" if "crc" in low else "replay" if "replay" in low else "recovery" if "recovery" in low else None
        if len(_ERR_KIND) < 256:
            _ERR_KIND[label] = kind
    return kind


def parse_nvlink_errors(text: str, drops: Drops | None = None, node: str = "") -> dict[int, dict[int, dict[str, int]]]:
    """``nvidia-smi nvlink -e`` → {gpu: {link: {"crc"|"replay"|"recovery": count}}}.

    Accepts ``Link 0: Replay Errors: 0`` / ``Recovery Errors`` / ``CRC Errors`` and the
    ``CRC Flit Errors`` / ``CRC Data Errors`` split (summed into ``crc``).
    """
    out: dict[int, dict[int, dict[str, int]]] = {}
    per_gpu: dict[int, dict[str, int]] | None = None
    for m in _NV_ERR.finditer(text):
        if m.group(1) is not None:
            gpu = _small(m.group(1), GPU_INDEX, "nvlink GPU index", drops, node)
            per_gpu = out.setdefault(gpu, {}) if gpu is not None else None
            continue
        if per_gpu is None:
            continue
        label, raw = m.group(3, 4) if m.group(3) is not None else m.group(5, 6)
        key = (m.group(2), label, raw)
        seen = _ERR_LINES.get(key)
        if seen is not None:
            link, kind, value = seen
        else:
            link_ = _small(m.group(2), SMALL_ENUM, "nvlink link index", drops, node)
            if link_ is None:
                continue
            kind_ = _err_kind(label)
            value_ = integer(raw)
            if kind_ is None or value_ is None:
                continue
            if not COUNTER.ok(value_):  # a negative or beyond-2**63 count: N/A, not an error storm
                if drops is not None:
                    drops.value(f"nvlink {label.strip()} errors", value_, node)
                continue
            link, kind, value = link_, kind_, value_
            if len(_ERR_LINES) < 4096:
                _ERR_LINES[key] = (link, kind, value)
        counters = per_gpu.setdefault(link, {})
        counters[kind] = counters.get(kind, 0) + value
    return out


# Links without a rise, shared by every GPU and node whose link reads the same (link, up, speed, counters):
# on a healthy cluster a few dozen objects instead of one per link (144 per 8-GPU node, ~23 KiB).
# NvLink is frozen and nothing writes its ``deltas``; bounded (cleared when full).
_STEADY_LINKS: dict[tuple[object, ...], NvLink] = {}
_STEADY_LINKS_MAX = 8192


def steady_link(link: NvLink) -> NvLink:
    """The shared object equal to ``link`` (which has no deltas)."""
    key = (link.link, link.up, link.speed_gbps, link.crc_errors, link.replay_errors, link.recovery_errors)
    shared = _STEADY_LINKS.get(key)
    if shared is None:
        if len(_STEADY_LINKS) >= _STEADY_LINKS_MAX:
            _STEADY_LINKS.clear()
        shared = _STEADY_LINKS[key] = link
    return shared


def merge_nvlinks(status: list[NvLink], errors: dict[int, dict[str, int]], unsupported: bool,
                  previous: tuple[NvLink, ...]) -> tuple[NvLink, ...]:
    """Links with their error counters and the rise since ``previous``; a link without a rise is the
    shared object of its values (:func:`steady_link`)."""
    if unsupported:
        return tuple(msgspec.structs.replace(link, up=None, deltas={}) for link in previous)
    prev = {link.link: link for link in previous}
    by_link = {link.link: link for link in status}
    for n in errors:
        by_link.setdefault(n, NvLink(link=n))
    out = []
    for n in sorted(by_link):
        link = by_link[n]
        e = errors.get(n, {})
        crc, replay, recovery = e.get("crc"), e.get("replay"), e.get("recovery")
        deltas: dict[str, int] = {}
        p = prev.get(n)
        if p is not None:
            for name, now_v, old in (("crc", crc, p.crc_errors), ("replay", replay, p.replay_errors),
                                     ("recovery", recovery, p.recovery_errors)):
                if now_v is not None and old is not None and now_v > old:
                    deltas[name] = now_v - old
        if not deltas:
            shared = _STEADY_LINKS.get((n, link.up, link.speed_gbps, crc, replay, recovery))
            if shared is not None:
                out.append(shared)
                continue
        merged = msgspec.structs.replace(link, crc_errors=crc, replay_errors=replay,
                                         recovery_errors=recovery, deltas=deltas)
        out.append(merged if deltas else steady_link(merged))
    return tuple(out)
