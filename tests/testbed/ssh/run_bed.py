"""Start the SSH bed by hand and print an hpctui config for it; Ctrl-C (or SIGTERM) stops it.

    python tests/testbed/ssh/run_bed.py [--nodes 64] [--faults node0003=unreachable,...] [--shims]
        [--config-out PATH] [--proxy-jump]

With --shims DIR the node side answers with node shims built in DIR (tests/testbed/nodeshims):
GPUs (H100, H200, H200 with MIG, CPU-only in turn), IB, mounts, services per node address,
with --node-faults node0005=xid,node0009=svc-failed,... (nodeshims.FAULTS).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sshbed import SshBed, shim_probe_table


def config_text(bed: SshBed, *, shims: Path | None, proxy_jump: bool, interval: float) -> str:
    ssh_config = bed.write_ssh_config(proxy_jump=proxy_jump, path=bed.dir / "ssh_config.client")
    lines = [
        "[clusters.lab]",
        "[[clusters.lab.sources]]",
        'kind = "ssh"',
        f'nodes = "{bed.prefix}[0001-{bed.n_nodes:04d}]"',
        f'ssh_config = ["{ssh_config}"]',
        f'known_hosts = ["{bed.known_hosts}"]',
        f"interval_s = {interval}",
    ]
    if shims is not None:
        lines.append(shim_probe_table(shims, "clusters.lab.sources"))
    return "\n".join(lines) + "\n"


def build_shims(bed: SshBed, root: Path, faults: dict[str, str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nodeshims"))
    from nodeshims import NodeSpec, build_shim_root

    variants = ("h100", "h200", "h200-mig", "cpu")
    specs = {n.address: NodeSpec(variant=variants[i % 4], faults={faults[n.name]} if n.name in faults else set())
             for i, n in enumerate(bed.nodes)}
    build_shim_root(root, specs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--faults", default="", help="node0003=unreachable,node0011=auth,...")
    ap.add_argument("--shims", type=Path, default=None, help="build node shims here (tests/testbed/nodeshims)")
    ap.add_argument("--node-faults", default="", help="node0005=xid,node0009=svc-failed,... (node shims)")
    ap.add_argument("--proxy-jump", action="store_true")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--config-out", type=Path, default=None)
    args = ap.parse_args()
    faults = dict(f.split("=", 1) for f in args.faults.split(",") if f)
    bed = SshBed(n_nodes=args.nodes, faults=faults)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        bed.start()
        if args.shims is not None:
            build_shims(bed, args.shims, dict(f.split("=", 1) for f in args.node_faults.split(",") if f))
        text = config_text(bed, shims=args.shims, proxy_jump=args.proxy_jump, interval=args.interval)
        if args.config_out:
            args.config_out.write_text(text)
        print(f"# SSH bed up: {args.nodes} nodes on port {bed.port}, bastion 127.0.0.1:{bed.bastion_port}")
        print(text, flush=True)
        while not stop:
            time.sleep(0.5)
    finally:
        bed.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
