"""Issue #27 §1: the SSH source's background fabric read — which node asks, the real recorded
``ibnetdiscover`` / ``iblinkinfo`` outputs parsed off the loop, failures keeping the last good topology."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hpctui.model import ClusterSnapshot, IbPort
from hpctui.model.output import NodeOutput
from hpctui.model.probe import ProbeStatus
from hpctui.sources.ssh.fabric import FabricSweeper, pick_host
from hpctui.sources.ssh.settings import FabricSettings

IB = Path(__file__).parent / "fixtures" / "ib"
ND = (IB / "ibnetdiscover_switchib-edr_fat-tree_excerpt.txt").read_text()
LI = (IB / "iblinkinfo_sb7700-edr_2-hosts_16-down.txt").read_text()


def _snap(unreachable: tuple[str, ...] = ()) -> ClusterSnapshot:
    port = IbPort(node="gpu02", device="mlx5_0", port=1, state="ACTIVE")
    return ClusterSnapshot(cluster="c", time=0.0, ib={"gpu02": (port,), "gpu03": (port,)},
                           probes={n: ProbeStatus(node=n, reachable=n not in unreachable)
                                   for n in ("cpu01", "gpu02", "gpu03")})


def test_the_first_reachable_node_with_an_hca_asks() -> None:
    probed = ["gpu03", "cpu01", "gpu02"]
    on = FabricSettings(interval_s=900)
    assert pick_host(_snap(), probed, on) == "gpu02"
    assert pick_host(_snap(unreachable=("gpu02",)), probed, on) == "gpu03"
    assert pick_host(_snap(), probed, FabricSettings(interval_s=900, host="login01")) == "login01"
    assert pick_host(None, probed, on) is None
    with pytest.raises(ValueError):
        FabricSettings(interval_s=-1)


def test_sweep_reads_parses_and_keeps_the_last_good_fabric() -> None:
    now = [0.0]
    answers: list[NodeOutput] = [NodeOutput(label="gpu02", output=ND, rc=0)]
    asked: list[list[tuple[str, str]]] = []

    async def run(runs: list[tuple[str, str]], timeout_s: float, limit: int) -> list[NodeOutput]:
        asked.append(runs)
        return [answers.pop(0)]

    async def go() -> None:
        sweeper = FabricSweeper(FabricSettings(interval_s=900), run, clock=lambda: now[0])
        sweeper.maybe_start(_snap(), ["gpu02", "gpu03"])
        assert sweeper.task is not None
        await sweeper.task
        assert asked == [[("gpu02", "ibnetdiscover 2>&1")]]
        good = sweeper.fabric
        assert good is not None and good.source == "ibnetdiscover" and len(good.switches) >= 2
        assert good.leaf_of["gpu045"] and good.remote("gpu045", "HCA-1", 1) is not None
        sweeper.maybe_start(_snap(), ["gpu02"])  # not due
        assert len(asked) == 1
        now[0] = 901
        # what infiniband-diags prints without a usable HCA (recorded from sminfo, the same libibmad call)
        answers.append(NodeOutput(label="gpu02", output="ibwarn: [55188] mad_rpc_open_port: can't open UMAD port "
                                                        "((null):0)\nsminfo: iberror: failed: Failed to open '(null)' "
                                                        "port '0'\n", rc=255))
        sweeper.maybe_start(_snap(), ["gpu02"])
        assert sweeper.task is not None
        await sweeper.task
        assert sweeper.fabric is good  # the failure keeps the last good topology
        assert sweeper.warning is not None and sweeper.warning.startswith(
            "fabric: ibnetdiscover on gpu02 failed (exit 255: ibwarn: [55188] mad_rpc_open_port")
        await sweeper.close()

    asyncio.run(go())


def test_iblinkinfo_and_off_by_default() -> None:
    answers = [NodeOutput(label="h", output=LI, rc=0)]

    async def run(runs: list[tuple[str, str]], timeout_s: float, limit: int) -> list[NodeOutput]:
        assert runs == [("login01", "iblinkinfo 2>&1")]
        return answers

    async def go() -> None:
        sweeper = FabricSweeper(FabricSettings(interval_s=60, tool="iblinkinfo", host="login01"), run)
        sweeper.maybe_start(None, [])
        assert sweeper.task is not None
        await sweeper.task
        assert sweeper.fabric is not None and sweeper.fabric.source == "iblinkinfo"
        assert sweeper.fabric.leaf_of.get("n02") == "SB7700"
        off = FabricSweeper(FabricSettings(), run)
        off.maybe_start(_snap(), ["gpu02"])
        assert off.task is None and off.fabric is None

    asyncio.run(go())
