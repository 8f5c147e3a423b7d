"""Pod logs against the real kube-apiserver bed (v1.20, no kubelet): what the API server itself proves
— the pod's container list for the viewer's choice, and the ``pods/log`` request with container,
``previous``, ``timestamps`` and ``limitBytes`` accepted by the server's own validation, which then
needs a kubelet to proxy to: the viewer shows the server's refusal in its words, never a traceback.
The log bytes, follow and previous lines themselves are proven against kmock
(test_k8s_pod_logs_kmock.py)."""

from __future__ import annotations

import pytest
from k8s_helpers import make_source
from k8slab import K8sLab

from hpctui.core.logs import LogService
from hpctui.core.store import Store
from hpctui.sources.k8s.client import K8sError

pytestmark = pytest.mark.live


async def test_pod_logs_through_the_real_api_server(lab: K8sLab) -> None:
    lab.make_node("gpu01", gpus=8)
    lab.make_pod("hpc", "trainer-0", "gpu01")
    src = make_source(lab)
    logs = LogService(lambda: [src], lambda: Store("k"))
    try:
        assert await logs.pod_containers("hpc", "trainer-0") == ("c",)
        with pytest.raises(K8sError) as err:
            await logs.pod_log_lines("hpc", "trainer-0", "c", previous=True)
        # the server validated the request and went for the node's kubelet, which this bed does not run
        assert err.value.describe() == ("500 Internal Server Error: get pods/log: no preferred addresses found; "
                                        "known addresses: []")
        with pytest.raises(K8sError) as bad:
            await logs.pod_log_lines("hpc", "trainer-0", "no-such-container")
        assert bad.value.describe() == ("400 BadRequest: get pods/log: container no-such-container is not valid "
                                        "for pod trainer-0")
        with pytest.raises(K8sError) as gone:
            await logs.pod_log_lines("hpc", "nope", None)
        assert "404" in gone.value.describe() or "not found" in gone.value.describe().lower()
    finally:
        await src.close()
