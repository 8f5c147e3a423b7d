"""Record the probe loop's byte stream against the node shims into ``tests/fixtures/probes/loop/``.

    python tests/testbed/nodeshims/record_streams.py

The real generated ``sh`` loop (``build_probe_script``) runs locally against the shims (built from
the real recorded outputs of ``tests/fixtures/probes``, see nodeshims.py for the synthetic pieces)
exactly as ``tests/probes/test_probe_loop.py`` runs it; what it prints is stored unchanged, so the
record parser's unit tests (``tests/probes/test_record_streams.py``) read the loop's real records
without starting it. Between records a node changes (an IB port flaps, a kernel log line arrives,
a fault clears), so consecutive records exercise rates, deltas and de-duplication.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "probes"))

from nodeshims import NodeSpec, append_kernel_log, build_shim_root, flap_ib, set_fault  # noqa: E402
from probe_loop import probe_loop  # noqa: E402

from hpctui.sources.ssh.probe import ProbeOptions  # noqa: E402

OUT = HERE.parents[1] / "fixtures" / "probes" / "loop"

FAULTY = {"svc-failed", "mount-hang", "mount-stale", "mount-slow", "ib-down", "lfs-inactive", "pcie-downshift",
          "nvlink-down", "stray-process", "xid", "sxid", "fabric-fail"}
NODES = {
    "gpu-faulty": NodeSpec("h100", faults=set(FAULTY)),
    "gpu-mig": NodeSpec("h200-mig"),
    "cpu-ro": NodeSpec("cpu", faults={"mount-ro"}),
}


def _faulty_change(root: Path, node: str) -> None:
    flap_ib(root, node, "mlx5_0", 1, downs=2)
    append_kernel_log(root, node, "NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    set_fault(root, node, "mount-slow", on=False)


def _no_change(root: Path, node: str) -> None:
    return None


CHANGES: dict[str, Callable[[Path, str], None]] = {"gpu-faulty": _faulty_change, "gpu-mig": _no_change,
                                                   "cpu-ro": _no_change}


def record(root: Path, node: str, records: int = 3) -> bytes:
    """``records`` consecutive records of ``node`` as the loop printed them (a change after the first)."""
    options = ProbeOptions(shim_root=str(root), interval_s=0.5, probe_timeout_s=1.0, mount_timeout_s=1.0,
                           slow_mount_ms=500, slow_every=1,
                           expected_mounts=("/mnt/nfs/test", "/lustre/scratch", "/home"))
    with probe_loop(root, node, options) as loop:
        loop.records(1)
        CHANGES[node](root, node)
        time.sleep(0.2)
        loop.records(records - 1)
        texts = loop.texts
    return "".join(texts).encode()


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = build_shim_root(tmp, NODES)
        for node in NODES:
            data = record(root, node)
            shown = data.decode().replace(str(root), "/shims")
            (OUT / f"{node}.stream").write_text(shown)
            print(f"{node}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
