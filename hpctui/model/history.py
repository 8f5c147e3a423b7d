"""A metric over a time window, as a history provider (Prometheus range query) answers for a chart."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MetricHistory:
    """A range-query answer for the node panel's chart, with the window it covers."""

    node: str
    metric: str
    gpu: int | None
    start: float
    end: float
    step_s: float
    points: list[tuple[float, float]] = field(default_factory=list)
    source: str = "prometheus"

    @property
    def window_text(self) -> str:
        span = self.end - self.start
        unit = f"{span / 3600:g}h" if span >= 3600 else f"{span / 60:g}m"
        what = f"GPU {self.gpu} " if self.gpu is not None else ""
        return f"{what}{self.metric}, last {unit} (step {self.step_s:g}s) from {self.source}"
