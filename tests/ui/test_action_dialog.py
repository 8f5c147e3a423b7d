"""The action dialog's keyboard path: where focus starts, what ``enter`` does in each place,
what the buttons say, the dialog's own key bar over the dashboard footer, and the preview
warnings (hold on a running job, resume with a GPU error, reboot of a drained node)."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Button, Input, Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.messages import ActionRequested
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.widgets.heatmap import NodeHeatmap


async def open_dialog(app: HpcApp, pilot: object, kind: ActionKind, targets: tuple[str, ...],
                      params: dict[str, str] | None = None) -> ActionDialog:
    app.post_message(ActionRequested(kind, targets, params or {}))
    await pilot.pause()  # type: ignore[attr-defined]
    dialog = app.screen
    assert isinstance(dialog, ActionDialog)
    return dialog


async def wait_result(dialog: ActionDialog, pilot: object) -> None:
    for _ in range(60):
        if dialog.result is not None:
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError("the action did not finish")


def text_of(widget: Static) -> str:
    return str(widget.render())


async def test_enter_on_a_fresh_dialog_and_in_the_reason_field(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(size=8, seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        # resume: nothing to type, so focus is on the confirm button and enter runs it
        dialog = await open_dialog(app, pilot, ActionKind.RESUME_NODES, ("gpu0002",))
        run = dialog.query_one("#run", Button)
        assert dialog.focused is run and str(run.label) == "Resume 1 node"
        assert str(dialog.query_one("#cancel", Button).label) == "Back"
        assert "enter: Resume 1 node" in text_of(dialog.query_one("#hint", Static))
        keys = dialog.query_one("#dialog-keys", Static)
        assert "esc back" in text_of(keys) and keys.region.y == app.screen.size.height - 1  # over the footer
        await pilot.press("enter")
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.refused is None
        assert dialog.focused is dialog.query_one("#cancel", Button)
        assert str(dialog.query_one("#cancel", Button).label) == "Close"
        await pilot.press("enter")  # closes
        await pilot.pause()
        assert not isinstance(app.screen, ActionDialog)

        # drain from the heatmap key: focus in the reason field; enter there moves on, runs nothing
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.select("gpu0003")
        heatmap.focus()
        await pilot.press("d")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        reason = dialog.query_one("#param-reason", Input)
        assert dialog.focused is reason
        assert "nothing runs yet" in text_of(dialog.query_one("#hint", Static))
        await pilot.press("enter")  # empty required reason: stay there
        await pilot.pause()
        assert dialog.focused is reason and dialog.result is None
        await pilot.press(*"xid 79", "enter")
        await pilot.pause()
        assert dialog.result is None and not dialog.running, "enter in the reason field must not run the drain"
        run = dialog.query_one("#run", Button)
        assert dialog.focused is run and str(run.label) == "Drain 1 node"
        assert len(dialog.plan.steps) == 2  # demo nodes are Slurm and K8s nodes: drain + cordon
        assert "Step 1: demo drain" in text_of(dialog.query_one("#plan", Static))
        await pilot.press("enter")
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.ok
        assert [s.kind for s in dialog.result.steps] == [ActionKind.DRAIN_NODES, ActionKind.CORDON_NODES]


async def test_bulk_buttons_typed_word_and_warnings(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = rt.store.snapshot()
        running = [j.display_id for j in snap.jobs if j.state == "RUNNING"][:4]
        pending = [j.display_id for j in snap.jobs if j.state == "PENDING"][:1]
        # cancel 4 jobs: the buttons say what they do; focus in the typed-word field
        dialog = await open_dialog(app, pilot, ActionKind.CANCEL_JOBS, tuple(running))
        assert str(dialog.query_one("#run", Button).label) == f"Cancel {len(running)} jobs"
        assert str(dialog.query_one("#cancel", Button).label) == "Back"
        confirm = dialog.query_one("#confirm", Input)
        assert dialog.focused is confirm
        await pilot.press("enter")  # no word yet: nothing happens
        await pilot.pause()
        assert dialog.result is None and not dialog.running
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ActionDialog)

        # hold on a running job: the preview warns before anything runs
        dialog = await open_dialog(app, pilot, ActionKind.HOLD_JOBS, (running[0], *pending))
        preview = text_of(dialog.query_one("#plan", Static))
        assert f"job {running[0]} is RUNNING: hold only affects pending jobs" in preview
        await pilot.press("escape")
        await pilot.pause()

        # resume of a node with an active GPU error
        bad = next(n for n in snap.nodes if any(f.object.startswith("gpu/") and f.severity >= 3
                                                for f in rt.findings().node(n)))
        dialog = await open_dialog(app, pilot, ActionKind.RESUME_NODES, (bad,))
        assert f"{bad} has an active GPU error" in text_of(dialog.query_one("#plan", Static))
        await pilot.press("escape")
        await pilot.pause()


async def test_reboot_of_a_drained_node_prefills_its_reason(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        plan = rt.executor.plan(ActionKind.DRAIN_NODES, ["gpu0005"], {"reason": "psu fault ticket 9"},
                                rt.store.snapshot())
        assert (await rt.executor.execute(plan, confirmation=True)).ok
        await load(app, pilot)
        dialog = await open_dialog(app, pilot, ActionKind.REBOOT_NODES, ("gpu0005",))
        assert dialog.query_one("#param-reason", Input).value == "psu fault ticket 9"
        assert dialog.focused is dialog.query_one("#run", Button)  # the reason is there: straight to confirm
        assert "after the reboot" in text_of(dialog.query_one("#plan", Static))
