"""Hostile numbers from Slurm (issue #19 item 4): a 300-digit CPU count, an exabyte of memory or a
negative count in sinfo/scontrol/REST node records is N/A with one warning naming the field; the
node and its other values stay. Node names keep Slurm's own rule (tests in test_slurm_json_tables)."""

from __future__ import annotations

import json

from hpctui.sources.slurm.backend import Dropped
from hpctui.sources.slurm.parse import parse_nodes_json, parse_scontrol_nodes

HUGE = int("1" + "0" * 300)


def nodes_doc(*nodes: dict[str, object]) -> bytes:
    meta = {"plugin": {"data_parser": "data_parser/v0.0.40"}}
    return json.dumps({"meta": meta, "errors": [], "nodes": list(nodes)}).encode()


def test_json_node_counts_beyond_reason_are_na_with_one_warning() -> None:
    n = {"set": True, "infinite": False, "number": 0}
    data = nodes_doc(
        {"name": "gpu01", "state": ["IDLE"], "cpus": HUGE, "alloc_cpus": 8, "real_memory": 2**50,
         "alloc_memory": {**n, "number": 1024}, "gres": "gpu:h100:8"},
        {"name": "gpu02", "state": ["IDLE"], "cpus": 64, "alloc_cpus": -1, "real_memory": 512000},
    )
    dropped = Dropped("node")
    out = parse_nodes_json(data, on_invalid=dropped, drops=dropped.values)
    a, b = out["gpu01"], out["gpu02"]
    assert (a.cpus_total, a.memory_total_mb) == (None, None)
    assert (a.cpus_alloc, a.memory_alloc_mb, a.gpus_total) == (8, 1024, 8)  # the rest of the node intact
    assert (b.cpus_total, b.cpus_alloc, b.memory_total_mb) == (64, None, 512000)  # -1: N/A, never shown
    warnings: list[str] = []
    dropped.report(warnings)
    assert warnings == ["2 implausible value(s) dropped, shown as N/A "
                        "(cpus_total=301-digit number on gpu01, memory_total_mb=1125899906842624 on gpu01)"]


def test_scontrol_negative_and_huge_counts_are_na_with_one_warning() -> None:
    text = (f"NodeName=gpu01 State=IDLE CPUTot={HUGE} CPUAlloc=-1 RealMemory=512000 AllocMem=0\n"
            "NodeName=gpu02 State=IDLE CPUTot=64 CPUAlloc=4 RealMemory=-5 AllocMem=0\n")
    dropped = Dropped("node")
    out = parse_scontrol_nodes(text, on_invalid=dropped, drops=dropped.values)
    assert (out["gpu01"].cpus_total, out["gpu01"].cpus_alloc, out["gpu01"].memory_total_mb) == (None, None, 512000)
    assert (out["gpu02"].cpus_total, out["gpu02"].cpus_alloc, out["gpu02"].memory_total_mb) == (64, 4, None)
    assert dropped.values.warnings()[0].startswith("3 implausible value(s) dropped, shown as N/A "
                                                  "(cpus_total=301-digit number on gpu01, cpus_alloc=-1 on gpu01, ")
