"""Static layout of the demo cluster: nodes, GPUs, partitions, IB devices.

Built once per (size, seed); everything here is immutable so that ticks only
touch the values that move.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
GPU_MEM_MIB = {H100: 81559, H200: 143771}
GPU_SHORT = {H100: "h100", H200: "h200"}
GFD_PRODUCT = {H100: "NVIDIA-H100-80GB-HBM3", H200: "NVIDIA-H200"}
# The GPU Operator's all-balanced MIG layout (FACTS §2), with approximate usable MiB.
MIG_BALANCED = {
    H100: (("3g.40gb", 40192), ("2g.20gb", 19968), ("1g.10gb", 9856), ("1g.10gb", 9856)),
    H200: (("3g.71gb", 71424), ("2g.35gb", 33792), ("1g.18gb", 16640), ("1g.18gb", 16640)),
}
# PCI bus ids of the eight GPUs of an HGX/DGX H100 board, as NVML prints them.
PCI_BUS_IDS = (
    "00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0", "00000000:61:00.0",
    "00000000:9D:00.0", "00000000:C3:00.0", "00000000:D1:00.0", "00000000:DF:00.0",
)
GPUS_PER_NODE = 8
GPU_NODE_CPUS = 112
GPU_NODE_MEM_MB = 2_000_000
CPU_NODE_CPUS = 128
CPU_NODE_MEM_MB = 512_000
GPU_NODE_IB = tuple(f"mlx5_{k}" for k in range(8))  # one tuple (and 8 strings) for all nodes
CPU_NODE_IB = GPU_NODE_IB[:1]
K8S_RESERVATION_EVERY = 8  # every 8th GPU node is reserved for Kubernetes work


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One machine's fixed facts."""

    name: str
    index: int  # position among nodes of its kind
    kind: str  # "gpu" or "cpu"
    gpu_model: str | None
    n_gpus: int
    partitions: tuple[str, ...]
    features: tuple[str, ...]
    cpus: int
    mem_mb: int
    ib_devices: tuple[str, ...]
    ib_max_gbps: float
    gpu_uuids: tuple[str, ...]
    mig: bool  # GPUs run the all-balanced MIG layout
    k8s_reserved: bool  # Slurm reservation "k8s": Kubernetes pods run here

    @property
    def gpu_mem_mib(self) -> int:
        return GPU_MEM_MIB[self.gpu_model] if self.gpu_model else 0


@dataclass(frozen=True, slots=True)
class Topology:
    gpu_nodes: tuple[NodeSpec, ...]
    cpu_nodes: tuple[NodeSpec, ...]
    by_name: dict[str, NodeSpec]
    partitions: dict[str, tuple[str, ...]]  # partition -> node names

    @property
    def all_nodes(self) -> tuple[NodeSpec, ...]:
        return self.gpu_nodes + self.cpu_nodes


def _uuid(rng: random.Random, prefix: str) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def pad_width(count: int, minimum: int) -> int:
    return max(minimum, len(str(count)))


def build_topology(size: int, seed: int) -> Topology:
    """``size`` GPU nodes (half H100, half H200) plus ``size // 4`` CPU nodes (at least 2)."""
    if size < 1:
        raise ValueError("size must be >= 1")
    rng = random.Random(f"topology-{seed}")
    n_cpu = max(2, size // 4)
    gw, cw = pad_width(size, 4), pad_width(n_cpu, 2)
    n_h100 = (size + 1) // 2
    # Two MIG nodes: one of each model, at fixed relative positions.
    mig_nodes = {min(n_h100 - 1, max(0, n_h100 * 3 // 10)), min(size - 1, n_h100 + (size - n_h100) * 9 // 10)}
    gpu_nodes: list[NodeSpec] = []
    partitions: dict[str, list[str]] = {"h100": [], "h200": [], "debug": [], "cpu": []}
    for i in range(size):
        name = f"gpu{i + 1:0{gw}d}"
        model = H100 if i < n_h100 else H200
        short = GPU_SHORT[model]
        parts = [short]
        if short == "h100" and i < 4:
            parts.append("debug")
        for p in parts:
            partitions[p].append(name)
        gpu_nodes.append(NodeSpec(
            name=name, index=i, kind="gpu", gpu_model=model, n_gpus=GPUS_PER_NODE,
            partitions=tuple(parts), features=(short, "ib-ndr", "nvlink"),
            cpus=GPU_NODE_CPUS, mem_mb=GPU_NODE_MEM_MB,
            ib_devices=GPU_NODE_IB, ib_max_gbps=400.0,
            gpu_uuids=tuple(_uuid(rng, "GPU") for _ in range(GPUS_PER_NODE)),
            mig=i in mig_nodes and size >= 4,
            k8s_reserved=(i % K8S_RESERVATION_EVERY == K8S_RESERVATION_EVERY - 1) and i not in mig_nodes,
        ))
    cpu_nodes: list[NodeSpec] = []
    for i in range(n_cpu):
        name = f"cpu{i + 1:0{cw}d}"
        partitions["cpu"].append(name)
        cpu_nodes.append(NodeSpec(
            name=name, index=i, kind="cpu", gpu_model=None, n_gpus=0, partitions=("cpu",),
            features=("epyc", "ib-hdr"), cpus=CPU_NODE_CPUS, mem_mb=CPU_NODE_MEM_MB,
            ib_devices=CPU_NODE_IB, ib_max_gbps=200.0, gpu_uuids=(), mig=False, k8s_reserved=False,
        ))
    by_name = {n.name: n for n in gpu_nodes + cpu_nodes}
    return Topology(
        gpu_nodes=tuple(gpu_nodes), cpu_nodes=tuple(cpu_nodes), by_name=by_name,
        partitions={k: tuple(v) for k, v in partitions.items() if v},
    )
