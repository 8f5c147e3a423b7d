"""Start the SSH farm by hand and write an hpctui config for it; Ctrl-C (or SIGTERM) stops it.

    python tests/testbed/sshfarm/run_farm.py [--nodes 1024] [--mix h100-busy,gpu-faulty,gpu-mig,cpu-ro]
        [--interval 2] [--config-out farm.toml]

then ``hpctui --config farm.toml --cluster farm``, or pdsh / clush with the printed options.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from farm import SshFarm


def config_text(farm: SshFarm, interval: float) -> str:
    return "\n".join([
        "[clusters.farm]",
        "[[clusters.farm.sources]]",
        'kind = "ssh"',
        f'nodes = "{farm.hostlist}"',
        f'ssh_config = ["{farm.ssh_config}"]',
        f'known_hosts = ["{farm.known_hosts}"]',
        f"interval_s = {interval}",
    ]) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--mix", default="h100-busy", help="recordings served, given to the nodes in turn")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--config-out", default="farm.toml")
    args = ap.parse_args()
    farm = SshFarm(n_nodes=args.nodes, mix=tuple(args.mix.split(",")))
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    farm.start(timeout=120)
    try:
        Path(args.config_out).write_text(config_text(farm, args.interval))
        print(f"farm: {args.nodes} nodes {farm.hostlist} on {farm.addresses[0]}... port {farm.port} (pid {farm.pid})\n"
              f"  hpctui --config {args.config_out} --cluster farm\n"
              f"  PDSH_SSH_ARGS_APPEND='-F {farm.ssh_config}' pdsh -R ssh -w ^{farm.hosts_file} uptime\n"
              f"  clush -o '-F {farm.ssh_config}' -w '{farm.hostlist}' uptime\n"
              "Ctrl-C stops it.", flush=True)
        while not stop and farm.proc is not None and farm.proc.poll() is None:
            time.sleep(0.5)
    finally:
        farm.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
