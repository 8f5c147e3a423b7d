"""Plans that span backends (hybrid Slurm + Kubernetes drain/resume), per-step previews,
per-step results and audit records, and the preview warnings of every entry point.

Planning uses the real Slurm and Kubernetes backends (planning is pure: no daemon, no
API server); execution swaps their ``execute`` for recorders so the executor's step rules
are under test. The live beds run the same thing for real (tests/k8s/test_k8s_live_hybrid.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.actions.plans import ActionSettings
from hpctui.cli.act import render_plan, render_result
from hpctui.core.config import AppConfig, ConfigError, parse_config
from hpctui.model import ClusterSnapshot, Gpu, K8sNodeInfo, Node, Pod, SlurmJob, SlurmNodeInfo
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource


def snapshot() -> ClusterSnapshot:
    """gpu01: Slurm and K8s (K8s name gpu01.k8s, as node_map merges it); gpu02: Slurm only;
    kube01: K8s only. A Slurm job and three pods (a workload, a DaemonSet pod, a mirror pod) on gpu01."""
    return ClusterSnapshot(
        cluster="c", time=0.0,
        nodes={
            "gpu01": Node(name="gpu01", slurm=SlurmNodeInfo(base_state="MIXED", partitions=("gpu",)),
                          k8s=K8sNodeInfo(name="gpu01.k8s")),
            "gpu02": Node(name="gpu02", slurm=SlurmNodeInfo(base_state="IDLE", partitions=("gpu",))),
            "kube01": Node(name="kube01", k8s=K8sNodeInfo(name="kube01")),
        },
        jobs=(SlurmJob(job_id=7, user="alice", name="train", state="RUNNING", nodes="gpu01",
                       gpus_alloc={"gpu01": "0-3"}),
              SlurmJob(job_id=8, user="bob", name="wait", state="PENDING")),
        pods=(Pod(namespace="ml", name="infer", node="gpu01", owner_kind="ReplicaSet", owner_name="infer-5d",
                  phase="Running", gpus_requested=2),
              Pod(namespace="gpu-operator", name="dcgm-exporter-x", node="gpu01", owner_kind="DaemonSet",
                  owner_name="dcgm-exporter", phase="Running"),
              Pod(namespace="kube-system", name="etcd-gpu01", node="gpu01", mirror=True, phase="Running")),
    )


class Recorder:
    """Swaps a backend's execute for a recorder; ``fail`` targets fail with a message."""

    def __init__(self, backend: SlurmSource | K8sSource, fail: tuple[str, ...] = ()) -> None:
        self.plans: list[ActionPlan] = []
        self.fail = fail

        async def execute(plan: ActionPlan) -> tuple[TargetResult, ...]:
            self.plans.append(plan)
            return tuple(TargetResult(target=t, ok=t not in fail, message="boom" if t in fail else "done")
                         for t in plan.targets)

        backend.execute = execute  # type: ignore[method-assign]


def executor(tmp_path: Path, settings: ActionSettings | None = None, *, slurm: bool = True, k8s: bool = True,
             read_only: bool = False) -> tuple[ActionExecutor, SlurmSource, K8sSource]:
    s = SlurmSource(SlurmSettings(backend="cli"))
    k = K8sSource(K8sSettings())
    backends = [b for b, on in ((s, slurm), (k, k8s)) if on]
    ex = ActionExecutor(backends, AuditLog(tmp_path / "audit.jsonl"), cluster="c", user="op",
                        clock=lambda: 100.0, settings=settings, read_only=read_only)
    return ex, s, k


# -- step planning ----------------------------------------------------------------------------

def test_node_in_both_is_drained_in_both_with_one_plan(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "xid 79"}, snapshot())
    assert plan.runnable and plan.source == "slurm+k8s" and plan.targets == ("gpu01",)
    assert [(s.source, s.kind) for s in plan.steps] == [("slurm", ActionKind.DRAIN_NODES),
                                                       ("k8s", ActionKind.CORDON_NODES)]
    slurm, k8s = plan.steps
    assert slurm.commands == ("scontrol update NodeName=gpu01 State=DRAIN 'Reason=xid 79'",)
    assert k8s.commands[0].startswith('PATCH /api/v1/nodes/gpu01.k8s {"spec":{"unschedulable":true}}')
    assert plan.commands == (*slurm.commands, *k8s.commands)  # older readers see every command
    assert plan.confirm_word is None and plan.destructive  # one target: y/n, one confirmation for both
    # each step lists only what it affects: the Slurm job in the Slurm step, the pods in the K8s step
    assert slurm.affected == ("job 7 (alice, train) RUNNING on gpu01: keeps running until it ends",)
    assert all("pod" not in a and "ml/" not in a for a in slurm.affected)
    assert all("job 7" not in a for a in k8s.affected)
    assert "ml/infer (ReplicaSet/infer-5d), 2 GPU, Running on gpu01: keeps running (cordon only stops new pods)" \
        in k8s.affected
    assert "reason" not in k8s.params  # a cordon has no reason


def test_slurm_only_and_k8s_only_nodes_get_one_step_each(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    slurm_only = ex.plan(ActionKind.DRAIN_NODES, ["gpu02"], {"reason": "r"}, snapshot())
    assert not slurm_only.steps and slurm_only.source == "slurm" and slurm_only.kind is ActionKind.DRAIN_NODES
    k8s_only = ex.plan(ActionKind.DRAIN_NODES, ["kube01"], {"reason": "r"}, snapshot())
    assert [(s.source, s.kind) for s in k8s_only.steps] == [("k8s", ActionKind.CORDON_NODES)]
    assert k8s_only.kind is ActionKind.DRAIN_NODES and k8s_only.runnable
    mixed = ex.plan(ActionKind.DRAIN_NODES, ["gpu[01-02]", "kube01"], {"reason": "r"}, snapshot())
    assert [s.targets for s in mixed.steps] == [("gpu01", "gpu02"), ("gpu01", "kube01")]
    assert mixed.targets == ("gpu01", "gpu02", "kube01") and mixed.confirm_word == "drain-3"


def test_drain_in_setting_and_per_action_override(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path, ActionSettings(drain_in="slurm"))
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r"}, snapshot())
    assert not plan.steps and plan.source == "slurm"
    refused = ex.plan(ActionKind.DRAIN_NODES, ["kube01"], {"reason": "r"}, snapshot())
    assert not refused.runnable and "kube01 is only a Kubernetes node and drain_in=slurm" in refused.errors
    both = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r", "drain_in": "both"}, snapshot())
    assert len(both.steps) == 2 and "drain_in" not in both.params
    k8s = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r", "drain_in": "k8s"}, snapshot())
    assert [s.kind for s in k8s.steps] == [ActionKind.CORDON_NODES]
    bad = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r", "drain_in": "everywhere"}, snapshot())
    assert not bad.runnable and any("drain_in must be one of slurm, k8s, both" in e for e in bad.errors)


def test_k8s_evict_mode_lists_evictable_pods_and_skips_daemonset_and_mirror(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path, ActionSettings(k8s_drain="evict"))
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r"}, snapshot())
    k8s = plan.steps[1]
    assert k8s.kind is ActionKind.K8S_DRAIN_NODES
    assert "evict ml/infer (ReplicaSet/infer-5d), 2 GPU, Running on gpu01" in k8s.affected
    assert "skip gpu-operator/dcgm-exporter-x on gpu01: DaemonSet pod" in k8s.affected
    assert "skip kube-system/etcd-gpu01 on gpu01: mirror (static) pod" in k8s.affected
    assert any(c == "POST /api/v1/namespaces/ml/pods/infer/eviction" for c in k8s.commands)
    assert not any("dcgm-exporter-x/eviction" in c or "etcd-gpu01/eviction" in c for c in k8s.commands)


def test_resume_reverses_both_uncordon_first(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    plan = ex.plan(ActionKind.RESUME_NODES, ["gpu01"], {}, snapshot())
    assert [(s.source, s.kind) for s in plan.steps] == [("k8s", ActionKind.UNCORDON_NODES),
                                                       ("slurm", ActionKind.RESUME_NODES)]
    assert plan.continue_on_failure
    assert not any(s.affected for s in plan.steps)  # resume/uncordon hit nothing running


def test_no_k8s_backend_means_the_old_single_plan(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path, k8s=False)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r"}, snapshot())
    assert not plan.steps and plan.source == "slurm"
    assert "gpu01: no configured source can cordon: Kubernetes left as it is" in plan.notes
    unknown = ex.plan(ActionKind.DRAIN_NODES, ["nosuch"], {"reason": "r"}, snapshot())
    assert "unknown node 'nosuch' (not in the last Slurm read)" in unknown.errors


def test_a_missing_reason_blocks_the_whole_plan(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {}, snapshot())
    assert not plan.runnable and "drain needs a reason" in plan.errors


# -- execution ------------------------------------------------------------------------------------

async def test_steps_run_in_order_with_their_own_audit_records(tmp_path: Path) -> None:
    ex, s, k = executor(tmp_path)
    rs, rk = Recorder(s), Recorder(k)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01", "gpu02"], {"reason": "xid 79"}, snapshot())
    result = await ex.execute(plan, confirmation=plan.confirm_word or True)
    assert result.ok and [p.targets for p in rs.plans] == [("gpu01", "gpu02")] and \
        [p.targets for p in rk.plans] == [("gpu01",)]
    assert [r.message for r in result.results] == ["slurm drain: done; k8s cordon: done", "slurm drain: done"]
    assert [(st.source, st.kind.value, st.ok) for st in result.steps] == [("slurm", "drain", True),
                                                                          ("k8s", "cordon", True)]
    records = AuditLog(tmp_path / "audit.jsonl").read(intents=True)
    assert [r["phase"] for r in records] == ["intent", "step", "step", "outcome"]
    assert len({r["id"] for r in records}) == 1
    assert [(r["source"], r["step_action"], r["targets"]) for r in records[1:3]] == [
        ("slurm", "drain", ["gpu01", "gpu02"]), ("k8s", "cordon", ["gpu01"])]
    assert records[1]["commands"] == list(plan.steps[0].commands)
    assert [st["action"] for st in records[0]["steps"]] == ["drain", "cordon"]
    assert [st["ok"] for st in records[3]["steps"]] == [True, True]
    assert AuditLog(tmp_path / "audit.jsonl").read() == [records[3]]  # outcomes only, as before
    text = render_result(result)
    assert "step 1 slurm drain: 2/2 ok" in text and "step 2 k8s cordon: 1/1 ok" in text


async def test_a_failed_drain_step_leaves_that_node_alone_later(tmp_path: Path) -> None:
    ex, s, k = executor(tmp_path)
    Recorder(s, fail=("gpu01",))
    rk = Recorder(k)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01", "kube01"], {"reason": "r"}, snapshot())
    result = await ex.execute(plan, confirmation=plan.confirm_word or True)
    assert not result.ok and [p.targets for p in rk.plans] == [("kube01",)]  # gpu01 not cordoned
    cordon = result.steps[1]
    assert [(r.target, r.ok, r.message) for r in cordon.results] == [
        ("gpu01", False, "not run: slurm drain failed"), ("kube01", True, "done")]
    by_target = {r.target: r for r in result.results}
    assert not by_target["gpu01"].ok and by_target["kube01"].ok


async def test_resume_releases_each_scheduler_even_when_one_fails(tmp_path: Path) -> None:
    ex, s, k = executor(tmp_path)
    rs = Recorder(s)
    Recorder(k, fail=("gpu01",))
    plan = ex.plan(ActionKind.RESUME_NODES, ["gpu01"], {}, snapshot())
    result = await ex.execute(plan, confirmation=True)
    assert [p.targets for p in rs.plans] == [("gpu01",)]  # the Slurm resume still ran
    assert not result.ok and result.results[0].message == "k8s uncordon: boom; slurm resume: done"


async def test_read_only_refuses_the_whole_plan_and_runs_no_step(tmp_path: Path) -> None:
    ex, s, k = executor(tmp_path, read_only=True)
    rs, rk = Recorder(s), Recorder(k)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r"}, snapshot())
    result = await ex.execute(plan, confirmation=True)
    assert result.refused == "read-only mode" and not rs.plans and not rk.plans and not result.steps


# -- previews and warnings ------------------------------------------------------------------------

def test_act_preview_shows_each_step(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    text = render_plan(ex.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "r"}, snapshot()))
    assert "action:   drain via slurm+k8s (2 steps)" in text
    assert "step 1:   slurm drain on gpu01 (1)" in text and "step 2:   k8s cordon on gpu01 (1)" in text
    step2 = text.split("step 2:")[1]
    assert "keeps running (cordon only stops new pods)" in step2 and "job 7" not in step2


def test_cordon_alone_lists_pods_not_jobs(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    plan = ex.plan(ActionKind.CORDON_NODES, ["gpu01"], {}, snapshot())
    assert not any("job" in a for a in plan.affected)
    assert all("keeps running" in a for a in plan.affected) and len(plan.affected) == 3


def test_hold_on_a_running_job_warns(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    plan = ex.plan(ActionKind.HOLD_JOBS, ["7", "8"], {}, snapshot())
    assert plan.warnings == ("job 7 is RUNNING: hold only affects pending jobs; Slurm will refuse it "
                             "(it keeps running)",)


def test_resume_of_a_node_with_a_gpu_error_warns(tmp_path: Path) -> None:
    ex, _, _ = executor(tmp_path)
    snap = snapshot()
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes=snap.nodes,
                           gpus={"gpu01": (Gpu(node="gpu01", index=3, uuid="GPU-3", last_xid=79),)})
    plan = ex.plan(ActionKind.RESUME_NODES, ["gpu01", "gpu02"], {}, snap)
    [warning] = [w for w in plan.warnings if "GPU error" in w]  # gpu01 only (gpu02 has no GPU error)
    assert warning.startswith("gpu01 has an active GPU error: GPU 3 Xid 79") and "resuming puts work back" in warning


def test_reboot_of_a_drained_node_warns(tmp_path: Path) -> None:
    from hpctui.actions.plans import drain_reason

    ex, _, _ = executor(tmp_path)
    snap = snapshot()
    nodes = dict(snap.nodes)
    nodes["gpu02"] = Node(name="gpu02", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"}),
                                                            reason="xid 79 ticket 12"))
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes=nodes)
    assert drain_reason(["gpu02"], snap) == "xid 79 ticket 12" and drain_reason(["gpu0[1-2]"], snap) is None
    plan = ex.plan(ActionKind.REBOOT_NODES, ["gpu02"], {"reason": "xid 79 ticket 12"}, snap)
    assert any("gpu02 is DRAINED ('xid 79 ticket 12'): after the reboot" in w for w in plan.warnings), plan.warnings


# -- config -----------------------------------------------------------------------------------------

def cfg_of(text: str) -> AppConfig:
    import tomllib

    return parse_config(tomllib.loads(text))


def test_actions_config_key() -> None:
    cfg = cfg_of("[actions]\ndrain_in = 'slurm'\nk8s_drain = 'evict'\n"
                       "[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\n")
    assert cfg.actions == ActionSettings(drain_in="slurm", k8s_drain="evict")
    assert cfg_of("[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\n").actions.drain_in == "both"
    with pytest.raises(ConfigError, match=r"actions\.drain_in: "):
        cfg_of("[actions]\ndrain_in = 'both-ish'\n[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\n")
    with pytest.raises(ConfigError, match=r"actions\.drain_where: unknown key"):
        cfg_of("[actions]\ndrain_where = 'slurm'\n[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\n")


async def test_demo_drain_and_resume_in_both_end_to_end(tmp_path: Path) -> None:
    """The demo cluster knows every node in Slurm and K8s: drain sets both, resume clears both."""
    from hpctui.cli.act import run_act
    from hpctui.core.runtime import demo_runtime

    out: list[str] = []
    rt = demo_runtime(size=8, seed=1, clock=lambda: 1_796_000_000.0, start_time=1_796_000_000.0,
                      audit_path=tmp_path / "audit.jsonl")
    try:
        rc = await run_act(rt, ActionKind.DRAIN_NODES, ["gpu0003"], {"reason": "xid 79"}, dry_run=False, yes=True,
                           as_json=True, interactive=False, out=out.append, err=out.append)
        assert rc == 0
        doc = json.loads(out[-1])
        assert [(s["source"], s["kind"], s["ok"]) for s in doc["steps"]] == [("demo", "drain", True),
                                                                            ("demo", "cordon", True)]
        await rt.collect_once()
        node = rt.store.snapshot().nodes["gpu0003"]
        assert node.slurm is not None and "DRAIN" in node.slurm.flags
        assert node.k8s is not None and node.k8s.unschedulable
        # gpu0003's critical GPU finding holds it at the health-check gate (tests/test_health_checks.py): past it here
        rc = await run_act(rt, ActionKind.RESUME_NODES, ["gpu0003"], {"override": "test: hybrid resume"}, dry_run=False,
                           yes=True, as_json=False, interactive=False, out=out.append, err=out.append)
        assert rc == 0, out[-1]
        await rt.collect_once()
        node = rt.store.snapshot().nodes["gpu0003"]
        assert node.slurm is not None and "DRAIN" not in node.slurm.flags
        assert node.k8s is not None and not node.k8s.unschedulable
    finally:
        await rt.stop()


def test_a_k8s_source_without_a_node_list_blocks_a_hybrid_drain(tmp_path: Path) -> None:
    """Not knowing which targets are K8s nodes must not quietly become a Slurm-only drain."""
    from hpctui.model import SourceHealth

    ex, _, _ = executor(tmp_path)
    snap = snapshot()
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes=snap.nodes, sources={
        "k8s": SourceHealth(name="k8s", kind="k8s", last_success=1.0,
                            part_errors={"k8s_nodes": "nodes: not listed yet"})})
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu02"], {"reason": "r"}, snap)
    assert not plan.runnable
    assert "the k8s source has no node list (nodes: not listed yet): cannot tell which targets are Kubernetes " \
           "nodes; retry, or pass drain_in=slurm" in plan.errors
    assert ex.plan(ActionKind.DRAIN_NODES, ["gpu02"], {"reason": "r", "drain_in": "slurm"}, snap).runnable
