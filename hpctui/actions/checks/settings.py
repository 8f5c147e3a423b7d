"""``[health_checks]`` in the config: which checks exist, how they run, what they must reach, and the gate.

Built-in checks (their ids are what ``hpctui act check --param check=ID`` and the TUI's picker name):

==============  =================================================================  ===========
id              runs on each node                                                  clears
==============  =================================================================  ===========
``dcgm-r1``     ``dcgmi diag -r 1 -j`` (deployment checks: seconds)                 —
``dcgm-r2``     ``dcgmi diag -r 2 -j`` (adds PCIe, memory, short stress: minutes)   gpu
``dcgm-r3``     ``dcgmi diag -r 3 -j`` (adds long stress: ~30 min)                  gpu
``nccl``        ``all_reduce_perf`` across the node's GPUs                          gpu, fabric
``nccl-pair``   ``mpirun … all_reduce_perf`` over two nodes (pairs of the marked)   fabric
``nhc``         ``nhc`` (LBNL Node Health Check): its exit status and message      —
==============  =================================================================  ===========

"clears" is what a pass proves healthy again for the resume gate: after a critical GPU finding
(Xid 79, uncorrectable ECC, a row-remap failure, ...) ``resume``/``uncordon`` needs a passing
check that clears ``gpu`` and finished after the finding was first seen; after a fabric finding
(NVLink fabric registration, NVLink down, a fatal NVSwitch SXid, an IB port down) one that clears
``fabric``. ``gate = false`` turns the gate off; ``--param override="why"`` passes it once, and the
audit record keeps the reason.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import shlex
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from hpctui.model import Severity
from hpctui.model.checks import Domain

BUILTIN = ("dcgm-r1", "dcgm-r2", "dcgm-r3", "nccl", "nccl-pair", "nhc")
CHECK_TITLES = {
    "dcgm-r1": "DCGM diagnostics, level 1 (quick)",
    "dcgm-r2": "DCGM diagnostics, level 2 (medium: PCIe, memory, short stress)",
    "dcgm-r3": "DCGM diagnostics, level 3 (long stress, ~30 min)",
    "nccl": "NCCL all-reduce across the node's GPUs (NVLink/NVSwitch)",
    "nccl-pair": "NCCL all-reduce over node pairs (InfiniBand)",
    "nhc": "Node Health Check (nhc)",
}
# Checks that load every GPU of the node: a running job competes with them (the preview says so).
LOADING = frozenset({"dcgm-r2", "dcgm-r3", "nccl", "nccl-pair"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DomainName = Literal["gpu", "fabric"]

# Findings that gate resume: by code (fnmatch), beside every CRITICAL finding of a GPU or NVSwitch.
GPU_CODES = ("gpu_lost", "gpu_reset_required", "ecc_uncorrected", "remap_failure", "xid48", "xid64", "xid79",
             "xid94", "xid95", "xid109", "xid119", "xid120", "xid140", "xid143", "xid158")
FABRIC_CODES = ("fabric", "nvlink_down", "nvlink_inactive", "xid74", "ib_down")


class CustomCheckSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One ``[[health_checks.custom]]`` entry: a site's own check, run over SSH on each node."""

    name: str
    """Letters, digits, ``.``, ``_`` and ``-``; the check's id is ``custom:NAME``."""
    command: list[str] | str
    """Argv (or one string split like a shell would); ``{node}`` is the node it runs on; no shell runs it here."""
    description: str = ""
    """Shown in the picker and the preview."""
    pass_pattern: str | None = None
    """A regular expression a line of the output must match for a pass (besides exit 0)."""
    fail_pattern: str | None = None
    """A regular expression that fails the check when any output line matches, whatever the exit status."""
    clears: list[DomainName] = msgspec.field(default_factory=list)
    """What a pass proves healthy again for the resume gate: "gpu", "fabric", both or neither."""
    timeout_s: Annotated[float, Meta(gt=0, le=86_400)] = 300.0
    """Per node."""

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(shlex.split(self.command)) if isinstance(self.command, str) else tuple(self.command)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"health_checks.custom: name {self.name!r}: letters, digits, '.', '_' and '-' only")
        if not self.argv or not self.argv[0].strip():
            raise ValueError(f"health_checks.custom ({self.name}): command is empty")
        for pattern in (self.pass_pattern, self.fail_pattern):
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"health_checks.custom ({self.name}): bad pattern {pattern!r}: {exc}") from None


class HealthCheckSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """``[health_checks]``: how checks run, what they must reach, and the resume gate."""

    gate: bool = True
    """Resume/uncordon after a critical GPU or fabric finding needs a passing check newer than the finding
    (or ``override`` with a reason). ``false``: the preview only warns, as before."""
    gate_codes: list[str] = msgspec.field(default_factory=lambda: list(GPU_CODES + FABRIC_CODES))
    """Finding codes that gate resume (fnmatch patterns, e.g. ``xid*``), beside every critical GPU/NVSwitch
    finding. Codes of fabric findings (NVLink, NVSwitch, InfiniBand) need a check that clears "fabric"."""
    gpu_cleared_by: list[str] = msgspec.field(default_factory=lambda: ["dcgm-r2", "dcgm-r3", "nccl"])
    """Check ids whose pass clears a GPU finding (custom checks add themselves with ``clears``)."""
    fabric_cleared_by: list[str] = msgspec.field(default_factory=lambda: ["nccl", "nccl-pair"])
    """Check ids whose pass clears a fabric finding."""
    ssh_source: str | None = None
    """Which ssh source's connections run the checks (default: the first)."""
    max_parallel: Annotated[int, Meta(ge=1, le=4096)] = 32
    """Nodes checked at once."""
    dcgmi: list[str] = msgspec.field(default_factory=lambda: ["dcgmi"])
    """The dcgmi program (and any prefix, e.g. ``["sudo", "-n", "dcgmi"]``); ``diag -r N -j`` is appended."""
    dcgm_timeout_s: dict[str, float] = msgspec.field(
        default_factory=lambda: {"dcgm-r1": 120.0, "dcgm-r2": 900.0, "dcgm-r3": 3600.0})
    """Per DCGM level, per node."""
    nccl_command: list[str] = msgspec.field(default_factory=lambda: [
        "all_reduce_perf", "-b", "256M", "-e", "2G", "-f", "2", "-g", "{gpus}"])
    """The single-node all-reduce (nccl-tests); ``{gpus}``: the node's GPU count."""
    nccl_pair_command: list[str] = msgspec.field(default_factory=lambda: [
        "mpirun", "-np", "{ranks}", "-H", "{node}:{gpus},{peer}:{gpus}", "all_reduce_perf", "-b", "256M",
        "-e", "2G", "-f", "2", "-g", "1"])
    """The two-node all-reduce, run on the first node of each pair; ``{node}``, ``{peer}``, ``{gpus}`` (per
    node) and ``{ranks}`` (both nodes' GPUs)."""
    nccl_timeout_s: Annotated[float, Meta(gt=0, le=86_400)] = 600.0
    """Per run."""
    nccl_expected_gbs: dict[str, float] = msgspec.field(default_factory=lambda: {"H100": 350.0, "H200": 350.0,
                                                                                 "B200": 600.0})
    """Single node: the least average bus bandwidth (GB/s) per GPU model (a substring of the model name)."""
    nccl_pair_expected_gbs: dict[str, float] = msgspec.field(default_factory=lambda: {"H100": 150.0, "H200": 150.0,
                                                                                      "B200": 300.0})
    """Node pairs over the fabric: the least average bus bandwidth (GB/s) per GPU model."""
    nhc: list[str] = msgspec.field(default_factory=lambda: ["nhc"])
    """The NHC command (often ``["sudo", "-n", "nhc"]``)."""
    nhc_timeout_s: Annotated[float, Meta(gt=0, le=86_400)] = 300.0
    """Per node."""
    keep_per_node: Annotated[int, Meta(ge=1, le=1000)] = 20
    """Check results kept per node in the state directory (newest first)."""
    custom: list[CustomCheckSettings] = msgspec.field(default_factory=list)
    """``[[health_checks.custom]]``: a site's own checks."""

    def __post_init__(self) -> None:
        names = [c.name for c in self.custom]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"health_checks.custom: name {twice[0]!r} used twice")
        for key in ("{node}", "{peer}"):
            if not any(key in a for a in self.nccl_pair_command):
                raise ValueError(f"health_checks.nccl_pair_command must name {key}")

    # -- what exists --------------------------------------------------------------------------
    def check_ids(self) -> tuple[str, ...]:
        """Every check this config offers, built-in first."""
        return (*BUILTIN, *(f"custom:{c.name}" for c in self.custom))

    def title(self, check: str) -> str:
        custom = self.custom_check(check)
        if custom is not None:
            return custom.description or f"custom check {custom.name}"
        return CHECK_TITLES.get(check, check)

    def custom_check(self, check: str) -> CustomCheckSettings | None:
        name = check.removeprefix("custom:")
        return next((c for c in self.custom if check.startswith("custom:") and c.name == name), None)

    def clears(self, check: str) -> tuple[Domain, ...]:
        """The domains a pass of ``check`` clears for the gate."""
        custom = self.custom_check(check)
        out = {Domain(d) for d in custom.clears} if custom is not None else set()
        if check in self.gpu_cleared_by:
            out.add(Domain.GPU)
        if check in self.fabric_cleared_by:
            out.add(Domain.FABRIC)
        return tuple(sorted(out))

    def cleared_by(self, domain: Domain) -> tuple[str, ...]:
        """The check ids that clear ``domain`` (what the gate's message suggests running)."""
        return tuple(c for c in self.check_ids() if domain in self.clears(c))

    def expected_gbs(self, check: str, model: str | None) -> float | None:
        """The bus bandwidth an NCCL check must reach on GPUs of ``model``; None: none configured."""
        table = self.nccl_pair_expected_gbs if check == "nccl-pair" else self.nccl_expected_gbs
        if not model:
            return None
        hits = [(len(k), v) for k, v in table.items() if k.lower() in model.lower()]
        return max(hits)[1] if hits else None

    # -- which findings gate --------------------------------------------------------------------
    def gates(self, obj: str, code: str, severity: Severity) -> Domain | None:
        """The domain a finding gates resume in, or None when it does not gate."""
        kind = obj.split("/", 1)[0]
        listed = _listed(tuple(self.gate_codes), code)
        critical = severity >= Severity.CRITICAL and kind in ("gpu", "nvswitch")
        if not (listed or critical):
            return None
        fabric = kind in ("nvswitch", "ib") or code.startswith("sxid") or code in FABRIC_CODES
        return Domain.FABRIC if fabric else Domain.GPU


@functools.lru_cache(maxsize=4096)
def _listed(patterns: tuple[str, ...], code: str) -> bool:
    """Whether ``code`` matches one of the fnmatch ``patterns`` (asked for every finding of every frame:
    a finding's code repeats, the answer is remembered)."""
    return any(fnmatch.fnmatchcase(code, p) for p in patterns)
