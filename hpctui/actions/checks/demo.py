"""The built-in demo's nodes answering the check tools, so the whole walk works without a cluster.

Every answer is a real recorded output (``recordings/``, copies of tests/fixtures/checks): a demo node
with a critical GPU finding fails the DCGM ``memory`` test on that GPU (the recorded DCGM 4 failure,
its GPU number set to the node's bad GPU) and NHC (the recorded ``check_ecc`` line); one with a fabric
finding runs NCCL at the recorded EFA speed (too slow); every other node passes with the recorded
8 × H100 outputs. After the demo's reboot clears a node's incident, its checks pass.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from hpctui.model.checks import Domain
from hpctui.model.output import NodeOutput

if TYPE_CHECKING:
    from hpctui.actions.checks.settings import HealthCheckSettings
    from hpctui.findings.index import FindingsIndex
    from hpctui.model import ClusterSnapshot
    from hpctui.model.action import CommandRun

RECORDINGS = Path(__file__).with_name("recordings")
TOOLS = ("dcgmi", "all_reduce_perf", "mpirun", "nhc")
RUN_S = 0.4  # a check takes a moment, even in the demo


@cache
def recording(name: str) -> str:
    return (RECORDINGS / name).read_text()


def _failing_dcgm(gpu: int) -> str:
    """The recorded DCGM 4 memory failure, moved to ``gpu``."""
    doc = json.loads(recording("dcgm4-r2-h100-fail.json"))
    for category in doc["DCGM Diagnostic"]["test_categories"]:
        for test in category["tests"]:
            if test["name"] != "memory":
                continue
            for result in test["results"]:
                if result["status"] == "Fail":
                    result["entity_id"] = gpu
                    for w in result.get("warnings", ()):
                        w["warning"] = re.sub(r"in GPU \d+", f"in GPU {gpu}", w["warning"])
    return json.dumps(doc, indent="\t")


class DemoCheckRunner:
    """A :class:`~hpctui.sources.capabilities.CommandRunner` for the demo: answers only the check tools."""

    name = "demo"

    def __init__(self, snapshot: Callable[[], ClusterSnapshot], findings: Callable[[ClusterSnapshot], FindingsIndex],
                 settings: Callable[[], HealthCheckSettings]) -> None:
        self.snapshot = snapshot
        self.findings = findings
        self.settings = settings

    def command_runner(self) -> DemoCheckRunner:
        return self

    async def resolve(self, hosts: Sequence[str]) -> None:
        return None

    async def close(self) -> None:
        return None

    def _bad(self, node: str) -> tuple[int | None, bool]:
        """(the first GPU with a gating GPU finding, whether a fabric finding gates) of ``node`` now."""
        snapshot = self.snapshot()
        gpu: int | None = None
        fabric = False
        settings = self.settings()
        for f in self.findings(snapshot).node(node):
            domain = settings.gates(f.object, f.code, f.severity)
            if domain is Domain.FABRIC:
                fabric = True
            elif domain is Domain.GPU and gpu is None:
                tail = f.object.rsplit("/", 1)[-1]
                gpu = int(tail) if tail.isdigit() else 0
        return gpu, fabric

    async def run(self, run: CommandRun, timeout_s: float, limit: int) -> NodeOutput:
        await asyncio.sleep(RUN_S)
        tool = next((a.rsplit("/", 1)[-1] for a in run.argv if a.rsplit("/", 1)[-1] in TOOLS), None)
        node = run.host or run.label
        if tool is None:
            return NodeOutput(label=run.label, error="the demo's nodes run only the health-check tools")
        gpu, fabric = self._bad(node)
        if tool == "dcgmi":
            if gpu is not None:
                return NodeOutput(label=run.label, output=_failing_dcgm(gpu), rc=226, duration_s=RUN_S)
            level = run.argv[run.argv.index("-r") + 1] if "-r" in run.argv[:-1] else "2"
            text = recording("dcgm3-r1-pass.json" if level == "1" else "dcgm4-r2-h100-pass.json")
            return NodeOutput(label=run.label, output=text, rc=0, duration_s=RUN_S)
        if tool == "nhc":
            if gpu is not None:
                return NodeOutput(label=run.label, output=recording("nhc-fail-ecc.txt").replace(
                    "GPU id 3", f"GPU id {gpu}"), rc=1, duration_s=RUN_S)
            return NodeOutput(label=run.label, output="", rc=0, duration_s=RUN_S)
        peer_bad = False
        if tool == "mpirun":
            hosts = next((a for a in run.argv if ":" in a and "," in a), "")
            peer_bad = any(self._bad(h.split(":")[0])[1] for h in hosts.split(",") if h)
        if fabric or peer_bad:
            return NodeOutput(label=run.label, output=recording("nccl-efa-mpi-slow.txt"), rc=0, duration_s=RUN_S)
        name = "nccl-h100-pair.txt" if tool == "mpirun" else "nccl-h100-single.txt"
        return NodeOutput(label=run.label, output=recording(name), rc=0, duration_s=RUN_S)
