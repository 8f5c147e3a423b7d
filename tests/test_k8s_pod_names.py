"""Pod targets (issue #19 §7): namespace and name are kept apart end to end and checked with
Kubernetes' own name rules, so a hostile namespace holding a ``/`` can never make the preview,
the plan or the request name another pod."""

from __future__ import annotations

import pytest

from hpctui.cli.act import render_plan as act_render_plan
from hpctui.model import ClusterSnapshot, K8sNodeInfo, Node, Pod
from hpctui.model.action import ActionKind, ActionPlan, split_targets
from hpctui.sources.k8s.names import (
    PodTargetError,
    namespace_problem,
    pod_name_problem,
    pod_target,
    split_pod_target,
)
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

HOSTILE_NS = "[@click=app.quit]CLICK[/]"
HOSTILE = f"{HOSTILE_NS}/train-0"  # split at its first "/": namespace "[@click=app.quit]CLICK[", name "]/train-0"


def snapshot() -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", time=0.0, nodes={"gpu01": Node(name="gpu01", k8s=K8sNodeInfo(name="gpu01"))},
                           pods=(Pod(namespace=HOSTILE_NS, name="train-0", node="gpu01", owner_kind="Job"),
                                 Pod(namespace="hpc", name="good", node="gpu01", owner_kind="Job")))


@pytest.mark.parametrize("ns", ["hpc", "a", "0", "kube-system", "a" * 63, "9-x"])
def test_valid_namespaces(ns: str) -> None:
    assert namespace_problem(ns) is None


@pytest.mark.parametrize("ns", ["", "a" * 64, "Hpc", "a.b", "a/b", "-a", "a-", "a_b", "a b", "é", "a\n",
                                HOSTILE_NS, "[@click=app.quit]CLICK["])
def test_invalid_namespaces(ns: str) -> None:
    assert namespace_problem(ns)


@pytest.mark.parametrize("name", ["good", "train-0.worker-1", "a" * 63 + "." + "b" * 189, "0"])
def test_valid_pod_names(name: str) -> None:
    assert len(name) <= 253 and pod_name_problem(name) is None


@pytest.mark.parametrize("name", ["", "a" * 254, "a..b", ".a", "a.", "A", "a/b", "]/train-0", "a_b", "a-.b",
                                  "a\n"])
def test_invalid_pod_names(name: str) -> None:
    assert pod_name_problem(name)


def test_pod_target_round_trip_and_refusals() -> None:
    assert split_pod_target(pod_target("hpc", "good")) == ("hpc", "good")
    for bad in ("hpc", "hpc/", "/good", "hpc/a/b", HOSTILE, "HPC/good"):
        with pytest.raises(PodTargetError):
            split_pod_target(bad)
    with pytest.raises(PodTargetError, match="longer than 253"):
        split_pod_target("hpc/" + "a" * 254)
    with pytest.raises(PodTargetError):
        pod_target(HOSTILE_NS, "train-0")


def test_plan_refuses_a_hostile_namespace_and_names_the_right_pod() -> None:
    src = K8sSource(K8sSettings())
    plan = src.plan(ActionKind.DELETE_PODS, (HOSTILE, "hpc/good"), {}, snapshot())
    assert plan.targets == ("hpc/good",) and plan.rejected_targets == (HOSTILE,)
    assert plan.commands == ("DELETE /api/v1/namespaces/hpc/pods/good",)
    [error] = plan.errors
    assert error.startswith("refused pod 'train-0' (namespace '[@click=app.quit]CLICK[/]'): namespace")
    assert "not a valid Kubernetes namespace (RFC 1123 label" in error
    assert not plan.runnable
    assert not any("CLICK" in line for line in plan.commands + plan.affected)


@pytest.mark.parametrize(("target", "why"), [
    ("hpc/Bad_Name", "not a valid Kubernetes pod name (RFC 1123 subdomain"),
    ("hpc", "is not namespace/name"),
    ("hpc/" + "a" * 254, "longer than 253 characters"),
    ("Hpc/good", "not a valid Kubernetes namespace"),
    ("hpc/ghost", "unknown pod 'hpc/ghost'"),
])
def test_plan_refuses_invalid_and_unknown_targets_with_a_clear_message(target: str, why: str) -> None:
    plan = K8sSource(K8sSettings()).plan(ActionKind.DELETE_PODS, (target,), {}, snapshot())
    assert not plan.runnable and plan.rejected_targets == (target,) and not plan.commands
    assert why in plan.errors[0], plan.errors


async def test_execute_never_sends_a_request_for_an_invalid_target() -> None:
    """A plan made some other way (not by this source's plan) still cannot reach the API server."""
    src = K8sSource(K8sSettings())
    sent: list[str] = []

    class Client:
        def request(self, method: str, path: str, **kw: object) -> tuple[int, dict[str, object]]:
            sent.append(f"{method} {path}")
            return 200, {}

        def close(self) -> None:
            pass

    src.client = Client()  # type: ignore[assignment]
    forged = ActionPlan(kind=ActionKind.DELETE_PODS, source=src.name, targets=(HOSTILE, "hpc/good"))
    results = await src.execute(forged)
    assert [r.ok for r in results] == [False, True]
    assert results[0].message.startswith("not deleted: pod ")
    assert sent == ["DELETE /api/v1/namespaces/hpc/pods/good"]
    await src.close()


def test_act_splits_pod_lists_and_shows_them_as_names() -> None:
    assert split_targets(ActionKind.DELETE_PODS, "hpc/a,hpc/b hpc/c") == ["hpc/a", "hpc/b", "hpc/c"]
    plan = ActionPlan(kind=ActionKind.DELETE_PODS, source="k8s", targets=("hpc/train-1", "hpc/train-2"))
    assert "targets:  hpc/train-1,hpc/train-2 (2)" in act_render_plan(plan)
