"""A thing that happened, for the event log and incident reports."""

from __future__ import annotations

import msgspec

from hpctui.model.common import Severity


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    time: float
    source: str  # "slurm", "k8s", "gpu", "ib", "mount", "action", ...
    object: str  # "node/gpu01", "gpu/gpu01/3", "job/1234", "pod/ns/name"
    severity: Severity
    message: str
