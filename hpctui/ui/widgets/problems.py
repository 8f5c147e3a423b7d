"""The Problems view: every finding of warning and worse, worst node first, grouped by node.

Findings are read only from the frame's index (:attr:`hpctui.core.frame.Frame.findings`: computed
once per store change by the runtime). Each row names the node, the GPU index (for GPU findings),
what is wrong, since when (the earliest stored event on the same object, else when this view first saw it) and
the source that reported it. ``enter`` selects the row's node everywhere and opens the explain
view (the evidence, history, related events and next step: hpctui.ui.screens.explain);
``1``–``9`` jump to (and select) the n-th problem node; the dashboard's ``n``/``N`` walk the
same order, which holds still (:meth:`ProblemMemory.order`, :class:`ProblemWalk`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from textual.binding import Binding
from textual.worker import Worker

from hpctui.core.frame import Frame
from hpctui.core.ports import UiPort
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import FindingsIndex
from hpctui.findings.scheduler import CONTROLLER_KEY
from hpctui.findings.storage import CEPH_PREFIX, STORAGE_PREFIXES
from hpctui.model import ClusterSnapshot, Part, Severity
from hpctui.ui.messages import NodeRequested
from hpctui.ui.widgets.panes import TablePane
from hpctui.ui.widgets.tables import SEVERITY_VAR
from hpctui.ui.widgets.vtable import Column, VirtualTable
from hpctui.ui.workers import LatestOnly

PROBLEM_MIN = Severity.WARNING
SWITCH_PREFIX = "switch/"  # the object of a suspect-leaf-switch finding (hpctui.findings.fabric)
THREAD_ABOVE = 2048  # nodes: bigger clusters group their findings in a worker thread
SEVERITY_WORD = {Severity.WARNING: "warn", Severity.ERROR: "error", Severity.CRITICAL: "CRIT"}


def object_node(obj: str) -> str:
    """``gpu/gpu01/3`` → ``gpu01``; ``mount/gpu01:/lustre`` → ``gpu01``; ``node/gpu01`` → ``gpu01``;
    ``slurmctld/…`` (a controller finding) → ``slurmctld``; ``quota/alice//lustre`` → ``user/alice``;
    ``ceph/prod/OSD_DOWN`` → ``ceph/prod`` (a storage group: hpctui.findings.storage)."""
    if obj.startswith(CONTROLLER_KEY + "/"):
        return CONTROLLER_KEY
    if obj.startswith(STORAGE_PREFIXES):
        return "/".join(obj.split("/", 2)[:2])
    if obj.startswith(SWITCH_PREFIX):  # a suspect leaf switch: its own group, named by its object
        return obj
    parts = obj.split("/", 2)
    if parts[0] == "quota" and len(parts) > 1:  # quota/<user>/<fs>: the user's group (hpctui.findings.pfs)
        return "user/" + parts[1]
    if parts[0] == "storage":  # storage/<class>: the storage class's group (hpctui.findings.volumes)
        return obj
    return parts[1].split(":", 1)[0] if len(parts) > 1 else obj


def object_gpu(obj: str) -> int | None:
    """The GPU index of a ``gpu/<node>/<index>`` object, else None."""
    parts = obj.split("/")
    if len(parts) == 3 and parts[0] == "gpu" and parts[2].isdigit():
        return int(parts[2])
    return None


def object_key(obj: str) -> str:
    """One spelling for findings and events: ``ib/n/mlx5_0:1`` and ``ib/n/mlx5_0/1`` match."""
    return obj.replace(":", "/").replace("//", "/")


def finding_part(finding: Finding) -> Part:
    """Which snapshot part a finding was read from (names its source)."""
    kind = finding.object.split("/", 1)[0]
    if kind == "gpu":
        return Part.GPUS
    if kind == "ib":
        return Part.IB
    if kind in ("mount", "fs"):
        return Part.MOUNTS
    if kind == "quota":
        return Part.QUOTAS
    if kind == "storage":
        return Part.VOLUMES
    if kind == "switch":
        return Part.FABRIC
    if finding.object.startswith(STORAGE_PREFIXES):
        return Part.CEPH if finding.object.startswith(CEPH_PREFIX) else Part.OBJECT_STORES
    return Part.SLURM_NODES if finding.code.startswith("slurm") else Part.K8S_NODES


def _source_of(finding: Finding, sources: dict[str, str]) -> str:
    """The sources of the part a finding was read from; a storage source that never read anything (its stale
    marker) is named by its group (``ceph/<source>/…``)."""
    named = sources.get(finding_part(finding).value)
    if named:
        return named
    return finding.object.split("/")[1] if finding.object.startswith(STORAGE_PREFIXES) else "?"


def problem_groups(index: FindingsIndex) -> list[tuple[str, tuple[Finding, ...]]]:
    """(node, its findings of warning and worse) for every node that has some: worst node
    first, then the one with more such findings, then cluster order."""
    groups = []
    for node, findings in index.by_node.items():
        bad = tuple(f for f in findings if f.severity >= PROBLEM_MIN)
        if bad:
            groups.append((node, bad))
    for f in index.leading:  # a suspect leaf switch (hpctui.findings.fabric): a group of its own, first
        if f.severity >= PROBLEM_MIN:
            groups.append((f.object, (f,)))
    groups.sort(key=lambda g: (-max(f.severity for f in g[1]), not g[0].startswith(SWITCH_PREFIX), -len(g[1])))
    cluster = tuple(f for f in index.cluster if f.severity >= PROBLEM_MIN)
    if cluster:  # slurmctld's findings (no node): one group of their own, last
        groups.append((CONTROLLER_KEY, cluster))
    return groups


@dataclass(frozen=True, slots=True)
class ProblemRow:
    number: int  # the node's place in the problem order (1-based)
    first: bool  # the first row of its node's group
    node: str
    gpu: int | None
    finding: Finding
    since: float
    source: str

    @property
    def severity(self) -> Severity:
        return self.finding.severity


class ProblemMemory:
    """What the view remembers across snapshots, per finding (object, code):

    - since when it is bad: its earliest stored event (warning or worse) on the same
      object, else the first snapshot this view saw it in;
    - flap memory: a finding that cleared stays listed as *recovered* (with how often it
      went bad and when it last was) for ``window_s``; one that comes back counts a flap.
    Forgotten once it has been clear for the whole window.

    It also holds the problem order still (:meth:`order`): a node ranks by the worst severity it
    had within the window (its *peak*: a port that flaps between error and up stays an error
    node), then by when it first went bad (oldest first), then by name. New problems join the
    end of their severity band; nothing already listed moves while a port flaps."""

    def __init__(self, window_s: float = 600.0) -> None:
        self.window_s = window_s
        self.first_seen: dict[tuple[str, str], float] = {}
        self.bad_count: dict[tuple[str, str], int] = {}
        self.last_bad: dict[tuple[str, str], float] = {}
        self.current: dict[tuple[str, str], Finding] = {}
        self.recovered: dict[tuple[str, str], Finding] = {}
        self.peak: dict[str, tuple[Severity, float]] = {}  # node -> (worst severity in the window, when)

    def update(self, snapshot: ClusterSnapshot, findings: Sequence[Finding]) -> None:
        now = snapshot.time
        earliest: dict[str, float] = {}
        for event in snapshot.events:
            if event.severity >= PROBLEM_MIN:
                obj = object_key(event.object)
                if event.time < earliest.get(obj, float("inf")):
                    earliest[obj] = event.time
        current = {(f.object, f.code): f for f in findings}
        for key, finding in self.current.items():
            if key not in current:
                self.recovered[key] = finding
        for key, finding in current.items():
            if key in self.recovered:
                del self.recovered[key]
                self.bad_count[key] = self.bad_count.get(key, 1) + 1
            elif key not in self.current:
                self.bad_count[key] = 1
            self.last_bad[key] = now
            first = self.first_seen.get(key, now)
            self.first_seen[key] = min(first, earliest.get(object_key(finding.object), first))
        self.current = current
        for key in [k for k in self.recovered if now - self.last_bad.get(k, now) > self.window_s]:
            del self.recovered[key]
        keep = current.keys() | self.recovered.keys()
        for table in (self.first_seen, self.bad_count, self.last_bad):
            for key in [k for k in table if k not in keep]:
                del table[key]
        self._update_peaks(now)

    def _update_peaks(self, now: float) -> None:
        """Each problem node's worst severity within the window (see the class docstring)."""
        worst: dict[str, Severity] = {}
        for f in self.current.values():
            node = object_node(f.object)
            if f.severity > worst.get(node, Severity.OK):
                worst[node] = f.severity
        for f in self.recovered.values():  # listed as recovered (a warning row) until forgotten
            worst.setdefault(object_node(f.object), Severity.WARNING)
        peak = self.peak
        for node in [n for n in peak if n not in worst]:
            del peak[node]
        for node, severity in worst.items():
            old = peak.get(node)
            if old is None or severity >= old[0] or now - old[1] > self.window_s:
                peak[node] = (severity, now)

    def order(self, nodes: Iterable[str]) -> list[str]:
        """``nodes`` in the stable problem order: peak severity, first seen, name."""
        first: dict[str, float] = {}
        for key, t in self.first_seen.items():
            node = object_node(key[0])
            if t < first.get(node, float("inf")):
                first[node] = t
        peak = self.peak
        return sorted(nodes, key=lambda n: (-peak.get(n, (Severity.WARNING, 0.0))[0],
                                            first.get(n, float("inf")), n))

    def peak_severity(self, node: str) -> Severity:
        """The severity ``node`` ranks by (its worst within the window)."""
        return self.peak.get(node, (Severity.OK, 0.0))[0]

    def row_findings(self, node_findings: Sequence[Finding]) -> list[tuple[Finding, float, str]]:
        """(finding, since, note) for one node: its current findings, then its recovered ones."""
        out = []
        for f in node_findings:
            key = (f.object, f.code)
            count = self.bad_count.get(key, 1)
            out.append((f, self.first_seen.get(key, self.last_bad.get(key, 0.0)),
                        f" · bad {count}× in {ago(self.window_s)}" if count > 1 else ""))
        return out


def recovered_finding(finding: Finding, count: int, last_bad: float, now: float) -> Finding:
    """A cleared finding as a warning row: it may come back (a flapping link, a mount)."""
    message = f"recovered, was bad {count}× (last {ago(now - last_bad)} ago): {finding.message}"
    return Finding(severity=Severity.WARNING, object=finding.object, code=f"{finding.code}_recovered", message=message)


def ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600}h"


def _columns(now: list[float]) -> list[Column[ProblemRow]]:
    """``now`` is a one-element box the pane updates, so ages follow the clock."""
    return [
        Column("number", "#", 2, lambda r: str(r.number) if r.first and 0 < r.number < 10 else "", lambda r: r.number,
               align="right"),
        Column("severity", "SEV", 5, lambda r: SEVERITY_WORD.get(r.severity, ""), lambda r: -r.severity,
               style=lambda r: SEVERITY_VAR[r.severity]),
        Column("node", "NODE", 10, lambda r: r.node if r.first else "", lambda r: r.number),
        Column("gpu", "GPU", 3, lambda r: "" if r.gpu is None else str(r.gpu), lambda r: (r.gpu is None, r.gpu or 0),
               align="right"),
        Column("since", "SINCE", 6, lambda r: ago(now[0] - r.since), lambda r: r.since, align="right"),
        Column("what", "WHAT", 60, lambda r: r.finding.message, lambda r: r.finding.message),
        Column("source", "SOURCE", 10, lambda r: r.source, lambda r: r.source),
    ]


def _search(row: ProblemRow) -> str:
    return f"{row.node} gpu{'' if row.gpu is None else row.gpu} {row.finding.code} {row.finding.message} {row.source}"


class ProblemsTable(VirtualTable[ProblemRow]):
    """Rows of findings; ``enter`` selects the row's node and explains the row, ``1``–``9`` select
    the n-th problem node."""

    BINDINGS = [
        Binding("enter", "select_node", "Explain"),
        *[Binding(str(d), f"jump_group({d})", show=False) for d in range(1, 10)],
    ]

    def __init__(self, *, id: str | None = None) -> None:
        self.now = [0.0]
        self.explain: Callable[[ProblemRow], None] | None = None  # set by the pane: opens the explain view
        super().__init__(_columns(self.now), row_key=lambda r: f"{r.finding.object}#{r.finding.code}",
                         search_text=_search, row_style=lambda r: SEVERITY_VAR[r.severity],
                         row_nodes=lambda r: (r.node,), id=id)

    def action_select_node(self) -> None:
        row = self.cursor_row
        if row is not None:
            self.post_message(NodeRequested(row.node))
            if self.explain is not None:
                self.explain(row)

    def point_at(self, node: str) -> None:
        """Put the cursor on ``node``'s first row (n/N keep the list in step)."""
        for i, row in enumerate(self.view):
            if row.first and row.node == node:
                self._move_cursor(i)
                return

    def redraw(self) -> None:
        self._lines.clear()
        self.refresh()

    def action_jump_group(self, number: int) -> None:
        for i, row in enumerate(self.view):
            if row.first and row.number == number:
                self._move_cursor(i)
                self.post_message(NodeRequested(row.node))
                return


class ProblemsPane(TablePane):
    """The live problem list: rebuilt from the shared findings on every snapshot."""

    def __init__(self, thresholds: Thresholds, *, port: UiPort | None = None, id: str | None = None) -> None:
        self.problems = ProblemsTable(id="problems")
        super().__init__("Problems", self.problems, id=id)
        self.thresholds = thresholds
        self.port = port  # the explain view's history (None: a pane on its own, no history)
        self.memory = ProblemMemory(thresholds.flap_window_s)
        self.nodes: list[str] = []  # problem nodes in the stable problem order: the order n/N walk
        self.walk = ProblemWalk()
        self.snapshot: ClusterSnapshot | None = None  # the one the rows were built from
        self.findings: FindingsIndex | None = None  # and its findings
        self._groups: LatestOnly[tuple[Frame, list[tuple[str, tuple[Finding, ...]]]]] = LatestOnly(
            self, "problems", lambda got: self._apply(*got))
        self.problems.explain = self.explain_row

    def explain_row(self, row: ProblemRow) -> None:
        """Open the explain view of ``row`` (its evidence in the snapshot the rows came from)."""
        from hpctui.ui.screens.explain import ExplainScreen, explain

        snapshot, index = self.snapshot, self.findings
        if snapshot is None or index is None:
            return
        memory = self.memory
        key = (row.finding.object, row.finding.code.removesuffix("_recovered"))
        series = None
        if self.port is not None:
            self.port.watch_series(row.node)  # the charts' per-GPU history: from now on for this node
            series = self.port.series
        finding = memory.current.get(key) or memory.recovered.get(key) or row.finding
        explained = explain(snapshot, finding, self.thresholds, since=row.since, bad_count=memory.bad_count.get(key, 1),
                            last_bad=memory.last_bad.get(key), node_findings=index.node(row.node),
                            events=snapshot.events, series=series, number=row.number, window_s=memory.window_s)
        self.app.push_screen(ExplainScreen(explained, row.severity))

    def show(self, frame: Frame) -> None:
        """Rebuild the rows from ``frame``'s findings (grouped in a thread on big clusters)."""
        if len(frame.snapshot.nodes) < THREAD_ABOVE:
            self._groups.cancel()
            self._apply(frame, problem_groups(frame.findings))
            return
        self._groups.run(partial(_grouped, frame), "problem list")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self._groups.take(event):
            event.stop()

    def _apply(self, frame: Frame, groups: list[tuple[str, tuple[Finding, ...]]]) -> None:
        memory = self.memory
        snapshot = self.snapshot = frame.snapshot
        self.findings = frame.findings
        memory.update(snapshot, [f for _, fs in groups for f in fs])
        by_node: dict[str, list[tuple[Finding, float, str]]] = {node: memory.row_findings(fs) for node, fs in groups}
        for key, old in memory.recovered.items():  # flap memory: cleared, but not forgotten yet
            last = memory.last_bad.get(key, snapshot.time)
            row = (recovered_finding(old, memory.bad_count.get(key, 1), last, snapshot.time), last, "")
            by_node.setdefault(object_node(old.object), []).append(row)
        order = memory.order(by_node)
        # suspect switches lead; groups that are not a node (a file system, a user over quota, a storage class)
        # follow the nodes, and slurmctld's findings come last; none of them is numbered or a stop of the n/N walk
        switches = [n for n in order if n.startswith(SWITCH_PREFIX)]
        in_nodes, in_gpus = snapshot.nodes, snapshot.gpus
        nodes = [n for n in order if (n in in_nodes or n in in_gpus) and not n.startswith(SWITCH_PREFIX)]
        placed = set(switches) | set(nodes)
        others = [n for n in order if n not in placed and n != CONTROLLER_KEY]
        order = switches + nodes + others + [n for n in order if n == CONTROLLER_KEY]
        numbers = {n: i for i, n in enumerate(nodes, 1)}  # digits pick nodes
        sources = {part: ", ".join(names) for part, names in snapshot.part_sources.items()}
        rows: list[ProblemRow] = []
        for node in order:
            number = numbers.get(node, 0)
            for i, (f, since, note) in enumerate(by_node[node]):
                if note:
                    f = Finding(severity=f.severity, object=f.object, code=f.code, message=f.message + note)
                rows.append(ProblemRow(number=number, first=i == 0, node=node, gpu=object_gpu(f.object), finding=f,
                                       since=since, source=_source_of(f, sources)))
        self.nodes = nodes
        self.problems.now[0] = snapshot.time
        self.problems.redraw()  # ages moved even where the rows did not
        self.set_rows(rows)

    def update_title(self, extra: str = "") -> None:
        n = len(self.nodes)
        super().update_title(extra or (f"{n} node{'s' if n != 1 else ''} · enter: explain · 1-9 · n/N" if n else
                                       "nothing of warning or worse"))


def _grouped(frame: Frame) -> tuple[Frame, list[tuple[str, tuple[Finding, ...]]]]:
    return frame, problem_groups(frame.findings)


class ProblemWalk:
    """``n``/``N`` over the problem nodes: each one exactly once per round, in the problem order.

    The round remembers which nodes it has shown; the next key goes to the next node in the order
    (from the one selected now) that this round has not shown yet, so a node that joins or moves
    mid-round is still visited and none twice. When every node has been shown, a new round starts.
    Turning back (``N`` after ``n``) starts a new round in the other direction."""

    def __init__(self) -> None:
        self.shown: set[str] = set()
        self.step = 0

    def next(self, nodes: Sequence[str], current: str | None, step: int) -> str | None:
        if not nodes:
            return None
        if step != self.step:
            self.step, self.shown = step, set()
        members = set(nodes)
        self.shown &= members  # nodes that cleared leave the round
        if current in members:
            self.shown.add(current)  # selected by other means (p 5, a click): shown this round
        if self.shown >= members:  # every node shown: a new round, from the selected node
            self.shown = {current} if current in members and len(nodes) > 1 else set()
        if current in nodes:
            start = nodes.index(current)
            candidates = [nodes[(start + step * k) % len(nodes)] for k in range(1, len(nodes) + 1)]
        else:
            candidates = list(nodes) if step > 0 else list(reversed(nodes))
        node = next(n for n in candidates if n not in self.shown)
        self.shown.add(node)
        return node


def next_problem_node(nodes: Sequence[str], current: str | None, step: int) -> str | None:
    """The problem node after (step 1) or before (step -1) ``current``, wrapping around; the
    first (or last) when ``current`` is not a problem node."""
    if not nodes:
        return None
    if current in nodes:
        return nodes[(nodes.index(current) + step) % len(nodes)]
    return nodes[0] if step > 0 else nodes[-1]


__all__ = ["ProblemRow", "ProblemWalk", "ProblemsPane", "ProblemsTable", "next_problem_node", "problem_groups"]
