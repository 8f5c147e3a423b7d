"""A real kube-apiserver (v1.20.2, built from Debian's source package by build.sh) + Debian's
etcd 3.4 on loopback, for the live Kubernetes tests.

One bed per pytest session: free ports picked at start, self-made PKI (openssl), a static
token file with an admin token (system:masters) and a restricted one (no RBAC grants),
RBAC on, ServiceAccount admission off (no controllers run). Daemons start under setsid
and are stopped by pid (never by name), also from atexit. No kubelet, no controller-manager:
tests set node/pod/PDB status themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build.sh"
LAB_HOME = Path(os.environ.get("HPCTUI_K8SLAB", str(Path.home() / ".cache" / "hpctui-k8slab")))
APISERVER = LAB_HOME / "bin" / "kube-apiserver"


def k8s_installed() -> str | None:
    """None if the bed can run here (binaries built), else the reason it cannot."""
    missing = [b for b in ("etcd", "openssl") if shutil.which(b) is None]
    if missing:
        return f"Kubernetes test bed needs {', '.join(missing)} (run .ci/k8s-deps.sh)"
    if not os.access(APISERVER, os.X_OK):
        return f"no kube-apiserver at {APISERVER} (build it with .ci/k8s-deps.sh, ~4 min cold)"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class K8sLab:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hpctui-k8slab-"))
        self.pki = self.dir / "pki"
        self.etcd_port = free_port()
        self.etcd_peer = free_port()
        self.port = free_port()
        self.host = f"https://127.0.0.1:{self.port}"
        self.etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        self.pids: dict[str, int] = {}
        self.start_s: float | None = None
        self.ctx = ssl.create_default_context(cafile=None)

    # -- lifecycle --------------------------------------------------------------
    def _pki(self) -> None:
        p = self.pki
        p.mkdir(parents=True, exist_ok=True)

        def run(*args: str) -> None:
            subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=p)
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
            "-subj", "/CN=hpctui-k8slab-ca")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=kube-apiserver")
        (p / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "3650", "-extfile", "ext.cnf")
        run("genrsa", "-out", "sa.key", "2048")
        run("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        (p / "tokens.csv").write_text('admin-token,admin,uid-admin,"system:masters"\n'
                                      "restricted-token,restricted,uid-restricted,\n")
        self.ca = str(p / "ca.crt")
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 - the daemon owns it
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        log.close()
        self.pids[name] = proc.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = proc

    def start(self, timeout: float = 90.0) -> None:
        t0 = time.monotonic()
        self._pki()
        self._spawn("etcd", [
            "etcd", "--name", "k8slab", "--data-dir", str(self.dir / "etcd-data"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{self.etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.etcd_peer}",
            "--initial-cluster", f"k8slab=http://127.0.0.1:{self.etcd_peer}"])
        self.start_apiserver(timeout)
        self.start_s = time.monotonic() - t0

    def start_apiserver(self, timeout: float = 90.0) -> None:
        p = self.pki
        self._spawn("apiserver", [
            str(APISERVER), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}", "--insecure-port=0", f"--etcd-servers={self.etcd_url}",
            f"--tls-cert-file={p}/server.crt", f"--tls-private-key-file={p}/server.key", f"--client-ca-file={p}/ca.crt",
            f"--token-auth-file={p}/tokens.csv", "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc", f"--service-account-key-file={p}/sa.pub",
            f"--service-account-signing-key-file={p}/sa.key", "--api-audiences=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount",
            # events and configmaps are watched straight from etcd (no watch cache): a compaction then
            # makes an old resourceVersion 410 Gone at once, as on a busy cluster
            "--watch-cache-sizes=configmaps#0,events#0",
            "--allow-privileged=true", "--profiling=false"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._procs["apiserver"].poll() is not None:
                raise RuntimeError("kube-apiserver exited:\n" + self.log_tail("apiserver"))
            with contextlib.suppress(OSError, urllib.error.URLError):
                if self.http("GET", "/readyz")[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("kube-apiserver not ready in time:\n" + self.log_tail("apiserver"))

    def stop_process(self, name: str) -> None:
        pid = self.pids.pop(name, None)
        proc = getattr(self, "_procs", {}).pop(name, None)
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        try:
            if proc is not None:
                proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if proc is not None:
                proc.wait(timeout=5)

    def stop(self) -> None:
        self.stop_process("apiserver")
        self.stop_process("etcd")
        if os.environ.get("HPCTUI_K8SLAB_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, name: str, n: int = 30) -> str:
        try:
            return "\n".join((self.dir / f"{name}.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    # -- access -----------------------------------------------------------------
    def kubeconfig(self, token: str = "admin-token", name: str = "admin", server: str | None = None) -> Path:
        """A kubeconfig file (JSON is valid YAML) with one context named ``name``."""
        path = self.dir / f"kubeconfig-{name}.yaml"
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": "lab", "cluster": {"server": server or self.host, "certificate-authority": self.ca}}],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": "lab", "user": name}}],
        }
        path.write_text(json.dumps(doc))
        return path

    def http(self, method: str, path: str, body: Any = None, token: str = "admin-token",
             content_type: str = "application/json", timeout: float = 300.0) -> tuple[int, Any]:
        """A plain HTTPS request (for test set-up: status patches, CRDs, PDBs)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.host + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            status = exc.code
        try:
            return status, json.loads(raw or b"{}")
        except ValueError:
            return status, {"raw": raw[:200].decode("utf-8", "replace")}

    def ok(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        status, doc = self.http(method, path, body, content_type=content_type)
        if not 200 <= status <= 299:
            raise AssertionError(f"{method} {path} -> {status}: {doc}")
        return doc

    def merge(self, path: str, body: Any) -> Any:
        return self.ok("PATCH", path, body, content_type="application/merge-patch+json")

    def etcd_compact(self) -> int:
        """Compact etcd at its current revision: every older resourceVersion is gone."""
        def post(endpoint: str, body: dict[str, Any]) -> Any:
            req = urllib.request.Request(self.etcd_url + endpoint, data=json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.load(resp)
        rev = int(post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        post("/v3/kv/compaction", {"revision": rev, "physical": True})
        return rev

    # -- objects ----------------------------------------------------------------
    def ensure_namespace(self, ns: str) -> None:
        status, doc = self.http("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns}})
        if status not in (201, 409):
            raise AssertionError(f"namespace {ns}: {status} {doc}")

    def make_node(self, name: str, *, labels: dict[str, str] | None = None, gpus: int | None = None,
                  ready: str = "True", extra: dict[str, str] | None = None) -> None:
        self.http("DELETE", f"/api/v1/nodes/{name}")
        self.ok("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": name, "labels": labels or {}}})
        cap = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        if gpus is not None:
            cap["nvidia.com/gpu"] = str(gpus)
        cap.update(extra or {})
        self.ok("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": cap, "allocatable": cap,
            "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "Lab",
                            "message": "set by the test", "lastHeartbeatTime": None,
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}]}},
            content_type="application/strategic-merge-patch+json")

    def make_pod(self, ns: str, name: str, node: str | None, *, labels: dict[str, str] | None = None,
                 gpus: int = 0, owner: tuple[str, str] | None = None, phase: str = "Running",
                 annotations: dict[str, str] | None = None) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "c", "image": "busybox"}
        if gpus:
            container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
        meta: dict[str, Any] = {"name": name, "labels": labels or {"app": "w"}, "annotations": annotations or {}}
        if owner:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                                        "uid": f"uid-{owner[1]}", "controller": True}]
        spec: dict[str, Any] = {"containers": [container]}
        if node:
            spec["nodeName"] = node
        doc = self.ok("POST", f"/api/v1/namespaces/{ns}/pods",
                      {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        if phase:  # Running pods are Ready too: the 1.20 eviction lets a PDB ignore not-ready pods
            status: dict[str, Any] = {"phase": phase}
            if phase == "Running":
                status["conditions"] = [{"type": "Ready", "status": "True"}]
            doc = self.merge(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status})
        return dict(doc)


def create_pods(lab: K8sLab, ns: str, count: int, node: str, *, threads: int = 8, prefix: str = "bulk") -> None:
    """``count`` Running pods on ``node``, created over pooled connections of the official client."""
    from concurrent.futures import ThreadPoolExecutor

    sys_path_root = str(HERE.parents[2])
    import sys
    if sys_path_root not in sys.path:
        sys.path.insert(0, sys_path_root)
    from hpctui.sources.k8s.client import KubeClient
    from hpctui.sources.k8s.settings import K8sSettings

    client = KubeClient(K8sSettings(kubeconfig=str(lab.kubeconfig()), timeout_s=60))

    def one(i: int) -> None:
        name = f"{prefix}-{i:05d}"
        client.request("POST", f"/api/v1/namespaces/{ns}/pods", body={
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": prefix}, "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": f"{prefix}-job", "uid": "u", "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox",
                                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
        client.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                       body={"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                       content_type="application/merge-patch+json")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(count)))
