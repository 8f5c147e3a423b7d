"""Cost of the node probe on both ends, measured with the shims (tests/testbed/nodeshims).

hpctui side: RecordSplitter + parse_record per record of a real 8-GPU H100 shim node
(8 GPUs, 18 NVLinks each, 9 IB ports, 4 network mounts, 6 services, /proc resources), with
GPU values that change on every read (so the unchanged-section caches do not flatter it), as
µs per record and the implied share of one core at N nodes every I seconds.

Node side: CPU time (user + sys, children included) the sh loop spends per record against
the same shims. The shims are sh/awk scripts, not the real tools, so this is only an
indication of the loop's own overhead (forks, polling), not of nvidia-smi's cost.

Usage: python bench/bench_probe_parse.py [RECORDS] [NODES] [INTERVAL_S]   (defaults 20, 1024, 2)
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "nodeshims"))

from nodeshims import NodeSpec, build_shim_root  # noqa: E402

from hpctui.sources.ssh.probe import ProbeOptions, ProbeState, RecordSplitter, build_probe_script, parse_record  # noqa: E402


def main() -> None:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    with tempfile.TemporaryDirectory() as tmp:
        root = build_shim_root(tmp, {"bench": NodeSpec("h100", moving=True)})
        opts = ProbeOptions(shim_root=str(root), interval_s=0.1, max_records=records, slow_every=5,
                            expected_mounts=("/mnt/nfs/test",))
        script = build_probe_script(None, opts)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run(["sh", "-c", script], capture_output=True, check=True, timeout=600,
                             env={**os.environ, "HPCTUI_SHIM_NODE": "bench"}).stdout
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    node_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    texts = RecordSplitter().feed(out)
    assert len(texts) == records, (len(texts), records)
    size = len(out) / records

    # hpctui side: split + parse, repeated so the timer resolution does not matter.
    # Best of 5 runs: the machine is shared, the minimum is the cost without interference.
    rounds = max(1, 400 // records)
    runs = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(rounds):
            splitter, state = RecordSplitter(), ProbeState()
            for text in splitter.feed(out):
                parse_record("bench", text, state, 0.0)
        runs.append((time.process_time() - t0) / (rounds * records))
    per_record = min(runs)
    share = per_record * nodes / interval * 100
    print(f"record size: {size / 1024:.1f} KiB (slow sections every 5th record)")
    print(f"hpctui: split + parse {per_record * 1e6:.0f} µs/record (best of 5; median "
          f"{sorted(runs)[2] * 1e6:.0f}) -> {share:.1f} % of one core at {nodes} nodes every {interval:g} s")
    print(f"node (shims): {node_cpu / records * 1000:.0f} ms CPU/record, {wall / records * 1000:.0f} ms wall/record "
          f"(interval 0.1 s, {records} records)")


if __name__ == "__main__":
    main()
