"""Pod shells against the real kube-apiserver bed: ``kubectl exec -it`` as the Kubernetes source
builds it (its kubeconfig and context), on a pseudo-terminal. The bed runs no kubelet, so no
session can start: what is proven is that the argv authenticates with the source's settings and
reaches the real API server's exec endpoint for the right pod, which then fails to reach the
node's kubelet; a missing pod and a wrong context are told apart. A session inside a container
is not proven here (no kubelet anywhere on this machine)."""

from __future__ import annotations

import shutil

import pytest
from k8slab import K8sLab
from ptyrun import run_in_pty

from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

pytestmark = pytest.mark.live


@pytest.fixture()
def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl is not installed")
    return path


def _source(lab: K8sLab, context: str | None = None) -> K8sSource:
    return K8sSource(K8sSettings(kubeconfig=str(lab.kubeconfig()), context=context, namespaces=["hpc"]))


def test_exec_reaches_the_api_server_with_the_sources_kubeconfig(lab: K8sLab, kubectl: str) -> None:
    lab.make_node("gpu01")
    lab.make_pod("hpc", "trainer-0", "gpu01")
    argv = _source(lab, context="admin").pod_shell_argv("hpc", "trainer-0", "c", kubectl=kubectl)
    status, out = run_in_pty(argv, timeout=60)
    assert status != 0, out
    assert "NotFound" not in out and "Unauthorized" not in out and "does not exist" not in out, out
    # the API server looked up the pod and tried its node's kubelet (none runs in the bed)
    assert "Error from server" in out and ("no preferred addresses" in out or "dial" in out), out


def test_a_missing_pod_and_a_wrong_context_are_told_apart(lab: K8sLab, kubectl: str) -> None:
    status, out = run_in_pty(_source(lab).pod_shell_argv("hpc", "nosuch", None, kubectl=kubectl), timeout=60)
    assert status != 0 and "not found" in out.lower(), out
    status, out = run_in_pty(_source(lab, context="elsewhere").pod_shell_argv("hpc", "nosuch", None,
                                                                              kubectl=kubectl), timeout=60)
    assert status != 0 and "elsewhere" in out, out  # kubectl used the source's context, not a default
