"""Hand-made snapshots and job lists of any size (for scale tests without the simulator)."""

from __future__ import annotations

from hpctui.model import ClusterSnapshot, Gpu, Node, SlurmJob, SlurmNodeInfo


def snapshot(n: int, *, gpus_per_node: int = 8, t: float = 1_750_000_000.0, bump: int = 0) -> ClusterSnapshot:
    nodes: dict[str, Node] = {}
    gpus: dict[str, tuple[Gpu, ...]] = {}
    for i in range(n):
        name = f"n{i:05d}"
        flags = frozenset({"DRAIN"}) if i % 97 == 0 else frozenset()
        base = "DOWN" if i % 211 == 0 else ("MIXED" if i % 3 else "IDLE")
        nodes[name] = Node(name=name, slurm=SlurmNodeInfo(base_state=base, flags=flags, partitions=("gpu",)))
        gpus[name] = tuple(
            Gpu(node=name, index=g, model="NVIDIA H100", util_pct=float((i * 7 + g * 13 + bump) % 101),
                temp_c=40.0 + (i + g + bump) % 50, power_w=300.0 + (i * 3 + g) % 400, power_limit_w=700.0,
                memory_used_mib=float((i * 11 + g) % 81920), memory_total_mib=81920.0)
            for g in range(gpus_per_node)
        )
    return ClusterSnapshot(cluster="synth", time=t, nodes=nodes, gpus=gpus)


STATES = ("RUNNING", "PENDING", "PENDING", "RUNNING", "COMPLETING")
REASONS = (None, "Priority", "Resources", None, None)


def jobs(n: int) -> list[SlurmJob]:
    out = []
    for i in range(n):
        k = i % 5
        out.append(SlurmJob(
            job_id=100000 + i, array_job_id=100000 + (i // 10) * 10 if i % 4 == 0 else None,
            array_task_id=i % 10 if i % 4 == 0 else None, name=f"job-{i % 977}", user=f"user{i % 53}",
            partition="gpu" if i % 2 else "debug", state=STATES[k], reason=REASONS[k],
            nodes=f"n[{i % 1000:05d}-{i % 1000 + 3:05d}]" if STATES[k] == "RUNNING" else None,
            gpus_requested=(i % 8) + 1))
    return out
