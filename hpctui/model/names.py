"""Node names across sources: the one join key between Kubernetes and Slurm node names."""

from __future__ import annotations

from collections.abc import Mapping


class NodeNameMap:
    """Maps Kubernetes node names to Slurm node names (the join key)."""

    def __init__(self, explicit: Mapping[str, str] | None = None, strip_suffix: str = "") -> None:
        self.explicit = dict(explicit or {})
        self.strip_suffix = strip_suffix

    def to_slurm(self, k8s_name: str) -> str:
        if k8s_name in self.explicit:
            return self.explicit[k8s_name]
        if self.strip_suffix and k8s_name.endswith(self.strip_suffix):
            return k8s_name[: -len(self.strip_suffix)]
        return k8s_name
