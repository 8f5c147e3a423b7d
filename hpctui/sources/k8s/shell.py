"""The argv of ``kubectl exec -it`` into one container, from a Kubernetes source's settings.

The source's client reads pods through the API; a person's shell in a container is ``kubectl
exec`` on the real terminal, against the same kubeconfig and context (``--kubeconfig``,
``--context``; in-cluster: kubectl's own service-account discovery). The Python client's exec
stream is a websocket the app would have to wire to the terminal itself (raw mode, resize,
escape handling): kubectl already does that right.

Namespace, pod and container names come from the cluster: each must be a valid Kubernetes name
(RFC 1123) or no argv is built; the command in the container is fixed text (k9s's: bash if the
image has it, else sh).
"""

from __future__ import annotations

import re
from pathlib import Path

from hpctui.sources.k8s.names import namespace_problem, pod_name_problem
from hpctui.sources.k8s.settings import K8sSettings

# What runs in the container: a login-ish shell, bash when there is one (k9s does the same).
CONTAINER_SHELL = ("/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash || exec sh")
_CONTAINER = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)  # RFC 1123 label (container names)


def container_problem(container: str) -> str | None:
    """Why ``container`` cannot name a container (an RFC 1123 label of at most 63), or None."""
    if len(container) > 63 or not _CONTAINER.fullmatch(container):
        return f"container {container[:80]!r} is not a valid Kubernetes container name"
    return None


def kubectl_exec_argv(settings: K8sSettings, namespace: str, pod: str, container: str | None, *,
                      kubectl: str = "kubectl") -> tuple[str, ...]:
    """``kubectl [--kubeconfig K] [--context C] exec -it -n NS POD [-c CONTAINER] -- /bin/sh -c ...``;
    ValueError when a name is not a valid Kubernetes name."""
    problem = namespace_problem(namespace) or pod_name_problem(pod) or (
        container_problem(container) if container is not None else None)
    if problem:
        raise ValueError(problem)
    argv = [kubectl]
    if not settings.in_cluster and settings.kubeconfig:
        argv += ["--kubeconfig", str(Path(settings.kubeconfig).expanduser())]
    if settings.context:
        argv += ["--context", settings.context]
    argv += ["exec", "-it", "-n", namespace, pod]
    if container is not None:
        argv += ["-c", container]
    return (*argv, "--", *CONTAINER_SHELL)
