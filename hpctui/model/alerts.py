"""Alerts and silences as the site's Alertmanager holds them (API v2), joined to hpctui's node names.

An :class:`Alert` is one alert Alertmanager knows (firing, or suppressed by a silence or an inhibition);
a :class:`Silence` is one silence with its matchers and who set it, why and until when. Both are immutable
and sanitised at the source boundary; ``node`` is the hpctui node name the alert's labels name (None for a
cluster-wide alert such as a Watchdog).
"""

from __future__ import annotations

import enum

import msgspec

from hpctui.model.common import Severity


class AlertState(enum.StrEnum):
    """Alertmanager's ``status.state`` of an alert."""

    ACTIVE = "active"  # firing and notifying
    SUPPRESSED = "suppressed"  # firing, but silenced or inhibited: nobody is paged
    UNPROCESSED = "unprocessed"  # just received, not yet routed


class SilenceState(enum.StrEnum):
    """Alertmanager's ``status.state`` of a silence."""

    ACTIVE = "active"
    PENDING = "pending"  # starts in the future
    EXPIRED = "expired"


# Alertmanager's conventional ``severity`` label values, as hpctui severities. Anything else is a warning.
ALERT_SEVERITY: dict[str, Severity] = {
    "critical": Severity.CRITICAL, "page": Severity.CRITICAL, "emergency": Severity.CRITICAL,
    "error": Severity.ERROR, "major": Severity.ERROR, "high": Severity.ERROR,
    "warning": Severity.WARNING, "warn": Severity.WARNING, "minor": Severity.WARNING, "medium": Severity.WARNING,
    "info": Severity.INFO, "informational": Severity.INFO, "low": Severity.INFO, "none": Severity.INFO,
}


# What an alert on a DCGM or node_exporter metric means in hpctui's own findings (finding-code prefixes):
# such an alert on a node that already has one of these findings is the same problem, shown once.
METRIC_MEANS: dict[str, tuple[str, ...]] = {
    "DCGM_FI_DEV_XID_ERRORS": ("xid",),
    "DCGM_FI_DEV_GPU_TEMP": ("temp", "thermal_throttle"),
    "DCGM_FI_DEV_MEMORY_TEMP": ("hbm_temp",),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("ecc_uncorrected",), "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": ("ecc_uncorrected",),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": ("ecc_corrected",), "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": ("ecc_corrected",),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("remap_failure",),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("remap_pending", "remap_failure", "ecc_uncorrected"),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("thermal_throttle",), "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("thermal_throttle",),
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": ("pcie_width",), "DCGM_FI_DEV_PCIE_LINK_GEN": ("pcie_gen",),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": ("nvlink",),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": ("nvlink_errors",),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": ("nvlink_errors",),
    "node_filesystem_readonly": ("mount_read-only",),
    "node_infiniband_state_id": ("ib_down",), "node_infiniband_physical_state_id": ("ib_down",),
    "node_infiniband_rate_bytes_per_second": ("ib_rate",),
    "node_infiniband_symbol_error_total": ("ib_errors",), "node_infiniband_link_error_recovery_total": ("ib_flap",),
    "node_systemd_unit_state": ("service_failed", "service_inactive"),
}


def means_of(metrics: tuple[str, ...], configured: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The finding-code prefixes an alert on ``metrics`` means, plus the site's own (``same_as``)."""
    return tuple(dict.fromkeys((*configured, *(c for m in metrics for c in METRIC_MEANS.get(m, ())))))


class Alert(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One alert: its name, the node (and GPU) it is about, its state and what it says."""

    fingerprint: str
    name: str  # the ``alertname`` label
    state: AlertState
    severity: Severity
    node: str | None = None  # hpctui node name from the configured node labels; None: cluster-wide
    gpu: int | None = None  # the ``gpu`` label (dcgm-exporter's GPU index), when it is one
    summary: str = ""  # the ``summary`` annotation (else ``description``, else ``message``)
    starts_at: float | None = None  # epoch seconds
    silenced_by: tuple[str, ...] = ()  # silence ids
    inhibited_by: tuple[str, ...] = ()  # fingerprints of the inhibiting alerts
    labels: tuple[tuple[str, str], ...] = ()  # every label, sorted by name
    metrics: tuple[str, ...] = ()  # metric names in the rule's expression (from generatorURL), e.g. DCGM_FI_DEV_XID_ERRORS
    means: tuple[str, ...] = ()  # hpctui finding codes (or ``xid*``-style prefixes) this alert means the same as

    @property
    def firing(self) -> bool:
        """Firing and notifying someone (not silenced, not inhibited)."""
        return self.state is not AlertState.SUPPRESSED and not self.silenced_by and not self.inhibited_by

    def label(self, name: str) -> str | None:
        return next((v for k, v in self.labels if k == name), None)


class SilenceMatcher(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One matcher of a silence: ``name`` = / != / =~ / !~ ``value``."""

    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    @property
    def text(self) -> str:
        op = ("=~" if self.is_regex else "=") if self.is_equal else ("!~" if self.is_regex else "!=")
        return f'{self.name}{op}"{self.value}"'


class Silence(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One silence: what it matches, who set it, why, from when until when."""

    id: str
    state: SilenceState
    matchers: tuple[SilenceMatcher, ...]
    created_by: str = ""
    comment: str = ""
    starts_at: float | None = None
    ends_at: float | None = None
    nodes: tuple[str, ...] = ()  # hpctui nodes it names with an equality matcher on a node label

    @property
    def matcher_text(self) -> str:
        return ", ".join(m.text for m in self.matchers)
