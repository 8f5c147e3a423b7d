"""A longer fuzzing run of every parser: the properties of tests/fuzz with the "long" profile.

CI runs tests/fuzz with the bounded, derandomised "ci" profile (the same few dozen examples per
property every run). This runs the same properties with many fresh random examples per test and
Hypothesis' local example database (.hypothesis/), so a failure found once is replayed first next
time. It prints, per test, pass or the minimal failing example Hypothesis shrank it to (with the
``@reproduce_failure`` blob), then the statistics of each property (examples, time spent).

A failure is a real bug in a parser (an undeclared exception, a control character in the model,
a hang): fix it, and add the example as an ``@example`` on the test (see tests/fuzz/*.py).

Usage: python bench/fuzz_parsers.py [EXAMPLES] [-k EXPR]   (default 5000 examples per test;
       -k selects tests as pytest does, e.g. ``-k probe``). Exit status: pytest's (0 = nothing found).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    examples = argv[0] if argv and argv[0].isdigit() else "5000"
    rest = argv[1:] if argv and argv[0].isdigit() else argv
    env = {**os.environ, "HYPOTHESIS_PROFILE": "long", "HPCTUI_FUZZ_EXAMPLES": examples,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "pytest", "tests/fuzz", "-m", "not live", "-p", "no:cacheprovider", "-q",
           "--hypothesis-show-statistics", "-W", "ignore::hypothesis.errors.HypothesisWarning", *rest]
    print(f"fuzz_parsers: {examples} examples per property: {' '.join(cmd[2:])}", flush=True)
    started = time.monotonic()
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    verdict = "nothing found" if rc == 0 else "FOUND a failing example (see above)"
    print(f"fuzz_parsers: {verdict} in {time.monotonic() - started:.0f} s (pytest exit {rc})")
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
