"""Record the probe loop's byte stream of a busy 8-GPU H100 node into ``streams/`` for the SSH farm.

    PYTHONPATH=$PWD python tests/testbed/sshfarm/record_streams.py [RECORDS]   (default 5: one slow record, then four, as slow_every = 5 cycles)

The real generated ``sh`` loop (``build_probe_script``, default probe options) runs locally against
the node shims (tests/testbed/nodeshims, built from the real recorded outputs of tests/fixtures/probes)
exactly as ``tests/testbed/nodeshims/record_streams.py`` records the parser fixtures, with the shim
node ``moving``: GPU utilisation, temperature, power and memory change on every nvidia-smi call, so
consecutive records differ the way a loaded node's do and the parser's unchanged-section caches do
not flatter a benchmark. What the loop printed is stored unchanged except the shim root path
(``/shims``). The farm (farm_server.py) replays these records, renumbered and re-timed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "nodeshims"))
sys.path.insert(0, str(HERE.parents[1] / "probes"))

from nodeshims import NodeSpec, build_shim_root  # noqa: E402
from probe_loop import probe_loop  # noqa: E402

from hpctui.sources.ssh.probe import ProbeOptions  # noqa: E402

OUT = HERE / "streams"
NODES = {"h100-busy": NodeSpec("h100", moving=True)}


def record(root: Path, node: str, records: int) -> bytes:
    options = ProbeOptions(shim_root=str(root), interval_s=0.5, probe_timeout_s=2.0, mount_timeout_s=2.0)
    with probe_loop(root, node, options) as loop:
        loop.records(records)
        texts = loop.texts
    return "".join(texts).encode()


def main() -> int:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = build_shim_root(tmp, NODES)
        for node in NODES:
            data = record(root, node, records)
            shown = data.decode().replace(str(root), "/shims")
            (OUT / f"{node}.stream").write_text(shown)
            print(f"{node}: {len(data)} bytes, {records} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
