"""Why a problem is a problem: ``enter`` on a row of the problem list.

One finding's evidence in sections: what and where (the component: GPU index, UUID and PCI
address, IB port, mount, service, pod, switch), the values it was read from next to the
thresholds they broke, its history in this session (since when, how often it went bad), the
related events on the same object and node (repeats coalesced), and what to check next (the
finding's recommended action and the node's other findings). Every cluster string is shown as
plain text (``Content``, never markup).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from hpctui.core.ports import SeriesReader
from hpctui.findings.health import Finding, Thresholds
from hpctui.model import ClusterSnapshot, Event, Gpu, IbPort, Mount, Severity
from hpctui.model.fabric import Fabric
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body
from hpctui.ui.widgets.events import SEVERITY_WORD, coalesce, event_message, event_nodes
from hpctui.ui.widgets.problems import ago, object_key, object_node

MAX_EVENTS = 12
HISTORY_WINDOW_S = 600.0


@dataclass(frozen=True, slots=True)
class Explained:
    """What the explain view shows: a title and (heading, lines) sections."""

    title: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([self.title, *(f"{h}\n" + "\n".join(f"  {x}" for x in lines) for h, lines in self.sections)])


def _clock(t: float | None) -> str:
    return "?" if t is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def _n(value: float | None, unit: str = "", fmt: str = "{:.0f}") -> str:
    return "N/A" if value is None else fmt.format(value) + unit


def _gpu(snapshot: ClusterSnapshot, obj: str) -> Gpu | None:
    parts = obj.split("/")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return next((g for g in snapshot.gpus.get(parts[1], ()) if g.index == int(parts[2])), None)


def gpu_evidence(gpu: Gpu, t: Thresholds) -> list[str]:
    """The GPU's readings that the GPU rules test, each with its threshold."""
    lines = [f"GPU {gpu.index} · {gpu.model or 'model N/A'} · UUID {gpu.uuid or 'N/A'} · PCI {gpu.pci_bus_id or 'N/A'}"]
    if gpu.lost:
        lines.append("not answering NVML (fallen off the bus?)")
    lines.append(f"temperature {_n(gpu.temp_c, ' °C')} (warn ≥ {t.gpu_temp_warn_c:g}, error ≥ {t.gpu_temp_crit_c:g}) · "
                 f"HBM {_n(gpu.hbm_temp_c, ' °C')} (warn ≥ {t.hbm_temp_warn_c:g})")
    lines.append(f"power {_n(gpu.power_w)}/{_n(gpu.power_limit_w, ' W')} · util {_n(gpu.util_pct, ' %')} · "
                 f"SM clock {_n(gpu.sm_clock_mhz, ' MHz')}")
    if gpu.thermal_throttled or gpu.throttle_reasons:
        lines.append("clock event reasons: " + (", ".join(gpu.throttle_names()) or "none"))
    lines.append(f"ECC uncorrected {_n(gpu.ecc_uncorrected_volatile, fmt='{}')} since driver load "
                 f"({_n(gpu.ecc_uncorrected_aggregate, fmt='{}')} lifetime) · corrected "
                 f"{_n(gpu.ecc_corrected_volatile, fmt='{}')} (warn ≥ {t.ecc_corrected_warn})")
    if gpu.remap_pending is not None or gpu.remap_failure is not None:
        lines.append(f"row remap: correctable {_n(gpu.remapped_correctable, fmt='{}')}, uncorrectable "
                     f"{_n(gpu.remapped_uncorrectable, fmt='{}')}, pending {_yes(gpu.remap_pending)}, "
                     f"failure {_yes(gpu.remap_failure)}")
    for x in gpu.xid_events[-5:]:
        lines.append(f"Xid {x.xid} at {_clock(x.time)} ({x.pci_bus_id}): {x.message}")
    if gpu.pcie_gen_current is not None or gpu.pcie_width_current is not None:
        lines.append(f"PCIe gen {_n(gpu.pcie_gen_current, fmt='{}')} of {_n(gpu.pcie_gen_max, fmt='{}')}, "
                     f"x{_n(gpu.pcie_width_current, fmt='{}')} of x{_n(gpu.pcie_width_max, fmt='{}')}")
    if gpu.fabric_state is not None:
        lines.append(f"NVLink fabric: {gpu.fabric_state}" + (f" / {gpu.fabric_status}" if gpu.fabric_status else ""))
    down = [str(link.link) for link in gpu.nvlinks if link.up is False]
    if gpu.nvlinks:
        lines.append(f"NVLinks: {len(gpu.nvlinks) - len(down)} up" + (f", down: {', '.join(down)}" if down else ""))
    if gpu.processes:
        lines.append(f"{len(gpu.processes)} process(es): " + "; ".join(
            f"pid {p.pid} {p.user or '?'} {p.command or ''}".strip() for p in gpu.processes[:4]))
    return lines


def _yes(value: bool | None) -> str:
    return "N/A" if value is None else ("yes" if value else "no")


def port_evidence(port: IbPort, fabric: Fabric | None = None) -> list[str]:
    """The port's state, rate, where it is cabled (when the fabric is known) and the link-error counters
    with their increase since the last read."""
    lines = [f"{port.device} port {port.port} · state {port.state or 'N/A'} / {port.phys_state or 'N/A'} · "
             f"{port.link_layer or 'link layer N/A'}",
             f"rate {port.rate_text or _n(port.rate_gbps, ' Gb/s')} (expected {_n(port.max_rate_gbps, ' Gb/s')})",
             f"went down {port.flaps}× since the probe started" + (
                 f" (last at {_clock(port.last_down)})" if port.last_down is not None else "")]
    if fabric is not None:
        far = fabric.remote(port.node, port.device, port.port)
        leaf = fabric.leaf_of.get(port.node)
        if far is not None:
            lines.append(f"cabled to switch {far.switch}" + (f" port {far.port}" if far.port is not None else ""))
        elif leaf is not None:
            lines.append(f"node's leaf switch {leaf} ({len(fabric.peers(port.node))} nodes on it)")
    names = ("link_downed", "symbol_error", "link_error_recovery", "port_rcv_errors",
             "port_rcv_remote_physical_errors", "local_link_integrity_errors", "port_xmit_discards")
    counters = [f"{k} {port.counters[k]}" + (f" (+{port.deltas[k]})" if port.deltas.get(k) else "")
                for k in names if k in port.counters]
    if counters:
        lines.append("counters: " + ", ".join(counters))
    lines.append("rising symbol_error, link_error_recovery, link_downed = cabling; xmit_wait/discards = congestion")
    return lines


def mount_evidence(mount: Mount, t: Thresholds) -> list[str]:
    return [f"{mount.target} · {mount.fstype} from {mount.source or 'N/A'} · state {mount.state.value}",
            f"stat -f took {_n(mount.latency_ms, ' ms')} (slow ≥ {t.mount_slow_ms:g} ms; no answer in time = hung)",
            *([f"detail: {mount.detail}"] if mount.detail else [])]


def node_evidence(snapshot: ClusterSnapshot, name: str) -> list[str]:
    node = snapshot.nodes.get(name)
    if node is None:
        return [f"{name}: no scheduler knows this node"]
    lines = []
    if node.slurm is not None:
        s = node.slurm
        who = f" by {s.reason_user}" if s.reason_user else ""
        when = f" at {_clock(s.reason_time)}" if s.reason_time else ""
        lines.append(f"Slurm {s.display_state} · partitions {', '.join(s.partitions) or 'none'}")
        if s.reason:
            lines.append(f"reason{who}{when}: {s.reason}")
    if node.k8s is not None:
        k = node.k8s
        conds = ", ".join(f"{c}={v}" for c, v in sorted(k.conditions.items()))
        lines.append(f"K8s {conds or 'no conditions'}" + (" · cordoned" if k.unschedulable else ""))
        lines.extend(f"{c}: {m}" for c, m in sorted(k.condition_messages.items()) if m)
        if k.taints:
            lines.append("taints: " + ", ".join(f"{tt.key}:{tt.effect}" for tt in k.taints[:6]))
    return lines


def evidence(snapshot: ClusterSnapshot, finding: Finding, t: Thresholds) -> list[str]:
    """The readings behind ``finding``, by the kind of its object."""
    kind, _, rest = finding.object.partition("/")
    node = object_node(finding.object)
    if kind == "gpu" and (gpu := _gpu(snapshot, finding.object)) is not None:
        return gpu_evidence(gpu, t)
    if kind == "ib":
        device, _, port = rest.partition("/")[2].partition(":")
        found = next((p for p in snapshot.ib.get(node, ()) if p.device == device and str(p.port) == port), None)
        if found is not None:
            return port_evidence(found, snapshot.fabric)
    if kind == "mount":
        target = rest.partition(":")[2]
        m = next((x for x in snapshot.mounts.get(node, ()) if x.target == target), None)
        if m is not None:
            return mount_evidence(m, t)
    if kind == "service":
        name = rest.partition(":")[2]
        svc = next((x for x in snapshot.services.get(node, ()) if x.name == name), None)
        if svc is not None:
            return [f"{svc.name}: {svc.status.value}", *(svc.detail or "").strip().splitlines()[-5:]]
    if kind == "pod":
        ns, _, name = rest.partition("/")
        pod = next((p for p in snapshot.pods if p.namespace == ns and p.name == name), None)
        if pod is not None:
            return [f"pod {ns}/{name} on {pod.node or 'no node'}: phase {pod.phase}, ready {_yes(pod.ready)}"
                    + (f", reason {pod.reason}" if pod.reason else "")]
    if kind == "nvswitch":
        name = rest.partition("/")[2]
        sw = next((x for x in snapshot.nvswitches.get(node, ()) if x.name == name), None)
        if sw is not None:
            return [f"{sw.name} ({sw.pci_bus_id})", *(f"SXid {e.sxid} at {_clock(e.time)}: {e.message}"
                                                      for e in sw.sxid_events[-6:])]
    if kind == "switch" and snapshot.fabric is not None:
        return switch_evidence(snapshot, rest)
    return node_evidence(snapshot, node)


def switch_evidence(snapshot: ClusterSnapshot, name: str) -> list[str]:
    """A leaf switch: where its topology came from, its nodes, and the ports on them that are down or flapped."""
    fabric = snapshot.fabric
    sw = fabric.switches.get(name) if fabric is not None else None
    if fabric is None or sw is None:
        return [f"switch {name}: not in the topology"]
    lines = [f"switch {name} (level {sw.level}, from {fabric.source}): {len(sw.nodes)} nodes"
             + (f", uplinks to {', '.join(sw.switches[:4])}" if sw.switches else "")]
    for node in sw.nodes[:16]:
        for port in snapshot.ib.get(node, ()):
            if port.flaps or not port.is_up or port.degraded_rate:
                when = f", last down {_clock(port.last_down)[11:19]}" if port.last_down is not None else ""
                lines.append(f"{node} {port.device} port {port.port}: {port.state or 'N/A'}, "
                             f"{port.flaps}× down{when}")
    return lines


def related_events(events: Sequence[Event], finding: Finding) -> list[str]:
    """Events on the finding's object first, then on its node; newest first, repeats coalesced."""
    key = object_key(finding.object)
    node = object_node(finding.object)
    mine = [e for e in events if object_key(e.object) == key]
    near = [e for e in events if object_key(e.object) != key and node in event_nodes(e)]
    out = []
    for group in (mine, near):
        group = sorted(group, key=lambda e: e.time, reverse=True)
        for e in coalesce(group):
            out.append(f"{_clock(e.time)[11:19]} {SEVERITY_WORD.get(e.severity, '?'):5} {e.object}: {event_message(e)}")
    return out[:MAX_EVENTS] or ["none stored"]


def gpu_history_lines(series: SeriesReader | None, finding: Finding, now: float) -> list[str]:
    """Min / max / now of the finding's GPU over the last minutes, where the charts keep it."""
    parts = finding.object.split("/")
    if series is None or parts[0] != "gpu" or len(parts) != 3:
        return []
    out = []
    for metric, unit in (("temp", "°C"), ("power", "W"), ("util", "%")):
        for s in series.gpu_series(parts[1], metric, HISTORY_WINDOW_S, now):
            if s.label == f"GPU {parts[2]}" and s.values:
                vals = [v for v in s.values if v == v]  # NaN = no reading
                if vals:
                    out.append(f"{metric} over {ago(HISTORY_WINDOW_S)}: min {min(vals):.0f} {unit}, "
                               f"max {max(vals):.0f} {unit}, now {vals[-1]:.0f} {unit}")
    return out


def explain(snapshot: ClusterSnapshot, finding: Finding, thresholds: Thresholds, *, since: float | None = None,
            bad_count: int = 1, last_bad: float | None = None, node_findings: Sequence[Finding] = (),
            events: Sequence[Event] = (), series: SeriesReader | None = None, number: int | None = None,
            window_s: float = 600.0) -> Explained:
    """Everything the explain view shows about ``finding`` (pure: tests and the screen share it)."""
    node = object_node(finding.object)
    word = SEVERITY_WORD.get(finding.severity, "?")
    title = (f"Problem {number} · " if number else "") + f"{node} · {finding.object} · {word}"
    now = snapshot.time
    history = [f"first seen {_clock(since)} ({ago(now - since)} ago)" if since else "first seen now"]
    if bad_count > 1:
        history.append(f"went bad {bad_count}× within {ago(window_s)}"
                       + (f", last at {_clock(last_bad)}" if last_bad else ""))
    history.extend(gpu_history_lines(series, finding, now))
    others = [f"{SEVERITY_WORD.get(f.severity, '?')} {f.message} → {f.action}" for f in node_findings
              if (f.object, f.code) != (finding.object, finding.code) and f.severity >= Severity.WARNING]
    return Explained(title=title, sections=[
        ("What", [finding.message, f"code {finding.code} · severity {finding.severity.name.lower()}"]),
        ("Evidence", evidence(snapshot, finding, thresholds)),
        ("History", history),
        ("Related events", related_events(events, finding)),
        ("Next", [f"→ {finding.action}", *([f"other findings on {node}:", *others] if others else [])]),
    ])


class ExplainScreen(ModalScreen[None]):
    """The explain view of one problem row (esc closes)."""

    BINDINGS = [Binding("escape", "dismiss_screen", "Close"), Binding("enter", "dismiss_screen", "Close", show=False),
                *SCROLL_BINDINGS]
    DEFAULT_CSS = """
    ExplainScreen { align: center middle; }
    ExplainScreen > Vertical { width: 90%; height: auto; max-height: 90%; border: round $primary; background: $surface; }
    ExplainScreen VerticalScroll { height: auto; }
    ExplainScreen #explain-title { text-style: bold; width: 100%; padding: 0 1; }
    ExplainScreen #explain-body { padding: 0 1; }
    """

    def __init__(self, explained: Explained, severity: Severity = Severity.WARNING) -> None:
        super().__init__()
        self.explained = explained
        self.severity = severity

    def compose(self) -> ComposeResult:
        colour = {Severity.CRITICAL: "$error", Severity.ERROR: "$error", Severity.WARNING: "$warning"}.get(
            self.severity, "$foreground")
        with Vertical():
            yield Label(Content.assemble((self.explained.title, f"bold {colour}"), "  (esc to close)"),
                        id="explain-title")
            with VerticalScroll():
                yield Static(self._body(), id="explain-body")

    def _body(self) -> Content:
        parts: list[Content] = []
        for heading, lines in self.explained.sections:
            style = "bold $accent" if heading != "Next" else "bold $success"
            parts.append(Content.styled(heading, style))
            parts.extend(Content("  " + line) for line in lines)
        return Content("\n").join(parts)

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)

    def action_scroll_body(self, dx: int, dy: int) -> None:
        scroll_body(self, dx, dy)


__all__ = ["ExplainScreen", "Explained", "evidence", "explain"]
