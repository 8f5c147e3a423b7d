"""Health checks as data: what a check found on one node, and the critical findings that gate resume.

A check (DCGM diagnostics, an NCCL all-reduce, NHC, a site's own command) runs as an action
(:mod:`hpctui.actions.checks`); each node's outcome is one :class:`CheckResult`, kept per node in the
state directory (:mod:`hpctui.actions.checks.ledger`). A :class:`CriticalMark` remembers when a
critical GPU or fabric finding was first seen on a node: ``resume``/``uncordon`` then needs a passing
check of the right domain that is newer than it (or an override with a reason the audit records).
"""

from __future__ import annotations

import enum

import msgspec


class CheckStatus(enum.StrEnum):
    PASSED = "passed"
    WARNING = "warning"  # it ran and passed with warnings: does not clear a critical finding
    FAILED = "failed"  # it ran and the hardware fell short
    ERROR = "error"  # it could not run or its output was unreadable: proves nothing either way


class Domain(enum.StrEnum):
    """What a critical finding is about, and so which checks can clear it."""

    GPU = "gpu"  # Xid 79/48/94/95/119..., uncorrectable ECC, row-remap failure, GPU lost
    FABRIC = "fabric"  # NVLink fabric registration, NVLink down, NVSwitch SXid, InfiniBand


class CheckDetail(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One test of a check on one GPU (or the whole node): ``memory`` on GPU 3 failed, with DCGM's words."""

    test: str
    status: CheckStatus
    gpu: int | None = None
    message: str = ""


class CheckResult(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """What one check found on one node. ``summary`` is the line the node panel shows
    ("diag r2 passed", "NCCL 362 GB/s (expected ≥ 350)"); ``details`` what failed or warned."""

    node: str
    check: str  # "dcgm-r2", "nccl", "nccl-pair", "nhc", "custom:NAME"
    status: CheckStatus
    summary: str
    time: float  # when it finished (epoch seconds)
    duration_s: float | None = None
    details: tuple[CheckDetail, ...] = ()
    clears: tuple[Domain, ...] = ()  # the critical-finding domains a pass of this check clears
    busbw_gbs: float | None = None  # NCCL: average bus bandwidth
    expected_gbs: float | None = None  # NCCL: the configured expectation it was compared to
    peer: str | None = None  # a pair test: the other node
    rc: int | None = None
    user: str | None = None

    @property
    def passed(self) -> bool:
        return self.status is CheckStatus.PASSED

    def failure_reason(self) -> str:
        """A drain reason for a failed check: one line, the first failures named."""
        failed = [d for d in self.details if d.status is CheckStatus.FAILED]
        head = f"health check {self.check} failed"
        if not failed:
            return f"{head}: {self.summary}"
        parts = [f"{d.test}" + (f" GPU {d.gpu}" if d.gpu is not None else "") + (f": {d.message}" if d.message else "")
                 for d in failed[:2]]
        more = f" (+{len(failed) - 2} more)" if len(failed) > 2 else ""
        return (f"{head}: " + "; ".join(parts) + more)[:400]


class CriticalMark(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A critical GPU/fabric finding on a node, remembered from when it was first seen (it may be
    gone from the live readings after a reboot: the gate still wants a passing check after it)."""

    node: str
    key: str  # the finding's object and code: "gpu/gpu01/3#xid79"
    domain: Domain
    message: str
    first_seen: float
    last_seen: float
