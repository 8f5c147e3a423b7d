"""HpcApp: wires a Runtime to the dashboard screen; owns themes, global keys, actions.

Data flows one way: the poller's on_change posts ONE pending SnapshotChanged carrying the
runtime's newest frame (hpctui.core.frame); its handler pushes that frame down to the dashboard
and to every stacked FrameView (skipping versions already drawn). Screens get the runtime only
as their port (hpctui.core.ports.UiPort). Actions come back up as ActionRequested.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from rich.console import RenderableType
from textual import events
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input

from hpctui.core import signals
from hpctui.core.frame import Frame
from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.frame_view import FrameView
from hpctui.ui.literal import escape_markup
from hpctui.ui.messages import (
    ActionRequested,
    JobDetailRequested,
    LogsRequested,
    MigWizardRequested,
    PodDetailRequested,
    ShellRequested,
    SnapshotChanged,
)
from hpctui.ui.registry import GLOBAL_KEYS, TRIAGE_KEYS, bindings
from hpctui.ui.screens.dashboard import DashboardScreen
from hpctui.ui.screens.help import HelpScreen
from hpctui.ui.subject import act_on_subject, subject_bindings
from hpctui.ui.themes import DEFAULT_VARIABLES, load_themes
from hpctui.ui.widgets.borders import framed_pane, move_focus_frame

if TYPE_CHECKING:
    from hpctui.core.clusters import ClusterSet
    from hpctui.ui.shell import AppTerminal

# Hidden fallbacks for the node/job action keys, the MIG wizard and charts: a key the focused pane
# does not bind (or disables: read-only) falls through to these, which act on the subject (the
# node/job the last selection named, hpctui.ui.subject) or say why they cannot.
_SUBJECT_FALLBACKS: list[BindingType] = subject_bindings()
FALLBACK_THEMES = ("dark", "light", "wall")
WALL_ACTIONS = frozenset({"quit"})  # the only key the wall display answers (q, ctrl+q)


FREEZE_AFTER_S = 0.5  # after the first frame: see _first_frame_drawn


class HpcApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "hpctui"
    BINDINGS = bindings(GLOBAL_KEYS, TRIAGE_KEYS) + _SUBJECT_FALLBACKS

    def __init__(self, runtime: Runtime, *, theme: str | None = None, wall: bool = False,
                 autostart: bool = True, handle_signals: bool = False, keymap: dict[str, str] | None = None,
                 clusters: ClusterSet | None = None, freeze_gc: bool = False) -> None:
        super().__init__()
        self.freeze_gc = freeze_gc  # the installed command: see hpctui.core.gc_tuning
        self.keymap = dict(keymap or {})  # binding id -> keys, checked (hpctui.ui.keymap.check_keymap)
        self.clusters = clusters  # the configured clusters `:cluster NAME` switches between
        self._refresh_asked = False  # `r` pressed: say so when its data is drawn
        self.handle_signals = handle_signals  # SIGHUP/SIGTERM/SIGINT → a clean exit (hpctui.core.signals)
        self.exit_signal: int | None = None
        self._exit_deadline: threading.Thread | None = None  # see exit()
        self.runtime = runtime
        self.wall = wall
        self.shell_terminal: AppTerminal | None = None  # the last shell's terminal handover (hpctui.ui.shell)
        self.autostart = autostart
        self.read_only = runtime.read_only or wall
        self.theme_errors: list[str] = []
        self.hpc_themes = load_themes(errors=self.theme_errors)
        for t in self.hpc_themes.values():
            self.register_theme(t)
        wanted = theme or ("wall" if wall else runtime.theme)
        self._initial_theme = wanted if wanted in self.available_themes else None
        self._drawn_version = -1
        self._drawn_data_version = -1
        self._pending: SnapshotChanged | None = None
        self._clock: Timer | None = None
        self._held_keys: list[events.Key] | None = None  # see hold_keys
        self._framed: weakref.WeakKeyDictionary[Screen[object], Widget | None] = weakref.WeakKeyDictionary()
        self.custom_key_error: str | None = None  # a custom action's key taken on its pane: none bound
        self.dashboard_class = self._custom_keys_dashboard()
        self.dashboard = self.dashboard_class(runtime, wall=wall, actions_enabled=not self.read_only)
        if wall:
            self.use_command_palette = False  # the palette lists actions and views: not on a wall

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; over the shell the command line drew (hpctui.ui.splash), one that
        takes that screen over without switching (and so clearing) it again."""
        driver: type[Driver] = super().get_driver_class()
        from hpctui.ui import splash

        if splash.showing() and driver.__name__ == "LinuxDriver":
            over: type[Driver] = splash.over_splash(driver)
            return over
        return driver

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Our variables for themes that do not define them (Textual's built-in ones)."""
        return dict(DEFAULT_VARIABLES)

    @property
    def theme_names(self) -> list[str]:
        """Themes ``t`` cycles through: ours first, by name."""
        return sorted(self.hpc_themes) or list(FALLBACK_THEMES)

    def on_mount(self) -> None:
        if self._initial_theme is not None:
            self.theme = self._initial_theme
        elif "dark" in self.available_themes:
            self.theme = "dark"
        for error in self.theme_errors:
            self.notify(error, title="Theme skipped", severity="warning")
        if self.custom_key_error:
            self.notify(self.custom_key_error, title="Custom action keys not bound", severity="error")
        if self.keymap:
            self.set_keymap(self.keymap)
        self.push_screen(self.dashboard)
        self.screen_change_signal.subscribe(self, lambda _screen: self.update_breadcrumb())
        if self.wall:  # the wall display goes over the dashboard, which it hides for good
            from hpctui.ui.screens.wall import WallScreen

            self.push_screen(WallScreen(self.runtime))
        if self.handle_signals:
            signals.install(asyncio.get_running_loop(), self._on_exit_signal)
        painted: asyncio.Event | None = None
        if self.autostart:
            # Started here, not deferred past the first paint: a runtime started from a later
            # callback left the app deaf to SIGHUP while a collect hung (test_hardening_signals).
            # A heavy first collect (the demo's simulator at 4k nodes, ~1 s in a thread) waits
            # for the first frame: it would otherwise halve the speed of drawing it, through
            # the GIL. Collects that wait on daemons start at once, alongside the drawing.
            painted = asyncio.Event() if self.runtime.first_collect_heavy else None
            self._start_runtime(painted)
        # Queued on the screen: runs after its first refresh.
        self.dashboard.call_after_refresh(self._first_frame_drawn, painted)

    def _first_frame_drawn(self, painted: asyncio.Event | None) -> None:
        if painted is not None:
            painted.set()
        if self.freeze_gc:  # Textual and the widgets, alive for good: out of every collection
            from hpctui.core import gc_tuning

            # A moment later: its full collection holds the GIL, and the frame (written by
            # Textual's writer thread) or the first data must not wait for it.
            self.set_timer(FREEZE_AFTER_S, gc_tuning.freeze_startup)

    def _start_runtime(self, after: asyncio.Event | None = None) -> None:
        if self.shutting_down:
            return
        self.runtime.start(self._on_store_change, after)
        self._clock = self.set_interval(1.0, self.dashboard.update_status)
        self._on_store_change()

    async def on_unmount(self) -> None:
        await self.runtime.stop()  # in-flight actions finish (or are recorded interrupted), children killed

    def _on_exit_signal(self, signum: int) -> None:
        if self.exit_signal is None:
            self.exit_signal = signum
            self.exit(return_code=128 + signum)

    def exit(self, result: None = None, return_code: int = 0, message: RenderableType | None = None) -> None:
        """Every way out (q, a signal, the terminal going away) arms a deadline first: Textual's
        shutdown can block for good once the terminal is gone (its writer queue full, nobody
        draining it: seen after `tmux kill-server`), and a TUI must not outlive its session."""
        self._arm_exit_deadline(return_code)
        super().exit(result, return_code, message)

    def _arm_exit_deadline(self, return_code: int) -> None:
        if self._exit_deadline is None and not self.is_headless:  # (never in a test process: Pilot is headless)
            self._exit_deadline = signals.arm_exit_deadline(return_code)

    async def _shutdown(self) -> None:
        """Textual's shutdown, under the exit deadline whatever started it. The terminal going
        away mid-start (the input thread reads EOF) ends the app without ``exit()``, and the
        shutdown then blocks writing to that terminal; with the event loop blocked, the SIGHUP
        that follows is never handled: before this, such a process stayed for good."""
        self._arm_exit_deadline(self.return_code or 0)
        await super()._shutdown()

    # -- data flow ------------------------------------------------------------
    def _on_store_change(self) -> None:
        """Poller callback: post one message with the newest frame; more changes while it is
        pending put their (newer) frame into it instead of posting again."""
        frame = self.runtime.frame()
        if self._pending is not None:
            self._pending.frame = frame
            return
        self._pending = SnapshotChanged(frame)
        self.post_message(self._pending)

    def on_snapshot_changed(self, message: SnapshotChanged) -> None:
        if message is not self._pending:  # posted for a runtime since replaced (:cluster)
            return
        self._pending = None
        self.show_frame(message.frame)

    @property
    def shutting_down(self) -> bool:
        """True once Textual has begun tearing screens down; a poll may still finish then."""
        return not self.is_running

    def refresh_from_store(self) -> bool:
        """Draw the runtime's current frame unless it was drawn already; True if drawn."""
        return self.show_frame(self.runtime.frame())

    def show_frame(self, frame: Frame) -> bool:
        """Push ``frame`` down to the dashboard and every stacked :class:`FrameView` unless its
        version was drawn already; a frame whose data did not change (only source health) goes
        to the dashboard's status line alone. True if drawn."""
        if self.shutting_down or frame.version == self._drawn_version:
            return False
        self._drawn_version = frame.version
        if self._refresh_asked:
            self._refresh_asked = False
            self.notify(f"refreshed: data of {time.strftime('%H:%M:%S', time.localtime(frame.time))}", timeout=4)
        if frame.data_version == self._drawn_data_version:  # only source health moved: no full redraw
            if not self.wall:  # (the wall screen shows health on its own clock tick)
                self.dashboard.update_health(frame)
            return True
        self._drawn_data_version = frame.data_version
        self._announce(frame)
        if not self.wall:  # under the wall display the dashboard is never seen: don't feed it
            self.dashboard.show_frame(frame)
        if self.freeze_gc:  # the installed command: see hpctui.core.gc_tuning
            from hpctui.core import gc_tuning

            self.call_after_refresh(gc_tuning.collect)
        for screen in self.screen_stack:  # views pushed over the dashboard follow the data too
            if screen is self.dashboard:
                continue
            if isinstance(screen, FrameView):
                screen.show_frame(frame)
                continue
            from hpctui.ui.screens.mig_wizard import MigWizardScreen

            if isinstance(screen, MigWizardScreen):  # (redraws its steps; a FrameView once it takes the port)
                screen.update_snapshot(frame.snapshot)
        return True

    def _announce(self, frame: Frame) -> None:
        """New problems of ``frame`` (hpctui.core.notify): the bell and a desktop notification through the
        terminal (as Textual's own ``bell`` writes), the webhook (the runtime's), and on the wall a flash."""
        notices = self.runtime.announce(frame)
        if not notices:
            return
        from hpctui.core.notify import terminal_sequences
        from hpctui.model import Severity

        settings = self.runtime.notify_settings
        shown = notices[:3]
        sequence = "".join(terminal_sequences(n, bell=settings.bell and i == 0, desktop=settings.desktop)
                           for i, n in enumerate(shown))
        if sequence and not self.is_headless and self._driver is not None:
            self._driver.write(sequence)
        if self.wall and settings.wall_flash:
            for n in shown:
                self.notify(n.text, severity="error" if n.finding.severity >= Severity.ERROR else "warning",
                            timeout=15, markup=False)
            if len(notices) > len(shown):
                self.notify(f"… and {len(notices) - len(shown)} more new problems", timeout=15, markup=False)

    async def adopt_runtime(self, runtime: Runtime) -> None:
        """Show ``runtime`` (another cluster's) instead of the current one: the old one is stopped
        (its pollers; running actions were refused before), a fresh dashboard replaces the old
        one, and the new runtime is started (or collected once without autostart)."""
        if self._clock is not None:
            self._clock.stop()
            self._clock = None
        old = self.runtime
        await old.stop()
        self.runtime = runtime
        self.read_only = runtime.read_only or self.wall
        dashboard = self.dashboard_class(runtime, wall=self.wall, actions_enabled=not self.read_only)  # custom keys
        await self.pop_screen()  # the old dashboard goes first: the new one takes its id
        await self.push_screen(dashboard)
        self.dashboard = dashboard
        self._drawn_version = -1
        self._drawn_data_version = -1
        self._pending = None  # a message still queued for the old runtime is ignored
        if self.autostart:
            self._start_runtime()
        else:
            await runtime.collect_once()
            self.refresh_from_store()

    # -- global actions ---------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(actions_enabled=not self.read_only, keymap=self.keymap))

    def action_cycle_theme(self) -> None:
        names = self.theme_names
        i = names.index(self.theme) + 1 if self.theme in names else 0
        self.theme = names[i % len(names)]
        self.notify(f"theme: {self.theme}", timeout=1.5)

    def action_refresh_now(self) -> None:
        self._refresh_asked = True
        self.notify("refresh requested…", timeout=4)
        if self.autostart:
            self.runtime.refresh_now()
        else:
            self.run_worker(self._collect_now(), exclusive=True, group="refresh")

    async def _collect_now(self) -> None:
        await self.runtime.collect_once()
        self.refresh_from_store()

    # -- triage: views and the problem walk, from any screen but a dialog ---------
    def back_to_dashboard(self) -> bool:
        """Close a job detail or help screen on top of the dashboard; False under a dialog."""
        from hpctui.ui.screens.action_dialog import ActionDialog

        while self.screen is not self.dashboard:
            if isinstance(self.screen, ActionDialog) or len(self.screen_stack) <= 1:
                return False
            self.pop_screen()
        return True

    def action_show_view(self, name: str) -> None:
        if self.back_to_dashboard():
            self.dashboard.show_view(name)

    def action_next_problem(self, step: int) -> None:
        if self.back_to_dashboard():
            self.dashboard.next_problem(step)

    def action_workload_here(self) -> None:
        if self.back_to_dashboard():
            self.dashboard.workload_here()

    def action_go_to(self) -> None:
        from hpctui.ui.screens.goto import GoToScreen

        if not self.back_to_dashboard():
            return
        self.hold_keys()
        self.push_screen(GoToScreen(on_mounted=self.release_keys), self.dashboard.go_to)

    # -- keys typed before their input exists -----------------------------------
    def hold_keys(self) -> None:
        """From now until :meth:`release_keys`, hold every key instead of dispatching it:
        keys typed right after ``g`` belong to the go-to input that is not mounted yet, and
        must not reach the pane below as actions."""
        self._held_keys = []
        self.set_timer(10.0, self._drop_stale_hold)  # never stay deaf if the input never comes

    async def release_keys(self, target: Widget) -> None:
        """Type the held keys into ``target`` (now focused), in order, then stop holding."""
        from hpctui.ui.widgets.vtable import feed_key

        held, self._held_keys = self._held_keys or [], None
        for key in held:
            if target.is_attached:
                await feed_key(target, key)

    def _drop_stale_hold(self) -> None:
        self._held_keys = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            if self._held_keys is not None:
                event.stop()
                self._held_keys.append(event)
                return
            focused = self.focused
            if event.is_forwarded and event.is_printable and event.character and isinstance(focused, Input):
                # A character bubbling up unhandled while an input has focus was queued for
                # another widget before the input took focus (an input keeps its characters):
                # it belongs to the input, never to a binding of the pane it was queued for.
                event.stop()
                focused.insert_text_at_cursor(event.character)
                return
        await super().on_event(event)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.follow_focus(event.widget)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.follow_focus(event.widget)

    def follow_focus(self, widget: Widget) -> None:
        """The focused pane's border (borders.move_focus_frame) on ``widget``'s screen, around the
        pane of that screen's focused widget; a no-op when it is there already."""
        screen = widget.screen if widget.is_attached else None
        if screen is not None:
            self.frame_pane_of(screen, screen.focused)

    def frame_pane_of(self, screen: Screen[object], widget: Widget | None) -> None:
        """Move ``screen``'s focus frame to ``widget``'s pane (the dashboard: just before it
        focuses ``widget``, so the frame is drawn with the focus change)."""
        new = framed_pane(widget)
        old = self._framed.get(screen)
        if old is not new:
            move_focus_frame(old, new)
            self._framed[screen] = new

    def action_export_report(self) -> None:
        """Incident report (md/json/html + an SVG of the screen) for the marked nodes or the cursor node."""
        nodes = self.dashboard.heatmap.targets()
        if not nodes:
            self.notify("no node selected for the report", severity="warning")
            return
        self.run_worker(self._export_report(nodes), group="report", exit_on_error=False)

    async def _export_report(self, nodes: Sequence[str]) -> None:
        """The audit log's tail is read in a thread (it may be big, or on NFS); then the report."""
        from hpctui.actions.audit import AuditRead
        from hpctui.ui.report_export import prepare_report, read_node_records, write_export

        log = self.runtime.executor.audit
        got = await asyncio.to_thread(log.tail) if log is not None else AuditRead()  # intents: one row per id
        records, notes = await read_node_records(self.runtime, nodes)  # slurmdbd + sacct, off the UI thread
        for warning in [*got.warnings, *notes]:
            self.notify(warning, title="Incident report", severity="warning", markup=False)
        try:
            doc, directory = prepare_report(self.runtime, nodes, audit=got.records, node_records=records)
            # rendering the charts takes a while: in a thread, off the UI (the document is made already)
            out = await asyncio.to_thread(write_export, doc, directory, self.export_screenshot())
        except (OSError, ValueError) as exc:
            self.notify(f"report failed: {exc}", severity="error", markup=False)
            return
        self.notify(f"report written to {out}", title="Incident report", timeout=8)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.wall:  # nothing actionable on a wall: every key but quit is off (and shown nowhere)
            return action in WALL_ACTIONS
        return True

    def action_read_only_notice(self, what: str) -> None:
        self.notify(f"{what}: read-only mode, actions are disabled", severity="warning", timeout=2)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Textual's notification, always as plain text (``markup`` is ignored): messages carry
        cluster strings, file paths and exception texts, and parsed markup would turn ``[/x]``
        into a crash and ``[@click=…]`` into a live action (hpctui.ui.literal)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def action_subject_key(self, spec_id: str) -> None:
        """A node/job key no focused pane took: act on the subject, or say why not."""
        act_on_subject(self, spec_id)

    def on_action_requested(self, message: ActionRequested) -> None:
        from hpctui.model.action import SHELL_ACTIONS

        if message.kind in SHELL_ACTIONS and message.targets and (not self.read_only or self.shells_read_only):
            self.open_shell(message.kind, message.targets[0])
            return
        if self.read_only:
            self.action_read_only_notice(message.kind.value)
            return
        from hpctui.ui.screens.action_dialog import ActionDialog

        self.push_screen(ActionDialog(self.runtime, message.kind, message.targets, message.params))

    def on_mig_wizard_requested(self, message: MigWizardRequested) -> None:
        from hpctui.ui.screens.mig_wizard import MigWizardScreen

        self.push_screen(MigWizardScreen(self.runtime, list(message.nodes)))

    def on_pod_detail_requested(self, message: PodDetailRequested) -> None:
        from hpctui.ui.screens.pod_detail import PodDetailScreen

        self.push_screen(PodDetailScreen(self.runtime, message.pod, message.what))

    def on_logs_requested(self, message: LogsRequested) -> None:
        if self.wall:  # nothing opens over a wall display
            return
        from hpctui.ui.screens.log_viewer import LogViewerScreen

        self.push_screen(LogViewerScreen(self.runtime, message.what, job=message.job, pod=message.pod,
                                         nodes=message.nodes))

    def on_job_detail_requested(self, message: JobDetailRequested) -> None:
        from hpctui.ui.screens.job_detail import JobDetailScreen

        self.push_screen(JobDetailScreen(self.runtime, message.job))

    # -- shells (hpctui.actions.shells, hpctui.ui.shell) ------------------------------------------
    @property
    def shells_read_only(self) -> bool:
        """Shells open in read-only mode too (``[shells] allow_read_only``; never on the wall)."""
        return self.runtime.shells.allow_read_only and not self.wall

    def on_shell_requested(self, message: ShellRequested) -> None:
        self.open_shell(message.kind, message.target, containers=message.containers)

    def open_shell(self, kind: ActionKind, target: str, *, container: str | None = None,
                   containers: Sequence[str] = ()) -> None:
        """Open a shell on ``target`` (a node, ``namespace/pod``, a job id): asks for the container
        of a pod with several first, then runs the session through the executor (refused and
        audited there) with the app suspended meanwhile."""
        if self.read_only and not self.shells_read_only:
            self.action_read_only_notice(f"shell on {target}")
            return
        if kind is ActionKind.SHELL_POD and container is None and not containers:  # a palette or message: look it up
            namespace, _, name = target.partition("/")
            pod = next((p for p in self.runtime.current_snapshot().pods
                        if p.namespace == namespace and p.name == name), None)
            containers = pod.containers if pod is not None else ()
        if kind is ActionKind.SHELL_POD and container is None and len(containers) > 1:
            from hpctui.ui.shell import ContainerPicker

            def chosen(name: str | None) -> None:
                if name:
                    self.open_shell(kind, target, container=name)

            self.push_screen(ContainerPicker(target, containers), chosen)
            return
        params = {"container": container} if container else {}
        self.run_worker(self._run_shell(kind, target, params), group="shell", exclusive=True)

    async def _run_shell(self, kind: ActionKind, target: str, params: dict[str, str]) -> None:
        from hpctui.actions.shells import open_shell
        from hpctui.ui.shell import AppTerminal

        self.shell_terminal = AppTerminal(self, wall=self.wall)
        result = await open_shell(self.runtime.port, self.shell_terminal, kind, target, params)
        where = result.plan.params.get("where") or target
        if result.refused is not None:
            self.notify(f"shell on {where}: {result.refused}", severity="warning", timeout=6)
        else:
            took = result.finished - result.started
            message = result.results[0].message if result.results else "no result"
            self.notify(f"shell on {where} ended: {message} after {took:.0f} s",
                        severity="information" if result.ok else "warning", timeout=4)
        for problem in result.audit_errors:
            self.notify(problem, title="Audit", severity="error")
        self.runtime.refresh_now()

    # -- custom actions ([[custom_actions]]: hpctui.actions.custom) ----------------------------
    def _custom_keys_dashboard(self) -> type[DashboardScreen]:
        """The dashboard class binding each custom action's key on its scope's pane
        (hpctui.ui.custom_keys); the plain one on a wall, or with ``custom_key_error`` set when a
        key is taken (then no custom key is bound)."""
        from hpctui.ui.custom_keys import dashboard_class
        from hpctui.ui.registry import CustomKeyError

        if self.wall or not self.runtime.custom_actions:
            return DashboardScreen
        try:
            return dashboard_class(self.runtime.custom_actions)
        except CustomKeyError as exc:
            self.custom_key_error = str(exc)
            return DashboardScreen

    def custom_targets(self, scope: str) -> tuple[str, ...]:
        """The selection a custom action of ``scope`` acts on: marked (or cursor) nodes, jobs, pods."""
        if scope == "jobs":
            return self.dashboard.queue_pane.table.targets()
        if scope == "pods":
            return self.dashboard.pods_pane.table.targets()
        return self.dashboard.heatmap.targets()

    def run_custom_action(self, name: str, targets: Sequence[str] | None = None) -> bool:
        """Preview custom action ``name`` on ``targets`` (default: its pane's selection), then run
        it into the result view. The entry point of its key, the palette and ``:custom NAME``."""
        from hpctui.actions.custom import find_action, new_run, read_only_refusal
        from hpctui.ui.screens.custom_result import CustomPreviewScreen, CustomResultScreen

        action = find_action(self.runtime.custom_actions, name)
        if action is None:
            known = ", ".join(a.name for a in self.runtime.custom_actions) or "none configured"
            self.notify(f"no custom action {name!r} (custom actions: {known})", severity="warning")
            return False
        if self.read_only and read_only_refusal(action):
            self.notify(f"{name}: {read_only_refusal(action)}", severity="warning", timeout=3)
            return False
        chosen = tuple(targets) if targets is not None else self.custom_targets(action.scope)
        if not chosen:
            self.notify(f"{name}: nothing selected ({action.scope})", severity="warning")
            return False
        run = new_run(self.runtime.port, name, chosen)

        def confirmed(go: bool | None) -> None:
            if go:
                self.push_screen(CustomResultScreen(self.runtime, run))

        self.push_screen(CustomPreviewScreen(run), confirmed)
        return True

    def action_run_custom_action(self, name: str) -> None:
        self.run_custom_action(name)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """hpctui's own commands only (ctrl+p): every `:` command, the keys of the focused pane,
        the themes `t` cycles through; not Textual's generic list (its theme picker offers
        themes that are not ours)."""
        for command in self._system_commands(screen):  # Textual parses both texts as markup: escape them
            yield command._replace(title=escape_markup(command.title), help=escape_markup(command.help))

    def _system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        from hpctui.ui.nav import palette_commands

        yield from palette_commands(self, screen)
        for action in self.runtime.custom_actions:  # [[custom_actions]]: on the selection of their pane
            yield SystemCommand(f"Custom: {action.name}", f"{action.title} ({action.scope}, run {action.run})",
                                partial(self.run_custom_action, action.name))

    # -- navigation: `:` commands, the breadcrumb, quitting, other clusters (hpctui.ui.nav) --
    def action_command_mode(self) -> None:
        from hpctui.ui.screens.command import CommandScreen

        if isinstance(self.screen, CommandScreen) or not self.back_to_dashboard():
            return
        self.hold_keys()
        names = self.clusters.names if self.clusters is not None else [self.runtime.cluster]
        self.push_screen(CommandScreen(names, on_mounted=self.release_keys), self._command_entered)

    def _command_entered(self, text: str | None) -> None:
        if text:
            self.call_later(self.run_command, text)

    async def run_command(self, text: str) -> None:
        from hpctui.ui.nav import run_command

        await run_command(self, text)

    def update_breadcrumb(self) -> None:
        from hpctui.ui.nav import update_breadcrumb

        update_breadcrumb(self)

    async def action_quit(self) -> None:
        """``q``: at once, unless an action is still running: then ask first."""
        running = self.runtime.actions_running
        if not running:
            self.exit()
            return
        from hpctui.ui.screens.confirm_quit import ConfirmQuitScreen

        if not isinstance(self.screen, ConfirmQuitScreen):
            self.push_screen(ConfirmQuitScreen(running), lambda yes: self.exit() if yes else None)

    async def switch_cluster(self, name: str) -> bool:
        from hpctui.ui.nav import switch_cluster

        return await switch_cluster(self, name)
