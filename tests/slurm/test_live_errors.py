"""Bad input and broken peers: clear SourceErrors or per-target errors, never a crash or a hang."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from slurm_helpers import run, source
from slurmlab import SlurmLab

from hpctui.core.store import Store
from hpctui.model import Part
from hpctui.model.action import ActionKind
from hpctui.sources.base import SourceError

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def fake_tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def test_malformed_sinfo_json_falls_back_to_scontrol_text(lab: SlurmLab, tmp_path: Path) -> None:
    fake_tool(tmp_path, "sinfo", 'echo \'{"meta": {}, "errors": [], "nodes": [{"name": "gpu01", "sta\'')

    async def go() -> None:
        src = source(lab, "cli", bin_dir=str(tmp_path))
        r = await src.collect()
        assert len(r.slurm_nodes or {}) == 6  # real nodes, read through the text fallback
        assert "scontrol -o show nodes" in src.calls
        assert any("sinfo --json unreadable" in w for w in src.warnings)

    run(go())


def test_garbage_from_every_node_tool_is_a_clear_source_error(lab: SlurmLab, tmp_path: Path) -> None:
    fake_tool(tmp_path, "sinfo", "echo 'not json at all'")
    fake_tool(tmp_path, "scontrol", "echo 'NodeName'")

    async def go() -> None:
        src = source(lab, "cli", bin_dir=str(tmp_path))
        # nodes unreadable, jobs fine: the jobs are still shown, the nodes' problem is a warning
        result = await src.collect()
        assert result.slurm_nodes is None and result.slurm_jobs is not None
        assert any(w.startswith("nodes unavailable") and "cannot read Slurm nodes" in w for w in result.warnings)
        fake_tool(tmp_path, "squeue", "echo 'not json either'")  # both unreadable: the source fails
        with pytest.raises(SourceError, match="cannot read Slurm nodes"):
            await src.collect()

    run(go())


def test_sinfo_without_json_is_detected_once(lab: SlurmLab, tmp_path: Path) -> None:
    fake_tool(tmp_path, "sinfo", "echo \"sinfo: unrecognized option '--json'\" >&2; exit 1")

    async def go() -> None:
        src = source(lab, "cli", bin_dir=str(tmp_path))
        r = await src.collect()
        assert len(r.slurm_nodes or {}) == 6
        r = await src.collect()
        assert "sinfo --json" not in src.calls and "scontrol -o show nodes" in src.calls
        assert len(r.slurm_nodes or {}) == 6

    run(go())


def test_hung_cli_times_out_and_is_killed(lab: SlurmLab, tmp_path: Path) -> None:
    fake_tool(tmp_path, "sinfo", "sleep 60")

    async def go() -> None:
        src = source(lab, "cli", bin_dir=str(tmp_path), timeout_s=1.0)
        t0 = time.monotonic()
        result = await src.collect()  # only sinfo hangs: killed at 1 s, the jobs are still shown
        assert result.slurm_nodes is None and result.slurm_jobs is not None
        assert any("slurmctld unreachable: sinfo timed out after 1s" in w for w in result.warnings), result.warnings
        assert time.monotonic() - t0 < 3

    run(go())


def test_rest_http_500_for_unknown_job_is_a_per_target_error(lab: SlurmLab) -> None:
    async def go() -> None:
        src = source(lab, "rest-unix")
        try:
            await src.collect()
            assert src.rest is not None
            results = await src.rest.act(ActionKind.CANCEL_JOBS, ("999999",), {})
            if lab.version == "24.11":  # DELETE job/999999 answers HTTP 200, no errors (v0.0.40-42)
                assert results[0].ok and "verified: gone" in results[0].message, results
                return
            assert not results[0].ok
            assert "HTTP 500" in results[0].message and "Invalid job id specified" in results[0].message
        finally:
            await src.close()

    run(go())


UNSERVED = {"22.05": "v0.0.41", "24.11": "v0.0.39"}  # a version the bed's slurmrestd does not serve


@pytest.mark.parametrize(("version", "match"), [
    ("v0.0.99", "unsupported Slurm REST version v0.0.99"),
    ("unserved", "slurmrestd does not serve /slurm/{v}/"),
])
def test_unknown_rest_version(lab: SlurmLab, version: str, match: str) -> None:
    if version == "unserved":
        version = UNSERVED[lab.version]
        match = match.format(v=version)

    async def go() -> None:
        src = source(lab, "rest-unix", rest_version=version)
        try:
            with pytest.raises(SourceError, match=match):
                await src.collect()
        finally:
            await src.close()

    run(go())


def _forged_jwt(exp: float) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc({'exp': int(exp), 'sun': 'root'})}.c2lnbmF0dXJl"


@pytest.mark.parametrize("kind", ["garbage", "expired", "wrong-key", "missing"])
def test_bad_jwt_is_reported_clearly(lab: SlurmLab, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JWT", raising=False)
    if kind == "expired":
        token = lab.token(lifespan=1)
        time.sleep(1.5)
    else:
        token = {"garbage": "garbage", "wrong-key": _forged_jwt(time.time() + 600), "missing": ""}[kind]

    async def go() -> None:
        src = source(lab, "rest-jwt", jwt=token or None, jwt_from_scontrol=False)
        try:
            with pytest.raises(SourceError) as info:
                await src.collect()
        finally:
            await src.close()
        msg = str(info.value)
        if kind == "missing":
            assert "refused authentication (HTTP 401" in msg
        else:
            assert msg.startswith("JWT expired or invalid"), msg

    run(go())


@pytest.mark.parametrize("backend", ["cli", "rest-unix"])
def test_dead_controller_then_recovery(lab: SlurmLab, backend: str) -> None:
    async def go() -> None:
        src = source(lab, backend, timeout_s=3.0)
        store = Store("lab")
        store.register_source(src.name, src.kind)
        try:
            first = await src.collect()
            store.apply(first)
            lab.kill_ctld()
            t0 = time.monotonic()
            with pytest.raises(SourceError) as info:
                await src.collect()
            took = time.monotonic() - t0
            assert took < 3.0 * 1.5 + 1, took
            assert "slurmctld unreachable" in str(info.value), str(info.value)
            store.record_error(src.name, str(info.value))
            snap = store.snapshot()
            health = snap.sources[src.name]
            assert health.last_error and "slurmctld unreachable" in health.last_error
            assert health.last_success == first.time and set(snap.nodes) == set(first.slurm_nodes or {})
            assert snap.part_age(Part.SLURM_NODES, now=first.time + 5) == pytest.approx(5)
            lab.restart_ctld()
            again = await src.collect()
            store.apply(again)
            assert store.snapshot().sources[src.name].last_error is None
            assert set(again.slurm_nodes or {}) == set(first.slurm_nodes or {})
        finally:
            await src.close()
            if not lab.pid_alive("slurmctld"):
                lab.restart_ctld()

    run(go())
