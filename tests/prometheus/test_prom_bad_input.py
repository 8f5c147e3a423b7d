"""Prometheus down, slow, 4xx/5xx, partial data, warnings, NaN, stale series, Xid changes:
a clear status-line error or warning, stale markers with their age, "no data" where there is
none, no crash, recovery by itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fakeprom import FakeProm

from hpctui.core.poller import Poller
from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.model import Part
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource
from hpctui.ui.widgets.status import source_text

TOKEN = "s3cr3t-t0ken-value"


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def prom() -> AsyncIterator[FakeProm]:
    fake = FakeProm()
    await fake.start()
    yield fake
    await fake.stop()


def make(url: str, clock: Clock, **kw: object) -> tuple[PrometheusSource, Store, Poller]:
    options: dict[str, object] = {"ib": False, "resources": False, "timeout_s": 2.0, "scrape_interval_s": 10.0, **kw}
    settings = PrometheusSettings(url=url, **options)  # type: ignore[arg-type]
    source = PrometheusSource(settings, clock=clock)
    store = Store("c", clock=clock)
    return source, store, Poller([source], store)


def status(store: Store, clock: Clock) -> str:
    return source_text(store.health()["prometheus"], clock(), 5.0, Thresholds().stale_factor)[0]


async def test_down_is_an_error_in_the_status_line_then_recovers_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    fake = FakeProm()  # not started: nothing listens on its port
    source, store, poller = make(fake.url, clock)
    assert not await poller.poll_once(source)
    text = status(store, clock)
    assert "no data" in text and "cannot reach http://127.0.0.1:" in text
    await fake.start()
    try:
        clock.t += 5
        assert await poller.poll_once(source)
        assert store.health()["prometheus"].ok and "✓" in status(store, clock)
        assert store.snapshot().gpus["n1"][0].temp_c == 50.0
    finally:
        await source.close()
        await fake.stop()


@pytest.mark.parametrize(("code", "body", "expected"), [
    (500, None, "HTTP 500: internal: boom"),
    (503, b"<html>Service Unavailable</html>", "HTTP 503 Service Unavailable: <html>Service Unavailable</html>"),
    (400, None, "HTTP 400: internal: boom"),
    (401, b"Unauthorized", "HTTP 401 Unauthorized: check the bearer token / basic auth"),
])
async def test_http_errors_are_one_clear_line_and_keep_the_old_data(
        prom: FakeProm, code: int, body: bytes | None, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROM_TOKEN", TOKEN)
    clock = Clock()
    source, store, poller = make(prom.url, clock, bearer_token_env="PROM_TOKEN")
    try:
        assert await poller.poll_once(source)
        assert prom.headers_seen[0]["Authorization"] == f"Bearer {TOKEN}"
        prom.status, prom.body = code, body
        clock.t += 40
        assert not await poller.poll_once(source)
        health = store.health()["prometheus"]
        assert expected in (health.last_error or "")
        text = status(store, clock)
        assert "stale 40s" in text and expected in text and TOKEN not in text
        assert store.snapshot().gpus["n1"][0].temp_c == 50.0  # the last good data stays, marked stale
        prom.status, prom.body = 200, None
        clock.t += 5
        assert await poller.poll_once(source)
        assert store.health()["prometheus"].ok
    finally:
        await source.close()


async def test_token_from_file_is_sent_never_shown(prom: FakeProm, tmp_path: object) -> None:
    from pathlib import Path

    token_file = Path(str(tmp_path)) / "token"
    token_file.write_text(TOKEN + "\n")
    clock = Clock()
    source, _store, _poller = make(prom.url, clock, bearer_token_file=str(token_file))
    try:
        await source.collect()
        assert prom.headers_seen[-1]["Authorization"] == f"Bearer {TOKEN}"
        assert TOKEN not in repr(source.client) and TOKEN not in repr(source.settings)
    finally:
        await source.close()
    missing, _s, _p = make(prom.url, clock, bearer_token_file=str(token_file) + ".nope")
    with pytest.raises(Exception, match="cannot read bearer token file"):
        await missing.collect()


async def test_basic_auth_header(prom: FakeProm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROM_PW", "pw")
    source, _store, _poller = make(prom.url, Clock(), basic_user="ops", basic_password_env="PROM_PW")
    try:
        await source.collect()
        assert prom.headers_seen[-1]["Authorization"] == "Basic b3BzOnB3"
    finally:
        await source.close()


async def test_slow_server_times_out_with_a_clear_error(prom: FakeProm) -> None:
    clock = Clock()
    source, store, poller = make(prom.url, clock, timeout_s=1.0)
    prom.delay_s = 5.0
    try:
        assert not await poller.poll_once(source)
        err = store.health()["prometheus"].last_error or ""
        assert "within 1 s" in err
        prom.delay_s = 0.0
        recovered = False
        for _ in range(5):  # a loaded machine may need more than one try within 1 s
            recovered = await poller.poll_once(source)
            if recovered:
                break
        assert recovered and store.health()["prometheus"].ok
    finally:
        await source.close()


async def test_warnings_and_partial_failures_are_status_line_warnings(prom: FakeProm) -> None:
    clock = Clock()
    source, store, poller = make(prom.url, clock)
    prom.warnings = ["remote read failed: partial response"]
    prom.fail_matching = "DCGM_FI_DEV_POWER_USAGE"
    try:
        assert await poller.poll_once(source)
        health = store.health()["prometheus"]
        assert health.warnings[0].startswith("1 of ") and "HTTP 422: execution: query too heavy" in health.warnings[0]
        assert "prometheus: remote read failed: partial response" in health.warnings
        assert "⚠" in status(store, clock)
        gpu = store.snapshot().gpus["n1"][0]
        assert gpu.power_w is None and gpu.temp_c == 50.0  # the failed family is N/A, the rest is there
    finally:
        await source.close()


async def test_nan_values_are_na_with_a_note(prom: FakeProm) -> None:
    clock = Clock()
    source, store, poller = make(prom.url, clock)
    prom.temp = "NaN"
    try:
        await poller.poll_once(source)
        gpu = store.snapshot().gpus["n1"][0]
        assert gpu.temp_c is None and gpu.power_w is None
        assert any("NaN/Inf values shown as N/A" in w for w in store.health()["prometheus"].warnings)
    finally:
        await source.close()


async def test_stale_series_keep_their_age_then_become_no_data(prom: FakeProm) -> None:
    clock = Clock()
    source, store, poller = make(prom.url, clock, keep_stale_s=120.0)
    try:
        await poller.poll_once(source)
        t_seen = clock.t
        prom.nodes = ["n1"]  # n2's exporter stopped: Prometheus marks its series stale, they vanish
        clock.t += 60
        await poller.poll_once(source)
        snap = store.snapshot()
        assert snap.gpus["n2"][0].temp_c == 50.0  # last value kept...
        assert snap.value_age(Part.GPUS, "n2", clock.t) == ("prometheus", 60.0)  # ...with its age
        assert snap.value_age(Part.GPUS, "n1", clock.t) == ("prometheus", 0.0)
        assert any("1 node(s) stale: no sample for over 30 s" in w for w in store.health()["prometheus"].warnings)
        assert snap.sources["prometheus"].stale_after_s == 30.0
        clock.t = t_seen + 200
        await poller.poll_once(source)
        snap = store.snapshot()
        assert "n2" not in snap.gpus and snap.value_age(Part.GPUS, "n2", clock.t) is None  # no data, not zeros
        # a series Prometheus still returns but whose newest sample is old (lookback window) is stale too
        prom.sample_time = clock.t - 50
        clock.t += 1
        await poller.poll_once(source)
        assert store.snapshot().value_age(Part.GPUS, "n1", clock.t) == ("prometheus", pytest.approx(51.0))
    finally:
        await source.close()


async def test_xid_gauge_change_is_one_event(prom: FakeProm) -> None:
    clock = Clock()
    source, store, poller = make(prom.url, clock)
    try:
        await poller.poll_once(source)
        prom.xid = {"n1": "79"}
        for _ in range(3):
            clock.t += 5
            await poller.poll_once(source)
        prom.xid = {"n1": "48"}
        clock.t += 5
        await poller.poll_once(source)
        events = [e for e in store.snapshot().events if e.object == "gpu/n1/0"]
        assert [e.message.split(":")[0] for e in events] == ["Xid 79", "Xid 48"]
        assert store.snapshot().gpus["n1"][0].last_xid == 48
    finally:
        await source.close()


async def test_history_is_a_range_query_with_its_window(prom: FakeProm) -> None:
    clock = Clock()
    source, _store, poller = make(prom.url, clock, history_window_s=600.0)
    try:
        await poller.poll_once(source)
        hist = await source.history("n1", "util")
        assert hist.window_text == "util, last 10m (step 5s) from prometheus"
        assert hist.points[0] == (clock.t - 600, 40.0) and len(hist.points) == 121
        assert 'avg(DCGM_FI_DEV_GPU_UTIL{Hostname="n1"})' in prom.queries[-1]
        assert (await source.history("unknown-node")).points == []
    finally:
        await source.close()


async def test_a_rotated_token_file_is_read_again_after_401(prom: FakeProm, tmp_path: object) -> None:
    from pathlib import Path

    token_file = Path(str(tmp_path)) / "token"
    token_file.write_text("old-token")
    source, _store, _poller = make(prom.url, Clock(), bearer_token_file=str(token_file))
    try:
        await source.collect()
        prom.status, prom.body = 401, b"Unauthorized"
        with pytest.raises(Exception, match="HTTP 401"):
            await source.collect()
        token_file.write_text("new-token")
        prom.status, prom.body = 200, None
        await source.collect()
        assert prom.headers_seen[-1]["Authorization"] == "Bearer new-token"
    finally:
        await source.close()


async def test_server_text_is_sanitised(prom: FakeProm) -> None:
    prom.warnings = ["evil \x1b]0;title\x07 warning"]
    source, store, poller = make(prom.url, Clock())
    try:
        await poller.poll_once(source)
        assert all("\x1b" not in w for w in store.health()["prometheus"].warnings)
        prom.status, prom.body = 500, b"\x1b[2Jcleared"
        await poller.poll_once(source)
        assert "\x1b" not in (store.health()["prometheus"].last_error or "")
    finally:
        await source.close()


async def test_a_series_answered_past_the_keep_window_is_no_data(prom: FakeProm) -> None:
    """VictoriaMetrics answers a vanished series with its last sample for its whole lookback:
    once that sample is older than keep_stale_s the node has no data, as with Prometheus."""
    clock = Clock()
    source, store, poller = make(prom.url, clock, keep_stale_s=120.0)
    try:
        prom.sample_time = clock.t - 100  # within the keep window: kept, with its age
        await poller.poll_once(source)
        assert store.snapshot().value_age(Part.GPUS, "n1", clock.t) == ("prometheus", pytest.approx(100.0))
        prom.sample_time = clock.t - 200  # past it: gone, although the engine still answers
        clock.t += 1
        await poller.poll_once(source)
        snap = store.snapshot()
        assert "n1" not in snap.gpus and snap.value_age(Part.GPUS, "n1", clock.t) is None
    finally:
        await source.close()


async def test_answers_are_asked_for_gzip_compressed(prom: FakeProm) -> None:
    clock = Clock()
    source, _store, poller = make(prom.url, clock)
    try:
        await poller.poll_once(source)
        assert all("gzip" in h.get("Accept-Encoding", "") for h in prom.headers_seen)
    finally:
        await source.close()
