"""Test helper: exposition-format lines (the real recordings in tests/fixtures/prometheus)
→ the samples Prometheus' API would return for them."""

from __future__ import annotations

import re
from pathlib import Path

from hpctui.sources.prometheus.client import Sample

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_text(text: str, extra: dict[str, str] | None = None) -> list[Sample]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or line.startswith("#"):
            continue
        labels = {k: v.encode().decode("unicode_escape") for k, v in _LABEL.findall(m.group(2) or "")}
        labels["__name__"] = m.group(1)
        labels.update(extra or {})
        out.append(Sample(metric=labels, value=(1_773_114_089.0, m.group(3))))
    return out


def fixture_samples(name: str, extra: dict[str, str] | None = None) -> list[Sample]:
    return parse_text((FIXTURES / name).read_text(), extra)


def family(samples: list[Sample], metric: str) -> list[Sample]:
    return [s for s in samples if s.metric["__name__"] == metric]
