"""Mutation score from mutmut's results, per module and overall (scripts/mutation.sh calls this).

    python bench/mutation_score.py [module-prefix ...] [--survivors]

Killed = mutmut's "killed", "timeout" and "caught by type check" (the suite or the tools noticed).
Survived = "survived" and "no tests" (a planted bug nobody noticed). "not checked" is not counted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "no tests"}
LINE = re.compile(r"^\s*(\S+?): (.+)$")


def results() -> dict[str, str]:
    mutmut = Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(mutmut), "results", "--all", "true"], capture_output=True, text=True, check=True)
    found = {}
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m and "__mutmut_" in m.group(1):
            found[m.group(1)] = m.group(2).strip()
    return found


def module_of(name: str) -> str:
    return name.split(".x_", 1)[0].split(".xǁ", 1)[0]


def main(argv: list[str]) -> int:
    show = "--survivors" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    per: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: list[str] = []
    for name, status in sorted(results().items()):
        mod = module_of(name)
        if prefixes and not any(mod == p or mod.startswith(p + ".") for p in prefixes):
            continue
        kind = "killed" if status in KILLED else "survived" if status in SURVIVED else "unchecked"
        per[mod][kind] += 1
        if kind == "survived":
            survivors.append(f"{name}  ({status})")
    total: Counter[str] = Counter()
    print(f"{'module':58} {'killed':>7} {'surv.':>6} {'score':>6}")
    for mod, c in sorted(per.items()):
        total.update(c)
        checked = c["killed"] + c["survived"]
        score = f"{100 * c['killed'] / checked:5.1f}%" if checked else "   -  "
        print(f"{mod:58} {c['killed']:7} {c['survived']:6} {score}")
    checked = total["killed"] + total["survived"]
    if checked:
        print(f"{'TOTAL':58} {total['killed']:7} {total['survived']:6} {100 * total['killed'] / checked:5.1f}%"
              + (f"   ({total['unchecked']} not checked)" if total["unchecked"] else ""))
    if show:
        print("\nsurvivors (mutmut show NAME):")
        print("\n".join(f"  {s}" for s in survivors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
