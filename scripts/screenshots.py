"""Regenerate screenshots/*.svg: the dashboard in each built-in theme at 160×50, plus
one with the worst node (most severe findings) selected.

Deterministic: seeded demo cluster and a frozen clock, so the SVGs only change
when the UI does. Run from the repo root: ``python scripts/screenshots.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hpctui.core.runtime import demo_runtime  # noqa: E402
from hpctui.findings.health import node_findings  # noqa: E402
from hpctui.ui.app import HpcApp  # noqa: E402
from hpctui.ui.widgets.gpu_panel import LineStack  # noqa: E402

# The node panel drops a shorter node's blank tail a moment after arrowing stops (LineStack):
# a screenshot shows the panel as it settles, not the moment in between.
LineStack.SHRINK_AFTER_S = 0.0

FIXED = 1_750_000_000.0
SEED = 7
SIZE = (160, 50)
OUT = ROOT / "screenshots"


async def shoot(name: str, theme: str, *, wall: bool = False, worst_node: bool = False,
                keys: tuple[str, ...] = (), seed: int = SEED, size: tuple[int, int] = SIZE) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=seed, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl", theme=theme)
        app = HpcApp(runtime, theme=theme, wall=wall, autostart=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(2 if keys else 1):  # triage shots: a second tick, so the flapping port has flapped
                await runtime.collect_once()
                app.refresh_from_store()
                await pilot.pause()
            if worst_node:
                snap = runtime.store.snapshot()

                def badness(n: str) -> tuple[int, int]:
                    findings = node_findings(snap, n, runtime.thresholds)
                    return (max((int(f.severity) for f in findings), default=0), len(findings))
                node = max(snap.nodes, key=badness)
                app.dashboard.heatmap.select(node)
                await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            await pilot.pause()
            path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    return path


# A diagnostic on 8 marked nodes, folded like `clush -b`: two driver versions, one node whose GPU fails
# the check (exit code 1), one that hangs past the timeout (listed apart). A local stand-in `dcgmi`.
FAKE_DCGMI = r"""#!/bin/sh
case "$5" in
  *0004) echo "Diagnostic: GPU 3 FAIL (Xid 79: GPU has fallen off the bus)"; exit 1;;
  *0006) sleep 30;;
  *000[1-3]) printf 'Driver Version: 550.54.15\nDeployment .......... Pass\nIntegration ......... Pass (8 GPUs)\n';;
  *) printf 'Driver Version: 535.161.08\nDeployment .......... Pass\nIntegration ......... Pass (8 GPUs)\n';;
esac
"""


async def shoot_custom(name: str = "custom-result", theme: str = "dark", size: tuple[int, int] = (120, 36)) -> Path:
    """The custom-action result view: key on a heatmap selection → preview → enter → folded output."""
    import msgspec

    from hpctui.actions.custom import CustomActionSettings
    from hpctui.ui.screens.custom_result import CustomResultScreen

    action = msgspec.convert({"name": "dcgm-diag", "key": "ctrl+g", "description": "DCGM quick diagnostic",
                              "command": "dcgmi diag -r 1 --host {node}", "timeout_s": 2}, CustomActionSettings)
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "dcgmi"
        fake.write_text(FAKE_DCGMI)
        fake.chmod(0o755)
        os.environ["PATH"] = f"{tmp}{os.pathsep}{os.environ.get('PATH', '')}"
        runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl", theme=theme)
        runtime.custom_actions = (action,)
        app = HpcApp(runtime, theme=theme, autostart=False)
        async with app.run_test(size=size) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            for _ in range(8):
                await pilot.press("space", "right")
            await pilot.press("ctrl+g")
            await pilot.pause()
            path = Path(app.save_screenshot(f"{name}-preview.svg", str(OUT)))
            await pilot.press("enter")
            for _ in range(400):
                screen = app.screen
                if isinstance(screen, CustomResultScreen) and screen.run.result is not None:
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.5)
            path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    return path


async def shoot_mig() -> list[Path]:
    """The MIG wizard on the demo's H100 MIG node: the preview before confirming, and the finished checklist."""
    from hpctui.sources.demo.source import DemoSource
    from hpctui.ui.screens.mig_wizard import MigWizardScreen

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl")
        src = runtime.sources[0]
        assert isinstance(src, DemoSource)
        src.mig_delay_s = 0.0
        node = next(n for n, v in src.sim.mig.items() if v[0] is not None)
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=SIZE) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            app.push_screen(MigWizardScreen(runtime, [node]))
            await pilot.pause()
            await pilot.press("down", "enter", *"mig-")
            await pilot.pause()
            out.append(Path(app.save_screenshot("mig-wizard-preview.svg", str(OUT))))
            await pilot.press("1", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            out.append(Path(app.save_screenshot("mig-wizard-done.svg", str(OUT))))
    return out
class _Clock:
    def __init__(self) -> None:
        self.t = FIXED

    def __call__(self) -> float:
        return self.t


async def shoot_visuals(name: str, *, keys: tuple[str, ...] = (), polls: int = 1, size: tuple[int, int] = (160, 50),
                        heatmap: dict[str, object] | None = None, nodes: int = 64, seed: int = 1,
                        theme: str = "dark", gpus_view: bool = False) -> Path:
    """Charts, the GPU table and the grouped heatmap (visuals): ``polls`` demo ticks 5 s apart
    (a history to chart), ``heatmap`` the [heatmap] config table."""
    import msgspec

    from hpctui.core.heatmap_settings import HeatmapSettings

    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=nodes, seed=seed, clock=clock, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl", theme=theme)
        runtime.heatmap = msgspec.convert(heatmap or {}, HeatmapSettings)
        app = HpcApp(runtime, theme=theme, autostart=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(polls):
                await runtime.collect_once()
                clock.t += 5.0
            app.refresh_from_store()
            await pilot.pause()
            if gpus_view:  # what `:gpus` opens
                from hpctui.ui.screens.gpus import GpusScreen

                await app.push_screen(GpusScreen(runtime))
                await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            await pilot.pause()
            path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    return path


async def plans_shots() -> list[Path]:
    """The action dialog of a hybrid drain (Slurm drain + K8s cordon steps) on a node with jobs
    and pods, reason typed and enter pressed (focus moved to the confirm button); and a hold of
    a running job with its warning."""
    from hpctui.findings.correlate import workload_index

    out: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl")
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=SIZE) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            index = workload_index(runtime.store.snapshot())
            node = max(runtime.store.snapshot().nodes, key=lambda n: (bool(index.pods_on(n)), len(index.jobs_on(n))))
            app.dashboard.heatmap.select(node)
            app.dashboard.heatmap.focus()
            await pilot.press("d", *"xid 79 ticket 4411", "enter")
            await pilot.pause()
            out.append(Path(app.save_screenshot("action-hybrid-drain.svg", str(OUT))))
            await pilot.press("escape")
            await pilot.pause()
            from hpctui.model.action import ActionKind
            from hpctui.ui.messages import ActionRequested

            job = next(j for j in runtime.store.snapshot().jobs if j.state == "RUNNING")
            app.post_message(ActionRequested(ActionKind.HOLD_JOBS, (job.display_id,), {}))
            await pilot.pause()
            out.append(Path(app.save_screenshot("action-hold-warning.svg", str(OUT))))
    return out


async def checks_shots() -> list[Path]:
    """Health checks (docs/health-checks.md) on the demo node with a critical GPU finding: the check picker
    and its preview (``K``), the failed diag offering the drain, the resume the gate holds (with the
    override field), and the node panel listing the result and what the gate holds the node for."""
    from hpctui.model.action import ActionKind
    from hpctui.ui.messages import ActionRequested
    from hpctui.ui.screens.action_dialog import ActionDialog

    out: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl")
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=(140, 44)) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            s = runtime.health_settings
            node = sorted({f.object.split("/")[1] for f in runtime.findings()
                           if f.object.startswith("gpu/") and s.gates(f.object, f.code, f.severity)})[0]
            app.dashboard.heatmap.select(node)
            app.dashboard.heatmap.focus()
            await pilot.press("K")
            await pilot.pause()
            out.append(Path(app.save_screenshot("checks-picker.svg", str(OUT))))
            dialog = app.screen
            assert isinstance(dialog, ActionDialog)
            dialog.query_one("#run").press()  # type: ignore[attr-defined]
            for _ in range(100):
                await pilot.pause(0.05)
                if dialog.result is not None:
                    break
            await pilot.pause()
            out.append(Path(app.save_screenshot("checks-failed-offers-drain.svg", str(OUT))))
            await pilot.press("escape")
            await pilot.pause()
            app.post_message(ActionRequested(ActionKind.RESUME_NODES, (node,), {}))
            await pilot.pause()
            out.append(Path(app.save_screenshot("checks-resume-gated.svg", str(OUT))))
            await pilot.press("escape")
            await pilot.pause()
            app.dashboard.gpu_panel.redraw()
            await pilot.pause()
            out.append(Path(app.save_screenshot("checks-node-panel.svg", str(OUT))))
    return out


async def checks_main() -> None:
    OUT.mkdir(exist_ok=True)
    paths = await checks_shots()
    if "--png" in sys.argv:
        to_png(paths)
    for path in paths:
        print(path.relative_to(ROOT))


async def redrain_shot() -> Path:
    """Draining gpu0007 again (demo seed 1: drained by root, "xid 79 gpu3 - RMA ticket 4411") with
    the problem list focused (the key acts on the node ``g`` selected): the dialog says what is
    already true and offers keep / append / replace; append chosen, the new reason typed."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=1, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl")
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            app.dashboard.show_view("problems")
            await pilot.press("g", *"gpu0007", "enter")
            await pilot.pause()
            await pilot.press("d")
            await pilot.pause()
            await pilot.press("down", "enter", "tab", *"PSU swapped too")  # append, then the reason
            await pilot.pause()
            return Path(app.save_screenshot("action-redrain.svg", str(OUT)))


async def main_visuals() -> None:
    OUT.mkdir(exist_ok=True)
    racks = {f"r{i + 1:02d}": f"gpu[{i * 16 + 1:04d}-{i * 16 + 16:04d}]" for i in range(4)}
    shots = [
        await shoot_visuals("charts-gpu", keys=("v",), polls=70),
        await shoot_visuals("charts-gpu-light", keys=("v",), polls=70, theme="light", size=(120, 40)),
        await shoot_visuals("heatmap-grouped-rack", heatmap={"group_by": "rack", "racks": racks,
                                                             "problems_first": True}),
        await shoot_visuals("heatmap-grouped-colorblind", heatmap={"group_by": "partition", "palette": "colorblind"}),
        await shoot_visuals("heatmap-util", keys=("m",), heatmap={"group_by": "model"}, polls=2),
        await shoot_visuals("gpus-table", gpus_view=True, polls=2),
    ]
    for path in shots:
        print(path.relative_to(ROOT))


async def wall_shots() -> list[Path]:
    """The wall display (--wall) at 200×60 and 300×80: its first view (heatmap, worst node, problems)
    and, at 200×60, the next view after one rotation (the clock moved by rotate_s)."""
    from hpctui.ui.screens.wall import WallScreen

    paths = []
    for size, rotations in (((200, 60), (0, 1)), ((300, 80), (0,))):
        for rotation in rotations:
            with tempfile.TemporaryDirectory() as tmp:
                now = [FIXED]
                runtime = demo_runtime(size=64, seed=SEED, clock=lambda now=now: now[0], start_time=FIXED,
                                       audit_path=Path(tmp) / "audit.jsonl")
                app = HpcApp(runtime, wall=True, autostart=False)
                async with app.run_test(size=size) as pilot:
                    await runtime.collect_once()
                    app.refresh_from_store()
                    await pilot.pause()
                    wall = app.screen
                    assert isinstance(wall, WallScreen)
                    for _ in range(rotation):
                        now[0] += wall.settings.rotate_s
                        await runtime.collect_once()  # fresh data at the new time: not shown as stale
                        app.refresh_from_store()
                        wall.tick()
                        await pilot.pause()
                    name = f"wall-{size[0]}x{size[1]}" + (f"-{wall.view}" if rotation else "")
                    paths.append(Path(app.save_screenshot(f"{name}.svg", str(OUT))))
    return paths


async def triage_shots() -> list[Path]:
    """Issue #22 (seed 1, 200×60 unless said): the explain view of the flapping port (after ten ticks), the event timeline with its repeats coalesced, and the wall at 200×60
    and at --demo-size 4096."""
    from hpctui.ui.widgets.problems import ProblemsPane

    out = []
    for name, size, wall, demo_size, keys in (
            ("triage-explain", (160, 50), False, 64, ("p", "explain")),
            ("triage-events-coalesced", (200, 60), False, 64, ("e",)),
            ("wall-200x60-seed1", (200, 60), True, 64, ()),
            ("wall-200x60-4096", (200, 60), True, 4096, ())):
        with tempfile.TemporaryDirectory() as tmp:
            now = [FIXED]
            runtime = demo_runtime(size=demo_size, seed=1, clock=lambda now=now: now[0], start_time=FIXED,
                                   audit_path=Path(tmp) / "audit.jsonl")
            app = HpcApp(runtime, wall=wall, autostart=False)
            async with app.run_test(size=size) as pilot:
                for _ in range(2 if wall else 10):  # ten ticks: the ECC count climbed, the port flapped ten times
                    now[0] += 2.0
                    await runtime.collect_once()
                    app.refresh_from_store()
                    await pilot.pause()
                for key in keys:
                    if key == "explain":  # the flapping port's node: its number, then enter
                        flap = runtime.sources[0].sim.place.flap_node  # type: ignore[attr-defined]
                        key = str(app.screen.query_one(ProblemsPane).nodes.index(flap) + 1)
                        await pilot.press(key, "enter")
                    else:
                        await pilot.press(key)
                    await pilot.pause()
                await pilot.wait_for_scheduled_animations()
                await pilot.pause()
                out.append(Path(app.save_screenshot(f"{name}.svg", str(OUT))))
    return out


async def nav_shots() -> list[Path]:
    """`:` command mode with its matches, and the breadcrumb after drilling into a node and a job."""
    busy = "gpu0003"  # runs jobs in the seed-1 demo
    return [
        await shoot("nav-command", "dark", seed=1, size=(120, 40), keys=("colon", "p")),
        await shoot("nav-breadcrumb", "dark", seed=1, size=(120, 40),
                    keys=("g", *busy, "enter", "enter", "enter")),
    ]


async def storage_shots() -> list[Path]:
    """Issue #27: the problem list with the storage groups (the demo's Ceph in HEALTH_WARN with osd.17 down, an
    S3 endpoint refusing the key), the cursor on the last row so the groups after the nodes are in view."""
    from hpctui.ui.widgets.problems import ProblemsPane

    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl")
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            app.dashboard.show_view("problems")
            await pilot.pause()
            table = app.screen.query_one(ProblemsPane).problems
            table.focus()
            await pilot.press("end")
            await pilot.pause()
            return [Path(app.save_screenshot("problems-storage.svg", str(OUT)))]


# layout: the dashboard at each terminal size (issue #12), and the narrow layout's node tab.
LAYOUT_SIZES = ((80, 24), (120, 40), (200, 60), (300, 80))


async def layout_shots() -> list[Path]:
    shots = [await shoot(f"size-{w}x{h}", "dark", size=(w, h)) for w, h in LAYOUT_SIZES]
    shots.append(await shoot("size-80x24-node", "dark", size=(80, 24), keys=("right_square_bracket",)))
    shots.append(await shoot("size-120x40-light", "light", size=(120, 40)))
    return shots


def to_png(paths: list[Path]) -> None:
    """PNG copies next to the SVGs (for looking at them; needs cairosvg)."""
    try:
        import cairosvg  # type: ignore[import-untyped]
    except ImportError:
        raise SystemExit("screenshots.py --png needs cairosvg: pip install '.[screenshots]' "
                         "(or .venv/bin/pip install 'cairosvg>=2.7')") from None

    for path in paths:
        cairosvg.svg2png(url=str(path), write_to=str(path.with_suffix(".png")))


async def main() -> None:
    if sys.argv[1:2] in (["wall"], ["triage"], ["storage"]):  # only the wall display's (issue #22's, #27's) shots
        paths = await {"wall": wall_shots, "triage": triage_shots, "storage": storage_shots}[sys.argv[1]]()
        if "--png" in sys.argv:
            to_png(paths)
        for path in paths:
            print(path.relative_to(ROOT))
        return
    OUT.mkdir(exist_ok=True)
    shots = [
        await shoot("dashboard-dark", "dark"),
        await shoot("dashboard-light", "light"),
        await shoot("dashboard-wall", "wall"),  # the dashboard in the wall theme (--wall: wall_shots)
        await shoot("dashboard-incident", "dark", worst_node=True),
        await shoot("triage-problems", "dark", keys=("p", "4"), seed=1, size=(200, 60)),
        await shoot("triage-events", "dark", keys=("n", "e"), seed=1, size=(200, 60)),
        await shoot("triage-wall", "wall", seed=1, size=(200, 60), keys=("n",)),
        await shoot("triage-filter", "dark", seed=1, size=(200, 60), keys=("J", "slash", *"gpu0003", "enter")),
        await shoot("triage-goto", "light", seed=1, size=(120, 40), keys=("g", *"gpu[0010-0012]")),
        await shoot_custom(),
        *await wall_shots(),
        *await triage_shots(),
        *await nav_shots(),
    ]
    shots += await views_shots()
    shots += await shoot_mig()
    shots += await plans_shots()
    shots.append(await redrain_shot())
    shots += await checks_shots()
    shots += await layout_shots()
    await main_visuals()
    if "--png" in sys.argv:
        to_png(shots)
    for path in shots:
        print(path.relative_to(ROOT))


class Clock:
    def __init__(self) -> None:
        self.t = FIXED

    def __call__(self) -> float:
        return self.t


async def views_shots() -> list[Path]:
    """The partitions, drained-nodes (sinfo -R) and audit views, after a few admin actions."""
    from hpctui.model.action import ActionKind
    from hpctui.ui.screens.audit import AuditScreen
    from hpctui.ui.screens.drained import DrainedScreen
    from hpctui.ui.screens.partitions import PartitionsScreen

    OUT.mkdir(exist_ok=True)
    out: list[Path] = []
    views = [("view-partitions", PartitionsScreen, ()), ("view-drained", DrainedScreen, ()),
             ("view-audit", AuditScreen, ()), ("view-audit-record", AuditScreen, ("down", "enter"))]
    for name, screen_cls, keys in views:
        audit = Path(tempfile.gettempdir()) / "hpctui-screenshots" / "audit.jsonl"  # a fixed path: it is shown
        audit.unlink(missing_ok=True)
        clock = Clock()
        runtime = demo_runtime(size=64, seed=SEED, clock=clock, start_time=FIXED, audit_path=audit, theme="dark")
        app = HpcApp(runtime, theme="dark", autostart=False)
        async with app.run_test(size=(160, 40)) as pilot:
            await runtime.collect_once()
            for step, (kind, targets, params) in enumerate([
                (ActionKind.DRAIN_NODES, ("gpu[0010-0012]",), {"reason": "IB link flapping on mlx5_1"}),
                (ActionKind.CORDON_NODES, ("gpu0040",), {}),
                (ActionKind.PARTITION_STATE, ("debug",), {"state": "DRAIN"}),
                (ActionKind.DRAIN_NODES, ("gpu0021",), {"reason": "PSU fault, RMA 5521"}),
                (ActionKind.HOLD_JOBS, ("424242",), {}),
            ]):
                clock.t = FIXED + 300 * (step + 1)
                plan = runtime.executor.plan(kind, targets, params, runtime.store.snapshot())
                await runtime.executor.execute(plan, confirmation=plan.confirm_word or True)
            clock.t += 60
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            await app.push_screen(screen_cls(runtime))
            await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            out.append(Path(app.save_screenshot(f"{name}.svg", str(OUT))))
    return out


async def redrain_main() -> None:
    path = await redrain_shot()
    if "--png" in sys.argv:
        to_png([path])
    print(path.relative_to(ROOT))


async def views_main() -> None:
    for path in await views_shots():
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    # `python scripts/screenshots.py [views|visuals|wall|triage|redrain] [--png]`: all shots, or one group of them
    only = {"views": views_main, "visuals": main_visuals, "redrain": redrain_main, "checks": checks_main}.get(sys.argv[1] if sys.argv[1:] else "")  # or --png
    asyncio.run(only() if only is not None else main())
