"""The simulated cluster behind ``hpctui --demo``: deterministic, time passed in explicitly."""

from hpctui.sim.cluster import SimCluster
from hpctui.sim.topology import H100, H200, build_topology

__all__ = ["H100", "H200", "SimCluster", "build_topology"]
