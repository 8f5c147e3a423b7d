"""InfiniBand port model, as read from /sys/class/infiniband/<dev>/ports/<n>/."""

from __future__ import annotations

import msgspec

# Counters that signal a bad cable or link (FACTS §4); xmit_wait/discards are congestion.
LINK_ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "local_link_integrity_errors",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
)


class IbPort(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    node: str
    device: str  # mlx5_0
    port: int
    state: str | None = None  # "ACTIVE" (from "4: ACTIVE")
    phys_state: str | None = None  # "LinkUp"
    rate_gbps: float | None = None  # 400
    rate_text: str | None = None  # "400 Gb/sec (4X NDR)"
    max_rate_gbps: float | None = None  # what the port should run at, when known
    link_layer: str | None = None
    counters: dict[str, int] = msgspec.field(default_factory=dict)
    deltas: dict[str, int] = msgspec.field(default_factory=dict)  # since previous read
    flaps: int = 0  # downs seen by the probe since it started (link_downed rises, ACTIVE -> not ACTIVE)
    last_down: float | None = None  # when the probe last saw the port go down; stays after it is back up

    @property
    def degraded_rate(self) -> bool:
        return (
            self.rate_gbps is not None
            and self.max_rate_gbps is not None
            and self.rate_gbps < self.max_rate_gbps
        )

    @property
    def link_errors_rising(self) -> bool:
        deltas = self.deltas
        if not deltas or not any(deltas.values()):  # the common case, in C: nothing moved
            return False
        return any(deltas.get(name, 0) > 0 for name in LINK_ERROR_COUNTERS)

    @property
    def is_up(self) -> bool:
        return self.state == "ACTIVE" and self.phys_state == "LinkUp"
