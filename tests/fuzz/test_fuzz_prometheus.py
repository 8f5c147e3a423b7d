"""Prometheus answers under mutation: decode_answer, then every family's handler, then the model.

Declared error: :class:`PromError` from ``decode_answer`` (the source catches exactly that per
query, prometheus/source.py). The Collector declares none: its handlers and ``build_*`` run on
whatever a decoded answer holds (any label value, any sample value) and never raise, else one
hostile series would fail the whole refresh ("prometheus ✗").
"""

from __future__ import annotations

import json
import sys
from typing import Any

from fuzzkit import (
    HOSTILE_NUMBERS,
    TESTS,
    check,
    clean_message,
    dump_json,
    hostile_text,
    mutated_bytes,
    mutated_json,
    seed_bytes,
    time_bound,
)
from hypothesis import example, given
from hypothesis import strategies as st

from hpctui.sources.prometheus.client import PromError, decode_answer
from hpctui.sources.prometheus.parse import Collector, NodeNamer
from hpctui.sources.prometheus.queries import families
from hpctui.sources.prometheus.settings import PrometheusSettings

sys.path.insert(0, str(TESTS / "prometheus"))
from promtext import fixture_samples

SETTINGS = PrometheusSettings(url="http://127.0.0.1:9090", mounts=["/", "/lustre", "/home"])
FAMILIES = families(SETTINGS)
TEXTS = ["dcgm-exporter_metrics_8x-h100_gpu-operator_drv580.105.08_sampled.prom",
         "dcgm-exporter_metrics_a100_mig-1g.5gb_GPU_I_PROFILE.prom", "node-exporter_infiniband_e2e-fixture.prom",
         "node-exporter_network_e2e-fixture.prom"]


def _answer(samples: list[Any]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": samples}}


def _samples(name: str) -> list[dict[str, Any]]:
    extra = {"instance": "10.0.0.1:9100", "Hostname": "gpu-node-1"} if "node-exporter" in name else None
    return [{"metric": s.metric, "value": list(s.value or ())} for s in fixture_samples(name, extra)]


ANSWERS = [json.loads(seed_bytes("prometheus/prometheus-api-v1-query_DCGM_FI_DEV_GPU_UTIL_2x8-h100.json")),
           *(_answer(_samples(n)) for n in TEXTS)]
ANSWER_BYTES = [dump_json(a, None) for a in ANSWERS]


@st.composite
def labels_mutated(draw: st.DrawFn) -> dict[str, Any]:
    """An answer with a few label values or sample values replaced by hostile ones (a mutation at a
    random place of the whole document rarely lands on the ``gpu`` or ``port`` label)."""
    doc = json.loads(json.dumps(draw(st.sampled_from(ANSWERS))))
    result = doc["data"]["result"]
    for _ in range(draw(st.integers(1, 4))):
        sample = draw(st.sampled_from(result))
        if draw(st.booleans()):
            key = draw(st.sampled_from(sorted(sample["metric"])))
            sample["metric"][key] = draw(st.one_of(hostile_text(), hostile_text().map(lambda h: "1" + h)))
        else:
            sample["value"][1] = draw(st.sampled_from(HOSTILE_NUMBERS))
    return doc


def answers() -> st.SearchStrategy[bytes]:
    return st.one_of(mutated_json(ANSWERS, max_edits=6).map(lambda d: dump_json(d, None)),
                     labels_mutated().map(lambda d: dump_json(d, None)), mutated_bytes(ANSWER_BYTES))


def _fold(bodies: list[bytes]) -> Collector:
    """Every family answered by one of ``bodies`` (the handlers pick what is theirs by name)."""
    collector = Collector(NodeNamer(SETTINGS.node_labels, SETTINGS.node_pattern, SETTINGS.node_replace),
                          SETTINGS.exporter_pod_pattern)
    for i, family in enumerate(FAMILIES):
        try:
            result = decode_answer(bodies[i % len(bodies)])
        except PromError:
            continue
        check(lambda result=result: result.warnings)
        collector.add(family.target, family.field, result.samples)
    return collector


def _build(c: Collector) -> tuple[Any, ...]:
    return (c.build_gpus(), c.build_ib(), c.build_mounts(SETTINGS.mounts), c.build_resources(), c.node_times(),
            c.warnings())


def _one_series(**labels: str) -> bytes:
    return dump_json(_answer([{"metric": {"Hostname": "gpu-node-1", **labels}, "value": [1.0, "5"]}]), None)


# Found by this test: "²".isdigit() is True but int("²") raises; int() refuses over 4,300 digits.
# Either in a gpu/GPU_I_ID/port label raised ValueError out of the Collector: the refresh failed.
@example([_one_series(gpu="1\u00b2")])
@example([_one_series(gpu="0", GPU_I_ID="\u00b2")])
@example([_one_series(device="mlx5_0", port="9" * 5000)])
@given(st.lists(answers(), min_size=1, max_size=4))
def test_prometheus_answers_fold_into_clean_models(bodies: list[bytes]) -> None:
    with time_bound():
        collector = _fold(bodies)
    check(lambda: _build(collector))


@given(answers(), st.sampled_from((200, 400, 500, 503)))
def test_decode_answer_raises_only_prom_error(body: bytes, status: int) -> None:
    """Its samples keep raw label values (the Collector cleans them, cached); warnings and errors are shown as they are."""
    try:
        check(lambda: decode_answer(body, status).warnings)
    except PromError as exc:
        clean_message(exc)
