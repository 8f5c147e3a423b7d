"""No cluster needed: settings, JWT expiry, REST capabilities, pyslurm backend on a fake module."""

from __future__ import annotations

import asyncio
import os
import sys
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hpctui.actions.executor import ActionExecutor
from hpctui.model import ClusterSnapshot, Node, SlurmJob, SlurmNodeInfo
from hpctui.model.action import ActionKind
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm.jwt import jwt_expiry
from hpctui.sources.slurm.rest import rest_capabilities
from hpctui.sources.slurm.runner import CommandTimeout, Runner


def test_settings_from_toml_dict_and_typos_rejected() -> None:
    s = msgspec.convert({"backend": "rest", "rest_url": "unix:///run/slurmrestd.sock", "interval_s": 2}, SlurmSettings)
    assert s.backend == "rest" and s.interval_s == 2.0 and s.name == "slurm"
    with pytest.raises(msgspec.ValidationError, match="rest_ulr"):
        msgspec.convert({"rest_ulr": "x"}, SlurmSettings)
    with pytest.raises(msgspec.ValidationError, match="needs rest_url"):
        msgspec.convert({"backend": "rest"}, SlurmSettings)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"backend": "ssh"}, SlurmSettings)
    assert build_slurm_source(SlurmSettings(name="c1")).name == "c1"


def test_jwt_expiry() -> None:
    tok = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTU5NzQyNDIsImlhdCI6MTc5NTk3NDE4Miwic3VuIjoicm9vdCJ9.x"
    assert jwt_expiry(tok) == 1795974242.0
    with pytest.raises(ValueError, match="not a JWT"):
        jwt_expiry("garbage")


def test_rest_capabilities_by_version() -> None:
    assert rest_capabilities("v0.0.38") == {ActionKind.CANCEL_JOBS, ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS}
    assert ActionKind.DRAIN_NODES in rest_capabilities("v0.0.39")
    assert ActionKind.REQUEUE_JOBS not in rest_capabilities("v0.0.44")
    assert ActionKind.REQUEUE_JOBS in rest_capabilities("v0.0.45")
    with pytest.raises(SourceError):
        rest_capabilities("v1")


def test_runner_kills_on_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"

    async def go() -> None:
        r = Runner(timeout_s=0.3)
        with pytest.raises(CommandTimeout, match=r"timed out after 0\.3s"):
            await r.run(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"])
        assert r.calls == [f"sh -c echo $$ > {pidfile}; exec sleep 30"]
    asyncio.run(go())
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running for 30 s
        os.kill(pid, 0)


def _snap() -> ClusterSnapshot:
    nodes = {n: Node(name=n, slurm=SlurmNodeInfo(base_state="MIXED" if n == "gpu01" else "IDLE",
                                                 partitions=("gpu",), gpus_total=8)) for n in ("gpu01", "gpu02")}
    jobs = (SlurmJob(job_id=7, name="train", user="alice", state="RUNNING", nodes="gpu01"),
            SlurmJob(job_id=9, array_job_id=8, array_task_id=1, state="RUNNING", nodes="gpu[01-02]"),
            SlurmJob(job_id=10, state="PENDING"))
    return ClusterSnapshot(cluster="t", time=0.0, nodes=nodes, jobs=jobs)


def test_rest_v0040_plans_drain_itself_and_requeue_on_cli() -> None:
    src = build_slurm_source(SlurmSettings(backend="rest", rest_url="http://127.0.0.1:1", rest_version="v0.0.40"))
    assert src.rest is not None
    src.backend = src.rest
    plan = src.plan(ActionKind.DRAIN_NODES, ("gpu[01-02]",), {"reason": "ecc"}, _snap())
    assert plan.commands == ('POST /slurm/v0.0.40/node/gpu01 {"state": ["DRAIN"], "reason": "ecc"}',
                             'POST /slurm/v0.0.40/node/gpu02 {"state": ["DRAIN"], "reason": "ecc"}')
    assert plan.notes == () and plan.affected == ("job 7 (alice, train) RUNNING on gpu01: keeps running until it ends",
                                                  "job 8_1 (?, ?) RUNNING on gpu[01-02]: keeps running until it ends")
    # "jobs on these nodes" is expanded by the executor (one index for the whole app)
    plan = ActionExecutor([src], None, cluster="t").plan(ActionKind.REQUEUE_JOBS, (), {"on_nodes": "gpu02"}, _snap())
    assert plan.targets == ("8_1",) and plan.commands == ("scontrol requeue 8_1",)
    assert "slurmrestd v0.0.40 cannot requeue: using scontrol/scancel (CLI) instead" in plan.notes
    plan = src.plan(ActionKind.REQUEUE_JOBS, ("10",), {}, _snap())
    assert any("pending" in w for w in plan.warnings)


class _RPCError(Exception):
    pass


def _fake_pyslurm(version: str, log: list[str]) -> types.ModuleType:
    """Same API surface as pyslurm 25.11 (FACTS §7), backed by plain objects."""
    mod = types.ModuleType("pyslurm")
    mod.__version__ = version  # type: ignore[attr-defined]
    mod.RPCError = _RPCError  # type: ignore[attr-defined]

    class Node:
        def __init__(self, name: str | None = None, **kw: Any) -> None:
            self.name, self.kw = name, kw
            self.state, self.partitions, self.configured_gres = "IDLE", ["gpu"], {"gpu:h100": 8}
            self.allocated_gres: dict[str, int] = {}

        def modify(self, changes: Node) -> None:
            log.append(f"modify {self.name} {changes.kw}")

    class Nodes(dict):
        @classmethod
        def load(cls) -> Nodes:
            return cls({n: Node(n) for n in ("gpu01", "gpu02")})

    class Job:
        def __init__(self, job_id: int) -> None:
            self.id, self.state, self.nodes, self.user_name = job_id, "RUNNING", "gpu01", "alice"

        def requeue(self, hold: bool = False) -> None:
            if self.id == 13:
                raise _RPCError("Requested operation is presently disabled")
            log.append(f"requeue {self.id} hold={hold}")

        def cancel(self) -> None:
            log.append(f"cancel {self.id}")

        def hold(self) -> None:
            log.append(f"hold {self.id}")

        def release(self) -> None:
            log.append(f"release {self.id}")

    class Jobs(dict):
        @classmethod
        def load(cls) -> Jobs:
            return cls({i: Job(i) for i in (12, 13)})

    mod.Node, mod.Nodes, mod.Job, mod.Jobs = Node, Nodes, Job, Jobs  # type: ignore[attr-defined]
    return mod


def test_pyslurm_backend_with_fake_module(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "pyslurm", _fake_pyslurm("25.11.2", log))

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="pyslurm"))
        r = await src.collect()
        # pyslurm reads nodes and jobs; the reservations read beside them goes through scontrol
        assert [c for c in src.calls if c.startswith("pyslurm.")] == ["pyslurm.Nodes.load()", "pyslurm.Jobs.load()"]
        assert [c for c in src.calls if not c.startswith("pyslurm.")] == ["scontrol --json show reservation"]
        assert set(r.slurm_nodes or {}) == {"gpu01", "gpu02"} and (r.slurm_nodes or {})["gpu01"].gpus_total == 8
        assert [j.job_id for j in r.slurm_jobs or ()] == [12, 13]
        snap = ClusterSnapshot(cluster="t", time=0, jobs=r.slurm_jobs or (),
                               nodes={n: Node(name=n, slurm=i) for n, i in (r.slurm_nodes or {}).items()})
        plan = src.plan(ActionKind.DRAIN_NODES, ("gpu01",), {"reason": "ecc"}, snap)
        assert plan.commands == ("pyslurm.Node('gpu01').modify(pyslurm.Node(state='DRAIN', reason='ecc'))",)
        assert [x.ok for x in await src.execute(plan)] == [True]
        plan = src.plan(ActionKind.REQUEUE_JOBS, ("12", "13"), {}, snap)
        res = await src.execute(plan)
        assert res[0].ok and not res[1].ok and res[1].message == "Requested operation is presently disabled"
        plan = src.plan(ActionKind.REBOOT_NODES, ("gpu02",), {"reason": "fw"}, snap)
        assert plan.commands[0].startswith("scontrol reboot ASAP") and "pyslurm cannot reboot" in plan.notes[0]
        arr = ClusterSnapshot(cluster="t", time=0, nodes=snap.nodes,
                              jobs=(SlurmJob(job_id=14, array_job_id=12, array_task_id=3, state="PENDING"),))
        plan = src.plan(ActionKind.HOLD_JOBS, ("12_3",), {}, arr)  # an array task: pyslurm.Job takes ids only
        assert plan.commands == ("scontrol hold 12_3",) and "pyslurm acts on plain job ids only" in plan.notes[0]
        assert log == ["modify gpu01 {'state': 'DRAIN', 'reason': 'ecc'}", "requeue 12 hold=False"]

    asyncio.run(go())


def test_auto_skips_pyslurm_whose_version_does_not_match(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", _fake_pyslurm("25.11.2", []))
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'slurm-wlm 22.05.8'\n")
    fake.chmod(0o755)
    for tool in ("sinfo", "squeue", "sdiag"):
        (tmp_path / tool).write_text("#!/bin/sh\necho 'Unable to contact slurm controller (connect failure)' >&2; exit 1\n")
        (tmp_path / tool).chmod(0o755)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(bin_dir=str(tmp_path)))
        with pytest.raises(SourceError, match="slurmctld unreachable"):
            await src.collect()
        assert src.backend is src.cli
        assert "pyslurm 25.11.2 is built for Slurm 25.11, this host runs slurm-wlm 22.05.8: pyslurm not used" in src.detect_notes

    asyncio.run(go())


# -- the install story: one line saying why pyslurm is not used --------------------------------------
def test_pyslurm_problem_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from hpctui.sources.slurm import pyslurm_backend as pb

    monkeypatch.setitem(sys.modules, "pyslurm", None)  # "import pyslurm" raises ModuleNotFoundError
    assert pb.import_pyslurm() is None
    line = pb.pyslurm_problem(None, None)
    assert line is not None and line.startswith("pyslurm is not installed (pip install 'hpctui[pyslurm]'")
    assert "\n" not in line
    monkeypatch.delitem(sys.modules, "pyslurm")

    def no_lib(name: str, *a: Any, **kw: Any) -> Any:
        raise ImportError("libslurmfull.so: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(pb.importlib, "import_module", no_lib)
    assert pb.import_pyslurm() is None
    line = pb.pyslurm_problem(None, None)
    assert line is not None and line.startswith("pyslurm cannot load libslurm (libslurmfull.so: cannot open")
    mod = types.ModuleType("pyslurm")
    mod.__version__ = "25.11.2"  # type: ignore[attr-defined]
    assert pb.pyslurm_problem(mod, "slurm 25.11.7") is None
    assert pb.pyslurm_problem(mod, "slurm 24.11.5") == (
        "pyslurm 25.11.2 is built for Slurm 25.11, this host runs slurm 24.11.5: pyslurm not used")


def test_backend_pyslurm_without_pyslurm_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", None)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="pyslurm"))
        with pytest.raises(SourceError, match=r"^backend = 'pyslurm': pyslurm is not installed \(pip install"):
            await src.collect()

    asyncio.run(go())
