"""Pod logs through the real HTTP client against kmock's emulator (the API-server bed has no kubelet, so
``pods/log`` can only be served by an emulator here): the container, ``previous=true`` for a container in
CrashLoopBackOff, ``timestamps``/``sinceTime`` for follow (each line once), ``limitBytes`` as the bound,
and the pod's container list for the viewer's choice. What the real kube-apiserver proves is in
test_k8s_live_read.py (the pod objects); the log bytes themselves come from a kubelet we do not run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kmock as km

from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import LOG_LIMIT_BYTES, K8sSource

LOG = "get /api/v1/namespaces/hpc/pods/trainer-0/log"


def _kubeconfig(tmp_path: Path, url: str) -> str:
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}]}))
    return str(path)


async def test_pod_logs_container_previous_follow_and_bound(kmock: km.KubernetesEmulator, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def rec(req: Any) -> bool:
        seen.append(dict(req.params))
        return True

    kmock[LOG, rec] << (b"2026-12-02T03:00:00.5Z step 1\n2026-12-02T03:00:01Z \x1b[2Jstep 2\n"
                        b"2026-12-02T03:00:01.25Z step 3\n")
    kmock["get /api/v1/namespaces/hpc/pods/trainer-0"] << {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer-0", "namespace": "hpc"},
        "spec": {"initContainers": [{"name": "fetch"}], "containers": [{"name": "train"}, {"name": "sidecar"}]}}
    src = K8sSource(K8sSettings(kubeconfig=_kubeconfig(tmp_path, str(kmock.url))))
    try:
        assert await src.pod_containers("hpc", "trainer-0") == ("fetch", "train", "sidecar")
        lines, last = await src.pod_log_lines("hpc", "trainer-0", "train", previous=True)
        assert lines == ["step 1", "\ufffdstep 2", "step 3"] and last == "2026-12-02T03:00:01.25Z"
        assert seen[-1] == {"tailLines": "200", "container": "train", "limitBytes": str(LOG_LIMIT_BYTES),
                            "timestamps": "true", "previous": "true"}
        more, last2 = await src.pod_log_lines("hpc", "trainer-0", "train", since="2026-12-02T03:00:01Z")
        assert seen[-1]["sinceTime"] == "2026-12-02T03:00:01Z" and "previous" not in seen[-1]
        assert more == ["step 3"] and last2 == "2026-12-02T03:00:01.25Z"  # the emulator resends; shown once
        text = await src.pod_logs("hpc", "trainer-0")
        assert text.splitlines() == ["step 1", "\ufffdstep 2", "step 3"]
    finally:
        await src.close()
