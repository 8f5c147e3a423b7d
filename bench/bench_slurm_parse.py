"""Typed msgspec decode vs json.loads on a synthetic v0.0.38 ``squeue --json``.

Usage: python bench/bench_slurm_parse.py [N_JOBS]   (default 100000)
Each variant runs in a fresh subprocess so peak RSS (ru_maxrss) is its own.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "slurm" / "cli_squeue.json"


def build(n: int, out: Path) -> None:
    doc = json.loads(SAMPLE.read_bytes())
    template = json.dumps(doc["jobs"][0])  # job 1: running, gres_detail, job_resources
    head = json.dumps({"meta": doc["meta"], "errors": []})[:-1]
    with out.open("w") as f:
        f.write(head + ', "jobs": [')
        for i in range(n):
            if i:
                f.write(",")
            f.write(template.replace('"job_id": 1,', f'"job_id": {i + 1},', 1))
        f.write("]}")


def run(variant: str, path: str) -> None:
    data = Path(path).read_bytes()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if variant == "json":
        n = len(json.loads(data)["jobs"])
    else:
        sys.path.insert(0, str(ROOT))
        from hpctui.sources.slurm.parse import parse_jobs_json

        t0 = time.perf_counter()
        n = len(parse_jobs_json(data))
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{variant:8s} {n} jobs  {dt:6.2f} s  peak RSS {rss / 1024:7.0f} MB (file read: {rss0 / 1024:.0f} MB)")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--run":
        run(sys.argv[2], sys.argv[3])
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "squeue.json"
        build(n, path)
        print(f"synthetic squeue --json: {n} jobs, {path.stat().st_size / 1e6:.0f} MB")
        for variant in ("msgspec", "json"):
            subprocess.run([sys.executable, __file__, "--run", variant, str(path)], check=True)


if __name__ == "__main__":
    main()
