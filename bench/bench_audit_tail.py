"""What reading a big audit log costs: the whole-file read of c553378 against the bounded tail.

Usage: python bench/bench_audit_tail.py [--mb 400] [--record-bytes 1000] [--dir DIR] [--keep]

Generates an audit log of ``--mb`` MB (outcome records of about ``--record-bytes`` each, like a
drain with a reason and a few targets' output), then measures, each in a fresh subprocess (so
the peak RSS is the reader's own, ``ru_maxrss`` of the child):

- ``import only``: the interpreter plus ``hpctui.actions.audit`` (the floor under every row);
- ``whole file (c553378)``: what ``AuditLog.read()`` did before issue #19 — ``read_bytes`` of the
  whole file, ``splitlines`` and a decode of every line (the dashboard's Events history and the
  ``E`` report did this on the UI thread);
- ``AuditLog.tail()``: the bounded tail every reader uses now (default 4 MiB / 20,000 records);
- ``Runtime.audit_history()``: the Events view's history from that tail (as events);
- ``load_tail`` (``:audit``): the audit view's entries from the tail.

Not a test: prints a Markdown table. The machine may be shared: compare rows within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "import only": "import hpctui.actions.audit as a\nn = 0",
    "whole file (c553378)": (
        "import msgspec\nfrom pathlib import Path\n"
        "out = []\n"
        "for raw in Path(PATH).read_bytes().splitlines():\n"
        "    if raw.strip():\n"
        "        rec = msgspec.json.decode(raw)\n"
        "        if rec.get('phase') not in ('intent', 'step'):\n"
        "            out.append(rec)\n"
        "n = len(out)"),
    "AuditLog.tail()": (
        "from pathlib import Path\nfrom hpctui.actions.audit import AuditLog\n"
        "n = len(AuditLog(Path(PATH)).tail(intents=False).records)"),
    "Runtime.audit_history()": (
        "from pathlib import Path\nfrom hpctui.core.runtime import Runtime\n"
        "n = len(Runtime('demo', [], audit_path=Path(PATH)).audit_history())"),
    "load_tail (:audit)": (
        "from hpctui.actions.audit_view import load_tail\n"
        "n = len(load_tail(PATH, 'demo').entries)"),
}

RUNNER = """
import resource, sys, time
PATH = sys.argv[1]
t0 = time.perf_counter()
exec(compile(sys.argv[2], "case", "exec"))
dt = time.perf_counter() - t0
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""


def generate(path: Path, mb: int, record_bytes: int) -> int:
    """An audit log of about ``mb`` MB; returns the number of records."""
    base = {"phase": "outcome", "id": "", "time": 0.0, "finished": 0.0, "cluster": "demo", "user": "alice",
            "uid": 1000, "action": "drain", "source": "slurm", "targets": ["gpu0001", "gpu0002"],
            "params": {"reason": ""}, "commands": ["scontrol update NodeName=gpu[0001-0002] State=DRAIN"],
            "refused": None, "results": [{"target": "gpu0001", "ok": True, "message": ""}]}
    pad = max(0, record_bytes - len(json.dumps(base)) - 40)
    target = mb << 20
    n = 0
    with path.open("wb", buffering=8 << 20) as fh:
        written = 0
        while written < target:
            rec = dict(base, id=f"{n:032x}", time=1.7e9 + n, finished=1.7e9 + n + 1,
                       params={"reason": f"xid 79 #{n} " + "r" * pad})
            line = (json.dumps(rec) + "\n").encode()
            fh.write(line)
            written += len(line)
            n += 1
    return n


def measure(path: Path, code: str) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), *sys.path])}
    out = subprocess.run([sys.executable, "-c", RUNNER, str(path), code], capture_output=True, text=True,
                         check=True, env=env, timeout=900).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--record-bytes", type=int, default=1000)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the log (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="audit-bench-", dir=args.dir)
    path = Path(tmp) / "audit.jsonl"
    t0 = time.perf_counter()
    records = generate(path, args.mb, args.record_bytes)
    print(f"generated {path.stat().st_size / (1 << 20):.0f} MiB, {records:,} records in "
          f"{time.perf_counter() - t0:.1f} s; load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print(f"| reader ({args.mb} MB log, {records:,} records) | time | peak RSS | records/events |")
    print("|---|---:|---:|---:|")
    try:
        for name, code in CASES.items():
            dt, rss_kb, n = measure(path, code)
            print(f"| {name} | {dt:.3f} s | {rss_kb / 1024:.0f} MiB | {n:,} |", flush=True)
    finally:
        if not args.keep:
            path.unlink()
            path.parent.rmdir()
    print(f"(load average after: {os.getloadavg()[0]:.1f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
