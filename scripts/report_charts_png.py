"""Regenerate screenshots/report-charts.png: the incident report's charts for the demo's hot-GPU node.

The demo (seed 1, frozen clock) replays two minutes; the report's HTML for gpu0052 (GPU 6 at 88 °C)
is cut to its chart section and photographed by a headless Chromium. Run from the repo root:
``python scripts/report_charts_png.py [--browser /usr/bin/chromium]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hpctui.core.runtime import demo_runtime  # noqa: E402
from hpctui.report.incident import build_report, render_html  # noqa: E402

FIXED = 1_750_000_000.0
NODE = "gpu0052"
OUT = ROOT / "screenshots" / "report-charts.png"


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def _doc(tmp: Path) -> dict[str, object]:
    clock = _Clock(FIXED - 120)
    rt = demo_runtime(seed=1, clock=clock, start_time=FIXED - 120, audit_path=tmp / "audit.jsonl")
    for _ in range(61):
        await rt.collect_once()
        clock.t += 2.0
    await rt.stop()
    return build_report(rt.store.snapshot(), nodes=[NODE], jobs=[], since_s=3600, thresholds=rt.thresholds,
                        history=rt.store.history.get, series=rt.store.series, user="oncall", host="ops1")


def charts_page(tmp: Path) -> str:
    """The report's HTML with only its head and the chart section."""
    page = render_html(asyncio.run(_doc(tmp)))
    head, _, _ = page.partition("<body>")
    section = page[page.index("<h2>GPU and IB history</h2>"):]
    return f"{head}<body>{section}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    p.add_argument("-o", "--output", type=Path, default=OUT)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "charts.html"
        html.write_text(charts_page(Path(tmp)))
        subprocess.run([args.browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp}/profile", "--window-size=900,1180",
                        f"--screenshot={args.output.resolve()}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
