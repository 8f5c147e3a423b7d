"""Pilot tests of the log viewer (issue 26): reached with `L` from a job, a pod and the heatmap; follow,
search, stdout/stderr, container and previous choice, time window; errors said plainly; reads through
``port.logs`` only (a fake here: the live tests read real files, journals and pod logs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.widgets import Input, Log
from uikit import load

from hpctui.core.logs import JournalRead
from hpctui.core.runtime import Runtime
from hpctui.model.logs import JobOutputPaths, LogChunk, LogLine
from hpctui.model.output import NodeOutput
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.log_viewer import LogViewerScreen
from hpctui.ui.widgets.node_heatmap import NodeHeatmap
from hpctui.ui.widgets.tables import PodTable, QueueTable


class FakeLogs:
    """What LogService answers, scripted; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.file = ["epoch 1", "epoch 2 \x1b[31m[bold]red[/bold]"]
        self.missing = False

    async def job_output_paths(self, job_id: str) -> JobOutputPaths | None:
        self.calls.append(("paths", job_id))
        return JobOutputPaths(job=job_id, stdout=f"/home/u/slurm-{job_id}.out", stderr=f"/home/u/err-{job_id}",
                              host="node0001")

    def log_host(self, batch_host: str | None) -> str | None:
        return batch_host

    async def read_file(self, host: str, path: str, offset: int | None = None) -> LogChunk:
        self.calls.append(("read", host, path, offset))
        if self.missing:
            return LogChunk(where=f"{host}:{path}", error="no such file")
        if path.startswith("/home/u/err"):
            return LogChunk(where=f"{host}:{path}", lines=("oops",), offset=5)
        start = offset or 0
        return LogChunk(where=f"{host}:{path}", lines=tuple(self.file[start:]), offset=len(self.file))

    async def pod_containers(self, namespace: str, name: str) -> tuple[str, ...]:
        return ("train", "sidecar")

    async def pod_log_lines(self, namespace: str, name: str, container: str | None = None, previous: bool = False,
                            since: str | None = None) -> tuple[list[str], str | None]:
        self.calls.append(("pod", container, previous, since))
        if since:
            return [], since
        return [f"{container or 'first'} {'previous' if previous else 'current'} line"], "2026-12-02T03:00:00Z"

    async def journal(self, hosts: tuple[str, ...], since: float, until: float, *, kernel: bool = True,
                      units: tuple[str, ...] = (), grep: str | None = None) -> JournalRead:
        self.calls.append(("journal", tuple(hosts), since, until, kernel, tuple(units)))
        line = LogLine(time=since + 1, host=hosts[0], ident="kernel", message="NVRM: Xid 79")
        return JournalRead(where=",".join(hosts), command="journalctl …", folded=f"---- {hosts[0]} ----\nNVRM: Xid 79",
                           lines=(line,), outputs=(NodeOutput(label=hosts[0], output="x", rc=0),), added_events=1)


def _app(make_runtime: Callable[..., Runtime]) -> tuple[HpcApp, FakeLogs]:
    rt = make_runtime()
    fake = FakeLogs()
    rt.logs = fake  # type: ignore[assignment]
    return HpcApp(rt, autostart=False), fake


async def _viewer(app: HpcApp, pilot: Any) -> LogViewerScreen:
    for _ in range(50):
        if isinstance(app.screen, LogViewerScreen) and app.screen.loads:
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError("the log viewer did not open and read")


async def test_job_output_follow_search_and_stderr(make_runtime: Callable[..., Runtime]) -> None:
    app, fake = _app(make_runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one("#queue", QueueTable)
        queue.focus()
        job = queue.cursor_row
        assert job is not None
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        assert list(viewer.lines) == ["epoch 1", "epoch 2 \x1b[31m[bold]red[/bold]"]  # drawn as plain text
        assert f"node0001:/home/u/slurm-{job.display_id}.out" in viewer.status
        assert isinstance(app.focused, Log)  # the viewer's keys, not the hidden search box

        await pilot.press("f")
        assert viewer.following
        fake.file.append("epoch 3")
        for _ in range(60):
            if "epoch 3" in viewer.lines:
                break
            await pilot.pause(0.1)
        assert list(viewer.lines)[-1] == "epoch 3" and ("read", "node0001", f"/home/u/slurm-{job.display_id}.out", 2) \
            in fake.calls  # continued from the offset
        await pilot.press("f")
        assert not viewer.following

        await pilot.press("slash")
        box = viewer.query_one("#log-search", Input)
        assert app.focused is box
        await pilot.press(*"epoch 1", "enter")
        assert viewer.shown() == ["epoch 1"] and "1 match(es)" in viewer.status

        await pilot.press("o")
        for _ in range(30):
            if viewer.stream == "stderr" and viewer.loads >= 2 and "oops" in viewer.lines:
                break
            await pilot.pause(0.05)
        assert list(viewer.lines) == ["oops"]
        await pilot.press("escape")
        assert not isinstance(app.screen, LogViewerScreen)


async def test_no_such_file_is_said_plainly(make_runtime: Callable[..., Runtime]) -> None:
    app, fake = _app(make_runtime)
    fake.missing = True
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.screen.query_one("#queue", QueueTable).focus()
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        assert "no such file" in viewer.status and not viewer.lines


async def test_pod_logs_container_and_previous(make_runtime: Callable[..., Runtime]) -> None:
    app, fake = _app(make_runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        pods = app.screen.query_one("#pods", PodTable)
        pods.focus()
        assert pods.cursor_row is not None
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        assert list(viewer.lines) == ["first current line"]
        await pilot.press("c")  # the next container of the pod
        await pilot.pause(0.2)
        assert viewer.container == "sidecar" and list(viewer.lines) == ["sidecar current line"]
        await pilot.press("p")  # the previous instance (CrashLoopBackOff)
        await pilot.pause(0.2)
        assert viewer.previous and list(viewer.lines) == ["sidecar previous line"]
        assert "(previous)" in viewer._title()
        assert fake.calls[-1] == ("pod", "sidecar", True, None)


async def test_node_journal_of_marked_nodes_window_and_units(make_runtime: Callable[..., Runtime]) -> None:
    app, fake = _app(make_runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.focus()
        first, second = heatmap.names[:2]
        await pilot.press("space", "right", "space")
        assert heatmap.targets() == (first, second)
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        journal = [c for c in fake.calls if c[0] == "journal"]
        assert journal[-1][1] == (first, second) and journal[-1][4] is True  # the kernel log of both
        assert viewer.window_until - viewer.window_since <= 3600
        assert list(viewer.lines)[-1] == "NVRM: Xid 79"
        assert viewer.check_action("toggle_previous", ()) is False  # pod keys hidden on a node log
        await pilot.press("w")
        await pilot.pause(0.2)
        assert "last" in viewer.window_note
        await pilot.press("u")
        await pilot.press(*"nvidia-fabricmanager", "enter")
        await pilot.pause(0.2)
        assert fake.calls[-1][4:] == (False, ("nvidia-fabricmanager",))  # units only: no "kernel" given


async def test_crashloop_pod_points_at_previous(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.model import Pod

    app, _fake = _app(make_runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        pod = Pod(namespace="hpc", name="crashy", node=None, reason="CrashLoopBackOff")
        app.push_screen(LogViewerScreen(app.runtime, "pod", pod=pod))
        viewer = await _viewer(app, pilot)
        assert "CrashLoopBackOff: p shows the previous container's log" in viewer.status
        await pilot.press("p")
        await pilot.pause(0.2)
        assert "CrashLoopBackOff" not in viewer.status and list(viewer.lines) == ["first previous line"]


async def test_no_log_viewer_over_a_wall(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.ui.messages import LogsRequested

    rt = make_runtime()
    rt.logs = FakeLogs()  # type: ignore[assignment]
    app = HpcApp(rt, autostart=False, wall=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.post_message(LogsRequested("node", nodes=("gpu001",)))
        await pilot.pause(0.2)
        assert not isinstance(app.screen, LogViewerScreen)


async def test_follow_a_pod_and_a_node_journal(make_runtime: Callable[..., Runtime], clock: Any) -> None:
    """Follow asks a pod for the lines after the last one's time, a node for the window's new end."""
    app, fake = _app(make_runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        pods = app.screen.query_one("#pods", PodTable)
        pods.focus()
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        await pilot.press("f")
        for _ in range(60):
            if any(c[0] == "pod" and c[3] == "2026-12-02T03:00:00Z" for c in fake.calls):
                break
            await pilot.pause(0.1)
        assert ("pod", None, False, "2026-12-02T03:00:00Z") in fake.calls
        assert list(viewer.lines) == ["first current line"]  # nothing new: nothing added
        await pilot.press("escape")

        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.focus()
        await pilot.press("L")
        viewer = await _viewer(app, pilot)
        first_until = viewer.window_until
        clock.t += 30  # half a minute later
        await pilot.press("f")
        for _ in range(60):
            if any(c[0] == "journal" and c[2] == first_until for c in fake.calls):
                break
            await pilot.pause(0.1)
        follow = [c for c in fake.calls if c[0] == "journal" and c[2] == first_until]
        assert follow and follow[0][3] == clock.t  # from the old end to now


async def test_job_detail_marks_the_quota_of_the_jobs_working_directory(make_runtime: Callable[..., Runtime]) -> None:
    """The job's record (through port.logs, as the log viewer reads it) gives its working directory: the
    quota of the file system holding it comes first, marked (issue 27 §2)."""
    from textual.widgets import Static

    from hpctui.ui.screens.job_detail import JobDetailScreen

    app, _ = _app(make_runtime)

    class WithWorkDir(FakeLogs):
        can_resolve_job_output = True

        async def job_output_paths(self, job_id: str) -> JobOutputPaths | None:
            self.calls.append(("paths", job_id))
            return JobOutputPaths(job=job_id, stdout=None, stderr=None, host=None,
                                  work_dir="/lustre/scratch/" + (job.user or "") + "/run")

    app.runtime.logs = logs = WithWorkDir()  # type: ignore[assignment]
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = app.runtime.store.snapshot()
        assert snap.quotas, "the demo sweeps quotas"
        owners = {q.user for q in snap.quotas}
        job = next(j for j in snap.jobs if j.user in owners and j.state == "RUNNING")
        app.push_screen(JobDetailScreen(app.runtime, job))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = str(app.screen.query_one("#job-quotas", Static).render())
        assert ("paths", job.display_id) in logs.calls
        assert f"working directory /lustre/scratch/{job.user}/run" in text and "← the working directory's" in text
