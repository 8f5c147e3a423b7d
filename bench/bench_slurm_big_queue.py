"""Issue #23 §3/§4 on a real slurmctld: hpctui's RPCs per refresh, and its first read, with a big queue.

Usage (root; no other Slurm bed running):
    PYTHONPATH=$PWD python bench/bench_slurm_big_queue.py [--version 22.05|24.11] [--jobs 100000]
        [--running 8] [--refreshes 5] [--out FILE]

Starts the Slurm bed of ``--version`` (tests/testbed/slurm: 22.05 on the host, 24.11 in its Debian 13 chroot)
with ``MaxJobCount``/``MaxArraySize`` raised (``SLURMLAB_EXTRA_CONF``), submits a held array of ``--jobs`` tasks
and splits every task into a job record of its own (``scontrol update JobId=ID_[0-N-2] Comment=…``: pending
tasks modified apart from the others leave the array's meta record), plus ``--running`` running GPU jobs, then for each
``queue_read`` (json, hybrid) builds the real Slurm source (cli backend) and measures:

- the first collect (wall and this process's CPU), the queue's size in it;
- over ``--refreshes`` more collects: slurmctld's count of our RPCs per refresh (sdiag's by-user row, less
  sdiag's own), and by message type — the whole refresh (nodes, jobs, partitions, sdiag, reservations, …),
  not the queue read alone.

Not a test: prints a Markdown table (and writes it to ``--out``). The bed is stopped by pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "testbed" / d) for d in ("slurm", "slurm2411")] + [str(ROOT / "tests" / "slurm")]

from slurm2411lab import Slurm2411Lab  # noqa: E402
from slurm_helpers import settings  # noqa: E402
from slurmlab import SlurmLab  # noqa: E402

from hpctui.sources.slurm.parse.diag import parse_sdiag_text  # noqa: E402
from hpctui.sources.slurm.source import SlurmSource  # noqa: E402


def rpcs(lab: SlurmLab) -> tuple[int, dict[str, int]]:
    """Our RPC count (sdiag's by-user row) and the counts by message type."""
    stats = parse_sdiag_text(lab.run("sdiag").stdout).stats
    assert stats is not None
    me = getpass.getuser()
    return (next((r.count for r in stats.rpc_by_user if r.name == me), 0),
            {r.name: r.count for r in stats.rpc_by_type})


def fill(lab: SlurmLab, jobs: int, running: int) -> float:
    """The held array split into ``jobs`` records, and ``running`` GPU jobs; seconds it took."""
    t0 = time.monotonic()
    out = lab.run("sbatch", "--parsable", "--hold", f"--array=0-{jobs - 1}", "-p", "cpu", "-o", "/dev/null",
                  "--wrap", "sleep 1", timeout=120).stdout.strip()
    array = out.split(";")[0]
    # every task but the last: an update of all pending tasks changes the meta record, of a part splits them
    # out (src/slurmctld/job_mgr.c, update_job_str: "Need to split out tasks to separate job records")
    lab.run("scontrol", "update", f"JobId={array}_[0-{jobs - 2}]", "Comment=split", timeout=1800)
    for _ in range(running):
        lab.sbatch("-p", "gpu", "--gres=gpu:1", "-o", "/dev/null", wrap="sleep 3600")
    return time.monotonic() - t0


async def measure(lab: SlurmLab, mode: str, refreshes: int) -> dict[str, object]:
    source = SlurmSource(settings(lab, "cli", queue_read=mode, timeout_s=300.0))
    try:
        w0, c0 = time.monotonic(), time.process_time()
        first = await source.collect()
        first_wall, first_cpu = time.monotonic() - w0, time.process_time() - c0
        counts, types = [], {}
        walls = []
        for _ in range(refreshes):
            before, t_before = await asyncio.to_thread(rpcs, lab)
            w0 = time.monotonic()
            await source.collect()
            walls.append(time.monotonic() - w0)
            after, t_after = await asyncio.to_thread(rpcs, lab)
            counts.append(after - before - 1)  # less the second sdiag's own
            for k, v in t_after.items():
                d = v - t_before.get(k, 0) - (1 if k == "REQUEST_STATS_INFO" else 0)
                if d:
                    types[k] = types.get(k, 0) + d
        return {"mode": mode, "jobs": len(first.slurm_jobs or ()), "first_wall": first_wall, "first_cpu": first_cpu,
                "rpcs": counts, "types": {k: v / refreshes for k, v in sorted(types.items())},
                "refresh_wall": sorted(walls)[len(walls) // 2]}
    finally:
        await source.close()


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default="24.11", choices=["22.05", "24.11"])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--running", type=int, default=8)
    ap.add_argument("--refreshes", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    os.environ["SLURMLAB_EXTRA_CONF"] = f"MaxJobCount={args.jobs + 50_000}\nMaxArraySize={args.jobs + 1}"
    lab = Slurm2411Lab() if args.version == "24.11" else SlurmLab()
    if isinstance(lab, Slurm2411Lab):
        os.environ["PATH"] = f"{lab.bin_dir}:{os.environ['PATH']}"
    rows = []
    try:
        lab.start()
        filled = fill(lab, args.jobs, args.running)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        for mode in ("json", "hybrid"):
            rows.append(asyncio.run(measure(lab, mode, args.refreshes)))
        report(args, rows, filled, load)  # before the stop: a bed holding 100k jobs takes minutes to save them
    finally:
        try:
            lab.stop()
        except subprocess.TimeoutExpired:
            print(f"the bed did not stop in time: kill what is left of {lab.dir} by hand", file=sys.stderr)


def report(args: argparse.Namespace, rows: list[dict[str, object]], filled: float, load: str) -> None:
    """The Markdown table, printed and written to ``--out``."""
    lines = [f"Slurm {args.version} bed, {args.jobs:,} held jobs (split array) + {args.running} running, "
             f"queue filled in {filled:.0f} s; load {load}; 2 cores", "",
             "| queue_read | jobs read | first collect wall / CPU s | refresh wall s (median) | our RPCs a refresh "
             "| by type (mean a refresh) |", "|---|---|---|---|---|---|"]
    for r in rows:
        types = ", ".join(f"{k} {v:g}" for k, v in r["types"].items())  # type: ignore[attr-defined]
        lines.append(f"| {r['mode']} | {r['jobs']:,} | {r['first_wall']:.2f} / {r['first_cpu']:.2f} | "
                     f"{r['refresh_wall']:.2f} | {r['rpcs']} | {types} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
