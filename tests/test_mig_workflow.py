"""The MIG wizard's workflow on the demo cluster: end to end (in process and through the
`hpctui act mig` command), a failed apply (node stays drained, the reason names the step, audited),
read-only refusal, cancel before apply."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.mig import MigWorkflow, Status, Step
from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.sources.demo.source import DemoSource

T0 = 1_750_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def runtime(tmp_path: Path, read_only: bool = False) -> tuple[Runtime, DemoSource]:
    rt = demo_runtime(size=64, seed=0, clock=Clock(), start_time=T0, read_only=read_only,
                      audit_path=tmp_path / "audit.jsonl")
    src = rt.sources[0]
    assert isinstance(src, DemoSource)
    src.mig_delay_s = 0.0  # a frozen clock: the layout shows at once
    return rt, src


def mig_node(src: DemoSource) -> str:
    return next(n for n, v in src.sim.mig.items() if v[0] is not None)  # all-balanced, no jobs


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_demo_end_to_end_changes_the_gpus_and_audits_every_step(tmp_path: Path) -> None:
    rt, src = runtime(tmp_path)
    node = mig_node(src)
    lines: list[str] = []

    async def go() -> MigWorkflow:
        await rt.collect_once()
        wf = MigWorkflow(rt, [node], "all-1g", "0,1", poll_s=0.0,
                         on_change=lambda s, line: lines.append(f"{s.key}:{s.status}:{line}"))
        assert wf.prepare()
        assert await wf.run(wf.confirm_word)
        await rt.collect_once()
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow)
    assert [s.status for s in wf.steps] == [Status.OK, Status.OK, Status.OK, Status.OK, Status.OK, Status.OK,
                                            Status.WARN, Status.OK]
    snap = rt.store.snapshot()
    gpus = snap.gpus[node]
    assert [m.profile for m in gpus[0].mig_instances] == ["1g.10gb"] * 7
    assert [m.profile for m in gpus[1].mig_instances] == ["1g.10gb"] * 7
    assert [m.profile for m in gpus[2].mig_instances] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]  # untouched
    slurm = snap.nodes[node].slurm
    assert slurm is not None and "DRAIN" not in slurm.flags  # resumed
    assert slurm.gres == "gpu:1g.10gb:26,gpu:3g.40gb:6,gpu:2g.20gb:6"  # 2×7 new + 6×2 of the balanced GPUs
    gres = "\n".join(wf.step("gres").detail)
    assert f"NodeName={node} Name=gpu Type=1g.10gb Count=14" in gres and "AutoDetect=nvml" in gres
    records = AuditLog(tmp_path / "audit.jsonl").read()
    actions = [(r["action"], r["source"], r["params"].get("step")) for r in records]
    assert ("drain", "demo", None) in actions and ("cordon", "demo", None) in actions
    assert ("mig_reconfigure", "demo", None) in actions  # the apply itself, through an executor
    assert ("resume", "demo", None) in actions and ("uncordon", "demo", None) in actions
    for step in ("idle", "drain", "wait", "verify", "resume"):
        assert ("mig_reconfigure", "mig-wizard", step) in actions
    runs = {r.get("wizard") for r in records if r["source"] == "mig-wizard"}
    assert runs == {wf.id} and len({r["id"] for r in records}) == len(records)
    assert any(r["source"] == "demo" and r["action"] == "mig_reconfigure" and r.get("wizard") == wf.id
               for r in records)
    intents = [r for r in AuditLog(tmp_path / "audit.jsonl").read(intents=True) if r["phase"] == "intent"]
    assert any(r["action"] == "mig_reconfigure" and "nvidia-smi mig -i 0 -cgi" in " ".join(r["commands"])
               for r in intents)


def test_failed_apply_leaves_node_drained_with_the_step_in_the_reason(tmp_path: Path) -> None:
    rt, src = runtime(tmp_path)
    node = mig_node(src)
    src.mig_fail[node] = 3

    async def go() -> MigWorkflow:
        await rt.collect_once()
        wf = MigWorkflow(rt, [node], "all-7g", poll_s=0.0)
        assert wf.prepare()
        assert not await wf.run(wf.confirm_word)
        await rt.collect_once()
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow)
    assert wf.step("apply").status is Status.FAILED
    assert [wf.step(k).status for k in ("verify", "gres", "resume")] == [Status.SKIPPED] * 3
    slurm = rt.store.snapshot().nodes[node].slurm
    assert slurm is not None and "DRAIN" in slurm.flags
    assert slurm.reason == "hpctui mig: apply failed on GPU 3"
    records = AuditLog(tmp_path / "audit.jsonl").read()
    apply = [r for r in records if r["action"] == "mig_reconfigure" and r["source"] == "demo"]
    assert apply and not apply[0]["results"][0]["ok"] and "GPU 3" in apply[0]["results"][0]["message"]
    assert any(r["action"] == "drain" and r["params"]["reason"] == "hpctui mig: apply failed on GPU 3"
               for r in records)
    assert any(r["source"] == "mig-wizard" and r["params"]["step"] == "apply" and not r["results"][0]["ok"]
               for r in records)
    assert not any(r["action"] == "resume" for r in records)


def test_read_only_refuses_and_audits(tmp_path: Path) -> None:
    rt, src = runtime(tmp_path, read_only=True)
    node = mig_node(src)

    async def go() -> MigWorkflow:
        await rt.collect_once()
        wf = MigWorkflow(rt, [node], "all-1g", poll_s=0.0)
        assert not wf.prepare()
        assert not await wf.run(wf.confirm_word)
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow)
    assert "read-only" in " ".join(wf.errors)
    [record] = AuditLog(tmp_path / "audit.jsonl").read()
    assert record["refused"] == "read-only mode" and record["source"] == "mig-wizard"
    assert src.sim.mig[node][0] == ("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb")


def test_wrong_confirmation_and_bad_layout_run_nothing(tmp_path: Path) -> None:
    rt, src = runtime(tmp_path)
    node = mig_node(src)

    async def go() -> None:
        await rt.collect_once()
        wf = MigWorkflow(rt, [node], "all-1g", poll_s=0.0)
        assert wf.prepare()
        assert not await wf.run("yes")
        bad = MigWorkflow(rt, [node], "three-3g", poll_s=0.0)
        assert not bad.prepare()
        assert "unknown layout 'three-3g'" in bad.errors[0]
        gpus = MigWorkflow(rt, [node], "all-1g", "9", poll_s=0.0)
        assert not gpus.prepare() and "no GPU 9" in gpus.errors[0]

    run(go())
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert [r["refused"] for r in records if r["refused"]] == ["not confirmed (type 'mig-1')"]
    assert {r["params"]["step"] for r in records} == {"idle", "run"}  # the idle check is recorded too
    assert "DRAIN" not in src.sim.admin[node].flags


def test_cancel_before_apply_puts_drained_nodes_back(tmp_path: Path) -> None:
    rt, src = runtime(tmp_path)
    busy = next(n for n in src.sim.mig if src.sim.workload.running_on(n) and n != src.sim.place.xid_node)

    async def go() -> MigWorkflow:
        await rt.collect_once()
        waiting = asyncio.Event()

        def changed(step: Step, line: str | None) -> None:
            if step.key == "wait" and step.status is Status.RUNNING:
                waiting.set()

        wf = MigWorkflow(rt, [busy], "all-1g", poll_s=0.01, on_change=changed)
        assert wf.prepare()
        assert wf.step("idle").status is Status.WARN  # a job runs there: the drain will wait
        task = asyncio.create_task(wf.run(wf.confirm_word))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow)
    assert wf.step("wait").status is Status.CANCELLED and wf.step("apply").status is Status.CANCELLED
    assert "DRAIN" not in src.sim.admin[busy].flags and not src.sim.admin[busy].cordoned
    actions = [r["action"] for r in AuditLog(tmp_path / "audit.jsonl").read()]
    assert "drain" in actions and "resume" in actions and "mig_reconfigure" in actions  # the cancel record


def hpctui(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "hpctui", "act", *args], capture_output=True, text=True,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


def test_act_mig_subprocess(tmp_path: Path) -> None:
    node = "gpu0010"  # the demo's H100 MIG node at size 64, seed 0
    dry = hpctui(tmp_path, "mig", "--demo", "--targets", node, "--param", "layout=all-1g", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"ssh {node} nvidia-smi mig -i 0 -cgi 1g.10gb,1g.10gb" in dry.stdout
    refused = hpctui(tmp_path, "mig", "--demo", "--targets", node, "--param", "layout=all-1g")
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    bad = hpctui(tmp_path, "mig", "--demo", "--targets", node, "--param", "layout=bogus", "--yes")
    assert bad.returncode == 2 and "unknown layout 'bogus'" in bad.stdout
    ro = hpctui(tmp_path, "mig", "--demo", "--read-only", "--targets", node, "--param", "layout=all-1g", "--yes")
    assert ro.returncode == 2 and "read-only" in ro.stdout
    ok = hpctui(tmp_path, "mig", "--demo", "--targets", node, "--param", "layout=all-1g", "--param", "gpus=0",
                "--yes", "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["ok"] and [s["status"] for s in doc["steps"]] == ["ok", "ok", "ok", "ok", "ok", "ok", "warn", "ok"]
    assert any(f"ok {node}: 7×1g.10gb on 1 GPU(s)" == line for line in doc["steps"][5]["detail"])
    text = hpctui(tmp_path, "mig", "--demo", "--targets", node, "--param", "layout=all-disabled", "--yes")
    assert text.returncode == 0, text.stdout
    assert "[ok  ] Verify instances" in text.stdout and "[ok  ] Resume / uncordon" in text.stdout
    audit = [json.loads(x) for x in (tmp_path / "state" / "hpctui" / "audit.jsonl").read_text().splitlines()]
    refused = [r["refused"] for r in audit if r.get("source") == "mig-wizard" and r.get("refused")]
    assert refused[0] == "not confirmed (type 'mig-1')"
    assert refused[1].startswith(f"{node}: unknown layout 'bogus'") and refused[2] == "read-only mode"
    assert sum(1 for r in audit if r["action"] == "mig_reconfigure" and r["source"] == "demo"
               and r["phase"] == "outcome") == 2  # the two applies that ran


def test_config_layouts_reach_the_runtime() -> None:
    from hpctui.core.config import parse_config
    from hpctui.core.runtime import runtime_from_config

    config = parse_config({"clusters": {"lab": {"sources": [{"kind": "demo"}]}},
                           "mig_layouts": {"two-3g": {"devices": {"3g.40gb": 2}}}})
    rt = runtime_from_config(config, "lab")
    assert rt.mig_layouts["two-3g"].devices == {"3g.40gb": 2}


def test_verify_keeps_trying_a_node_that_cannot_be_read_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node resetting its GPU is often unreachable: a read that raises is tried again, not fatal."""
    rt, src = runtime(tmp_path)
    node = mig_node(src)
    calls: list[str] = []

    async def flaky(name: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        calls.append(name)
        if len(calls) <= 3:
            raise OSError(113, "No route to host")
        return wf.observed(rt.store.snapshot(), name)

    monkeypatch.setattr(src, "read_mig", flaky, raising=False)  # what the SSH route's backend has
    wf = MigWorkflow(rt, [node], "all-1g", "0", poll_s=0.0)

    async def go() -> bool:
        await rt.collect_once()
        assert wf.prepare()
        return await wf.run(wf.confirm_word)

    assert run(go()) is True
    assert len(calls) == 4 and wf.step("verify").status is Status.OK
    detail = wf.step("verify").detail
    assert f"{node}: cannot read its MIG layout yet (OSError: [Errno 113] No route to host); trying again" in detail
    assert sum("cannot read" in line for line in detail) == 1  # the same error is said once
    assert "DRAIN" not in src.sim.admin[node].flags


def test_verify_of_an_unreachable_node_fails_the_step_and_leaves_it_drained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt, src = runtime(tmp_path)
    node = mig_node(src)

    async def down(name: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        raise TimeoutError

    monkeypatch.setattr(src, "read_mig", down, raising=False)
    wf = MigWorkflow(rt, [node], "all-1g", "0", poll_s=0.0, verify_timeout_s=0.0)

    async def go() -> bool:
        await rt.collect_once()
        assert wf.prepare()
        ok = await wf.run(wf.confirm_word)
        await rt.collect_once()
        return ok

    assert run(go()) is False
    assert wf.done and wf.step("verify").status is Status.FAILED
    assert [wf.step(k).status for k in ("gres", "resume")] == [Status.SKIPPED] * 2
    assert any("its MIG layout could not be read in 0 s (TimeoutError)" in line for line in wf.step("verify").detail)
    slurm = rt.store.snapshot().nodes[node].slurm
    assert slurm is not None and "DRAIN" in slurm.flags
    assert slurm.reason == "hpctui mig: verify failed: node unreachable"
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert any(r["source"] == "mig-wizard" and r["params"]["step"] == "verify" and not r["results"][0]["ok"]
               and r["results"][0]["message"] == "hpctui mig: verify failed: node unreachable" for r in records)
    assert not any(r["action"] == "resume" for r in records)


def test_an_unexpected_error_in_a_step_stops_there_audited_and_drained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt, src = runtime(tmp_path)
    node = mig_node(src)
    wf = MigWorkflow(rt, [node], "all-1g", "0", poll_s=0.0)

    def broken(key: str) -> None:
        raise RuntimeError("bug in the gres step")

    async def go() -> bool:
        await rt.collect_once()
        assert wf.prepare()
        monkeypatch.setattr(wf, "_gres", lambda: (wf._set("gres", Status.RUNNING), broken("gres")))
        ok = await wf.run(wf.confirm_word)
        await rt.collect_once()
        return ok

    assert run(go()) is False
    assert wf.done and wf.step("gres").status is Status.FAILED and wf.step("resume").status is Status.SKIPPED
    slurm = rt.store.snapshot().nodes[node].slurm
    assert slurm is not None and slurm.reason == "hpctui mig: gres failed: RuntimeError: bug in the gres step"
    assert any(r["source"] == "mig-wizard" and r["params"]["step"] == "gres"
               for r in AuditLog(tmp_path / "audit.jsonl").read())


def test_with_the_poller_running_the_wizard_collects_nothing_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI's poller collects: the wait and verify loops ask it for a refresh and never collect a
    source themselves (no source is collected twice at once)."""
    rt, src = runtime(tmp_path)
    node = mig_node(src)
    own = src.collect
    in_flight = {"now": 0, "most": 0, "calls": 0}

    async def counted() -> object:
        in_flight["now"] += 1
        in_flight["calls"] += 1
        in_flight["most"] = max(in_flight["most"], in_flight["now"])
        try:
            return await own()
        finally:
            in_flight["now"] -= 1

    async def forbidden() -> None:
        raise AssertionError("collect_once while the poller runs")

    monkeypatch.setattr(src, "collect", counted)
    monkeypatch.setattr(rt, "collect_once", forbidden)
    monkeypatch.setattr(rt.poller, "poll_all_once", forbidden)
    refreshes: list[int] = []
    wake = rt.refresh_now
    monkeypatch.setattr(rt, "refresh_now", lambda: (refreshes.append(1), wake()))

    async def go() -> bool:
        await rt.poller.poll_once(src)
        rt.start()
        try:
            wf = MigWorkflow(rt, [node], "all-1g", "0", poll_s=0.01)
            assert wf.prepare()
            ok = await wf.run(wf.confirm_word)
            assert ok, [(s.key, s.status, s.detail) for s in wf.steps]
            return ok
        finally:
            await rt.stop()

    assert run(go()) is True
    assert in_flight["most"] == 1 and in_flight["calls"] >= 2
    assert len(refreshes) == 2  # once at the start of the wait step, once at the start of verify
    assert [m.profile for m in rt.store.snapshot().gpus[node][0].mig_instances] == ["1g.10gb"] * 7


def test_without_a_poller_each_source_is_collected_at_most_once_per_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hpctui act mig` has no poller: the wait loop collects a source at the step's start, then only when
    its interval has passed, however short the loop period."""
    rt, src = runtime(tmp_path)
    src.interval_s = 3600.0
    busy = next(n for n in src.sim.mig if src.sim.workload.running_on(n) and n != src.sim.place.xid_node)
    calls: list[str] = []
    own = rt.poller.poll_once

    async def counted(source: object) -> bool:
        calls.append(getattr(source, "name", "?"))
        return await own(source)  # type: ignore[arg-type]

    async def go() -> MigWorkflow:
        await rt.collect_once()
        monkeypatch.setattr(rt.poller, "poll_once", counted)
        wf = MigWorkflow(rt, [busy], "all-1g", poll_s=0.001, wait_timeout_s=0.2)
        assert wf.prepare()
        assert not await wf.run(wf.confirm_word)  # the job never ends on a frozen clock
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow) and wf.step("wait").status is Status.FAILED
    assert calls == [src.name]  # at the start of the wait step; not every round


def test_a_gh200_node_is_refused_not_given_the_h200_table(tmp_path: Path) -> None:
    import msgspec

    rt, src = runtime(tmp_path)
    node = mig_node(src)

    async def go() -> MigWorkflow:
        await rt.collect_once()
        snap = rt.store.snapshot()
        gh200 = tuple(msgspec.structs.replace(g, model="NVIDIA GH200 480GB") for g in snap.gpus[node])
        snap = msgspec.structs.replace(snap, gpus={**snap.gpus, node: gh200})
        wf = MigWorkflow(rt, [node], "all-1g", poll_s=0.0)
        assert not wf.prepare(snap)
        assert not await wf.run(wf.confirm_word)
        return wf

    wf = run(go())
    assert isinstance(wf, MigWorkflow)
    assert wf.errors == [f"{node}: layout 'all-1g': no MIG profile table for NVIDIA GH200 480GB (only H100 80GB "
                         "and H200 141GB are known, and no `nvidia-smi mig -lgip` was read from it)"]
    assert "DRAIN" not in src.sim.admin[node].flags
