"""Slurm partitions as the controller defines them (``scontrol show partition``, REST ``partitions``).

Node and job counts per partition are not stored here: the partitions view derives them from
the snapshot's nodes and jobs, so they always agree with the heatmap and the queue.
"""

from __future__ import annotations

import msgspec

PARTITION_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")


class SlurmPartition(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    name: str
    state: str | None = None  # UP, DOWN, DRAIN, INACTIVE
    default: bool | None = None  # the cluster's default partition (sinfo marks it with "*")
    max_time_min: int | None = None  # MaxTime in minutes; None with max_time_unlimited=False: not known
    max_time_unlimited: bool = False
    default_time_min: int | None = None
    nodes: str | None = None  # hostlist expression
    total_nodes: int | None = None
    total_cpus: int | None = None
