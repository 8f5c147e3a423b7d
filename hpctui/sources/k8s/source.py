"""The Kubernetes source: list + watch of nodes, pods, Warning events, PVCs and StorageClasses, in threads.

One worker thread per watched collection (per namespace when namespaces are configured)
keeps a dict of converted objects up to date: a list (paginated) gives the items and a
resourceVersion, then a watch from that version applies each ADDED/MODIFIED/DELETED
event to *one* entry (a watch event never rebuilds the pod list), BOOKMARK events move
the resourceVersion on, a 410 Gone (the version was compacted away) triggers a relist,
any other failure backs off exponentially and resumes from the last version.
``collect()`` only copies what the threads hold, so the event loop never blocks on the
network. A failure of one collection (an RBAC 403 on pods) becomes an error of that part
alone; the source as a whole fails only when nothing can be read.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model import Event, K8sNodeInfo, Part, SourceResult
from hpctui.model.fabric import Fabric
from hpctui.model.validate import Drops
from hpctui.model.volumes import StorageClassInfo, VolumeClaim, Volumes
from hpctui.sources.base import SourceError
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.actions import K8sActions
from hpctui.sources.k8s.client import K8sError, KubeClient, WatchBroken, error_from, q
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.topology import LEAF_LABELS, fabric_from_labels

if TYPE_CHECKING:
    from hpctui.model.names import NodeNameMap

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 30.0
BAD_LINES_SHOWN_S = 300.0  # a dropped watch line stays a warning this long after the last one


@dataclass
class Stream:
    """One list+watch: a collection (nodes, pods, events) at one path."""

    resource: str  # "nodes", "pods", "events": for messages and RBAC wording
    part: Part
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    items: dict[str, Any] = field(default_factory=dict)  # key -> model object
    rv: str | None = None  # None: (re)list needed
    synced: bool = False
    error: str | None = None
    version: int = 0  # bumps on every change of items
    lists: int = 0
    relists_410: int = 0
    bookmarks: int = 0
    watch_events: int = 0
    dropped: dict[str, str] = field(default_factory=dict)  # key -> why the object was dropped
    bad_lines: int = 0  # watch lines dropped (not JSON, not an event, over the cap) since bad_since
    bad_note: str = ""  # what the latest one was
    bad_since: float = 0.0  # monotonic time of the first of them
    bad_at: float | None = None  # monotonic time of the latest (None: none)
    implausible: dict[str, Drops] = field(default_factory=dict)  # key -> values of a kept object shown as N/A

    @property
    def settled(self) -> bool:
        return self.synced or self.error is not None


class K8sSource(K8sActions):
    kind = "k8s"

    def __init__(self, settings: K8sSettings, *, name_map: NodeNameMap | None = None,
                 api_client: Any | None = None, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.timeout_s = settings.timeout_s  # the poller's limit for one collect() (plus its margin)
        self.clock = clock
        self.name_map = name_map
        self.client = KubeClient(settings, api_client)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.streams = self._make_streams()
        self._new_events: deque[Event] = deque(maxlen=max(settings.event_limit, 1) * 4)
        self._seen_events: dict[tuple[str, str], None] = {}
        self._built: dict[Part, tuple[int, Any]] = {}
        self._fabric_of: tuple[dict[str, K8sNodeInfo], Fabric | None] | None = None  # (nodes, their fabric)
        super().__init__()

    # -- configuration ----------------------------------------------------------------
    def _make_streams(self) -> list[Stream]:
        s = self.settings
        streams = [Stream("nodes", Part.K8S_NODES, "/api/v1/nodes")]
        spaces = s.namespaces or [""]
        for ns in spaces:
            base = f"/api/v1/namespaces/{q(ns)}" if ns else "/api/v1"
            streams.append(Stream("pods", Part.PODS, f"{base}/pods"))
            if s.events:
                streams.append(Stream("events", Part.EVENTS, f"{base}/events", {"fieldSelector": "type=Warning"}))
            if s.volumes:
                streams.append(Stream("persistentvolumeclaims", Part.VOLUMES, f"{base}/persistentvolumeclaims"))
        if s.volumes:
            streams.append(Stream("storageclasses", Part.VOLUMES, "/apis/storage.k8s.io/v1/storageclasses"))
        if s.queues:
            streams.append(Stream("queues", Part.K8S_QUEUES, "/apis"))
        return streams

    def _node_name(self, k8s_name: str) -> str:
        return self.name_map.to_slurm(k8s_name) if self.name_map is not None else k8s_name

    # -- worker threads ---------------------------------------------------------------
    def start(self) -> None:
        if self._threads:
            return
        for stream in self.streams:
            t = threading.Thread(target=self._run, args=(stream,), daemon=True,
                                 name=f"hpctui-k8s-{self.name}-{stream.resource}")
            self._threads.append(t)
            t.start()

    def _run(self, stream: Stream) -> None:
        backoff = BACKOFF_MIN_S
        while not self._stop.is_set():
            try:
                if stream.resource == "queues":  # CRDs: discovered and listed now and then, not watched
                    self._list_queues(stream)
                    self._stop.wait(self.settings.queue_interval_s)
                    continue
                if stream.rv is None:
                    self._list(stream)
                self._watch(stream)
                backoff = BACKOFF_MIN_S
            except K8sError as exc:
                if self._stop.is_set():
                    return
                if exc.status == 410:  # expired continue token or watch version: start over
                    with self._lock:
                        stream.rv = None
                        stream.relists_410 += 1
                    continue
                with self._lock:
                    if isinstance(exc, WatchBroken):  # events may have been lost with the line
                        stream.rv = None
                    stream.error = exc.describe()
                self._stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
            except Exception as exc:  # a bug must not kill the thread silently
                with self._lock:
                    stream.error = f"{stream.resource}: {type(exc).__name__}: {exc}"
                self._stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _convert(self, stream: Stream, obj: Any) -> tuple[str, Any] | None:
        """(key, model object) or None if the object is dropped (recorded in stream.dropped)."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or meta.get('uid') or '?'}"
        drops = Drops()  # implausible counts of this object (hpctui.model.validate): warned while it is kept
        value: Any
        try:
            if stream.resource == "nodes":
                value = convert.node_info(obj, drops)
            elif stream.resource == "pods":
                value = convert.pod(obj, drops)
            elif stream.resource == "persistentvolumeclaims":
                value = convert.volume_claim(obj)
            elif stream.resource == "storageclasses":
                value = convert.storage_class(obj)
            else:
                return key, convert.event(obj, self._node_name)
        except Exception as exc:  # one bad record costs one record
            with self._lock:
                stream.dropped[key] = f"{type(exc).__name__}: {exc}"
                stream.implausible.pop(key, None)
            return None
        if drops or key in stream.implausible:
            with self._lock:
                if drops:
                    stream.implausible[key] = drops
                else:
                    stream.implausible.pop(key, None)
        return key, value

    def _list(self, stream: Stream) -> None:
        raw, rv = self.client.list_all(stream.path, query=stream.query, resource=stream.resource)
        if stream.resource == "events":
            self._list_events(stream, raw, rv)
            return
        items: dict[str, Any] = {}
        with self._lock:
            stream.dropped.clear()
            stream.implausible.clear()
        for obj in raw:
            converted = self._convert(stream, obj)
            if converted is not None:
                items[converted[0]] = converted[1]
        with self._lock:
            stream.items = items
            stream.rv = rv
            stream.synced = True
            stream.error = None
            stream.lists += 1
            stream.version += 1

    def _list_events(self, stream: Stream, raw: list[Any], rv: str) -> None:
        fresh: list[Event] = []
        for obj in raw:
            key = convert.event_key(obj) if isinstance(obj, dict) else ("", "")
            if key in self._seen_events:
                continue
            converted = self._convert(stream, obj)
            if converted is not None:
                self._seen_events[key] = None
                fresh.append(converted[1])
        fresh.sort(key=lambda e: e.time)
        with self._lock:
            self._new_events.extend(fresh[-self.settings.event_limit:])
            self._trim_seen()
            stream.rv = rv
            stream.synced = True
            stream.error = None
            stream.lists += 1
            stream.version += 1

    def _list_queues(self, stream: Stream) -> None:
        """Kueue and Volcano objects, if their API groups are served (discovery, never assumed)."""
        _, doc = self.client.request("GET", "/apis", verb="get", resource="apis (discovery)")
        served: dict[str, str] = {}
        for group in doc.get("groups") or []:
            if isinstance(group, dict) and group.get("name") in convert.QUEUE_RESOURCES:
                preferred = group.get("preferredVersion") or {}
                version = preferred.get("version") if isinstance(preferred, dict) else None
                if version:
                    served[str(group["name"])] = str(version)
        items: dict[str, Any] = {}
        dropped: dict[str, str] = {}
        for group, version in served.items():
            api = f"{group}/{version}"
            for plural, kind, _namespaced in convert.QUEUE_RESOURCES[group]:
                try:
                    raw, _ = self.client.list_all(f"/apis/{api}/{plural}", resource=f"{plural}.{group}")
                except K8sError as exc:
                    if exc.status == 404:  # group served, this resource not (another version's CRD set)
                        continue
                    raise
                for obj in raw:
                    meta = obj.get("metadata") if isinstance(obj, dict) else None
                    meta = meta if isinstance(meta, dict) else {}
                    key = f"{kind}/{meta.get('namespace') or ''}/{meta.get('name') or '?'}"
                    try:
                        items[key] = convert.queue_item(kind, api, obj)
                    except Exception as exc:  # one bad record costs one record
                        dropped[key] = f"{type(exc).__name__}: {exc}"
        with self._lock:
            if items.keys() != stream.items.keys() or any(items[k] != stream.items[k] for k in items):
                stream.items = items
                stream.version += 1
            stream.dropped = dropped
            stream.synced = True
            stream.error = None
            stream.lists += 1

    def _trim_seen(self) -> None:
        limit = self.settings.event_limit * 20
        while len(self._seen_events) > limit:
            self._seen_events.pop(next(iter(self._seen_events)))

    def _bad_line(self, stream: Stream, note: str) -> None:
        """Count one dropped watch line (shown as a warning for BAD_LINES_SHOWN_S after the last)."""
        now = time.monotonic()
        with self._lock:
            if stream.bad_at is None or now - stream.bad_at > BAD_LINES_SHOWN_S:
                stream.bad_lines, stream.bad_since = 0, now
            stream.bad_lines += 1
            stream.bad_note = note
            stream.bad_at = now

    def _watch(self, stream: Stream) -> None:
        assert stream.rv is not None
        for ev in self.client.watch(stream.path, resource_version=stream.rv, query=stream.query,
                                    resource=stream.resource, on_bad_line=lambda note: self._bad_line(stream, note)):
            if self._stop.is_set():
                return
            etype = ev.get("type")
            obj = ev.get("object")
            obj = obj if isinstance(obj, dict) else {}
            if etype == "ERROR":
                code = obj.get("code")
                raise K8sError(int(code) if isinstance(code, int) else 500, str(obj.get("message") or "watch error"),
                               verb="watch", resource=stream.resource, reason=str(obj.get("reason") or ""))
            meta = obj.get("metadata")
            rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
            if etype == "BOOKMARK":
                with self._lock:
                    stream.bookmarks += 1
                    if rv:
                        stream.rv = str(rv)
                continue
            if stream.resource == "events":
                self._watch_event(stream, etype, obj, rv)
                continue
            converted = self._convert(stream, obj) if etype != "DELETED" else None
            with self._lock:
                if etype == "DELETED":
                    m = meta if isinstance(meta, dict) else {}
                    key = f"{m.get('namespace') or ''}/{m.get('name') or m.get('uid') or '?'}"
                    stream.items.pop(key, None)
                    stream.dropped.pop(key, None)
                    stream.implausible.pop(key, None)
                elif converted is not None:
                    stream.items[converted[0]] = converted[1]
                    stream.dropped.pop(converted[0], None)
                if rv:
                    stream.rv = str(rv)
                stream.error = None
                stream.watch_events += 1
                stream.version += 1
        with self._lock:  # a watch that ended normally (server timeout) is healthy
            stream.error = None

    def _watch_event(self, stream: Stream, etype: Any, obj: dict[str, Any], rv: Any) -> None:
        event = None
        if etype in ("ADDED", "MODIFIED"):
            key = convert.event_key(obj)
            if key not in self._seen_events:
                converted = self._convert(stream, obj)
                if converted is not None:
                    self._seen_events[key] = None
                    event = converted[1]
        with self._lock:
            if event is not None:
                self._new_events.append(event)
                self._trim_seen()
            if rv:
                stream.rv = str(rv)
            stream.error = None
            stream.watch_events += 1

    # -- Source -----------------------------------------------------------------------
    async def collect(self) -> SourceResult:
        self.start()
        deadline = time.monotonic() + self.settings.timeout_s * 0.9
        while time.monotonic() < deadline:  # the first collect waits (bounded) for the initial lists
            with self._lock:
                if all(s.settled for s in self.streams):
                    break
            await asyncio.sleep(0.05)
        return self._result()

    def _result(self) -> SourceResult:
        now = self.clock()
        with self._lock:
            by_part: dict[Part, list[Stream]] = {}
            for s in self.streams:
                by_part.setdefault(s.part, []).append(s)
            part_errors: dict[str, str] = {}
            healthy: list[Part] = []
            for part, streams in by_part.items():
                bad = next((s for s in streams if s.error is not None or not s.synced), None)
                if bad is None:
                    healthy.append(part)
                else:
                    part_errors[part.value] = bad.error or f"{bad.resource}: not listed yet"
            if not any(p in healthy for p in (Part.K8S_NODES, Part.PODS, Part.EVENTS)):
                first = next(iter(part_errors.values()), "no data")  # nothing but discovery works
                raise SourceError(first)
            warnings = [f"{part}: {err}" for part, err in part_errors.items()]
            dropped = [(s.resource, k, why) for s in self.streams for k, why in s.dropped.items()]
            warnings.extend(self._bad_line_warnings())
            implausible = Drops()
            for s in self.streams:
                for d in s.implausible.values():
                    implausible.merge(d)
            nodes = self._build(Part.K8S_NODES, by_part) if Part.K8S_NODES in healthy else None
            fabric = self._fabric(nodes) if nodes is not None else None
            pods = self._build(Part.PODS, by_part) if Part.PODS in healthy else None
            queues = self._build(Part.K8S_QUEUES, by_part) if Part.K8S_QUEUES in healthy else None
            volumes = self._build(Part.VOLUMES, by_part) if Part.VOLUMES in healthy else None
            events: tuple[Event, ...] | None = None
            if Part.EVENTS in healthy:
                events = tuple(self._new_events)
                self._new_events.clear()
        if dropped:
            res, key, why = dropped[0]
            warnings.append(clean_text(f"dropped {len(dropped)} malformed object(s), e.g. {res} {key}: {why}"))
        warnings.extend(implausible.warnings())
        return SourceResult(source=self.name, time=now, k8s_nodes=nodes, pods=pods, events=events,
                            k8s_queues=queues, volumes=volumes, fabric=fabric, warnings=tuple(warnings),
                            part_errors=part_errors)

    def _fabric(self, nodes: dict[str, K8sNodeInfo]) -> Fabric | None:
        """The leaf switches a topology labeller wrote on the nodes (rebuilt only when the nodes changed)."""
        if self._fabric_of is not None and self._fabric_of[0] is nodes:
            return self._fabric_of[1]
        keys = LEAF_LABELS if self.settings.topology_labels is None else tuple(self.settings.topology_labels)
        fabric = fabric_from_labels(nodes.values(), self._node_name, keys) if keys else None
        self._fabric_of = (nodes, fabric)
        return fabric

    def _bad_line_warnings(self) -> list[str]:
        """One warning per stream that dropped watch lines lately (called under the lock)."""
        now = time.monotonic()
        out = []
        for s in self.streams:
            if s.bad_at is not None and now - s.bad_at <= BAD_LINES_SHOWN_S:
                ago = max(1, round((now - s.bad_since) / 60))
                out.append(f"{s.resource} watch: {s.bad_lines} line(s) dropped in the last {ago} min "
                           f"(latest: {s.bad_note})")
        return out

    def _build(self, part: Part, by_part: dict[Part, list[Stream]]) -> Any:
        """The part's merged items; rebuilt only when a stream changed (called under the lock)."""
        streams = by_part[part]
        version = sum(s.version for s in streams)  # each only grows: the sum changes iff one changed
        cached = self._built.get(part)
        if cached is not None and cached[0] == version:
            return cached[1]
        value: Any
        if part is Part.K8S_NODES:
            nodes: dict[str, K8sNodeInfo] = {}
            for s in streams:
                nodes.update((n.name, n) for n in s.items.values())
            value = nodes
        elif part is Part.VOLUMES:
            items = [x for st in streams for x in st.items.values()]
            value = Volumes(claims=tuple(x for x in items if isinstance(x, VolumeClaim)),
                            classes=tuple(x for x in items if isinstance(x, StorageClassInfo)))
        else:
            objs: list[Any] = []
            for s in streams:
                objs.extend(s.items.values())
            value = tuple(objs)
        self._built[part] = (version, value)
        return value

    def pod_shell_argv(self, namespace: str, pod: str, container: str | None, *,
                   kubectl: str = "kubectl") -> tuple[str, ...]:
        """PodShell: ``kubectl exec -it`` into the container with this source's kubeconfig and
        context (hpctui.sources.k8s.shell); ValueError for a name that is not a Kubernetes name."""
        from hpctui.sources.k8s.shell import kubectl_exec_argv

        return kubectl_exec_argv(self.settings, namespace, pod, container, kubectl=kubectl)

    # -- on-demand reads (pod keys) ------------------------------------------------------
    async def describe_pod(self, namespace: str, name: str) -> str:
        """The pod as YAML plus its events, like ``kubectl describe`` gives the facts."""
        return await asyncio.to_thread(self._describe_pod, namespace, name)

    def _describe_pod(self, namespace: str, name: str) -> str:
        import yaml

        _, pod = self.client.request("GET", f"/api/v1/namespaces/{q(namespace)}/pods/{q(name)}", verb="get",
                                     resource="pods")
        if isinstance(pod.get("metadata"), dict):
            pod["metadata"].pop("managedFields", None)
        text = yaml.safe_dump(pod, sort_keys=False, default_flow_style=False, allow_unicode=True)
        try:
            events, _ = self.client.list_all(f"/api/v1/namespaces/{q(namespace)}/events", query={
                "fieldSelector": f"involvedObject.kind=Pod,involvedObject.name={name}"}, resource="events")
        except K8sError as exc:
            return f"{text}\nEvents: {exc.describe()}\n"
        lines = [f"  {e.severity.name:<8} {e.message}" for e in
                 sorted((convert.event(ev, self._node_name) for ev in events if isinstance(ev, dict)),
                        key=lambda e: e.time)]
        return f"{text}\nEvents:\n" + ("\n".join(lines) if lines else "  <none>") + "\n"

    async def pod_logs(self, namespace: str, name: str, container: str | None = None, tail: int = 200,
                       previous: bool = False) -> str:
        """The last ``tail`` log lines of a container (the first one unless named); ``previous``: of its
        previous instance (a container in CrashLoopBackOff). Read with ``limitBytes``, sanitised."""
        text, _ = await asyncio.to_thread(self._pod_logs, namespace, name, container, tail, previous, None)
        return "\n".join(text) or "(no log lines)"

    async def pod_log_lines(self, namespace: str, name: str, container: str | None = None, tail: int = 200,
                            previous: bool = False, since: str | None = None) -> tuple[list[str], str | None]:
        """PodLogFollower: the log lines (sanitised, bounded) and the RFC 3339 time of the last one; with
        ``since`` (that time, from the last read) only the lines after it: what a follow read adds."""
        return await asyncio.to_thread(self._pod_logs, namespace, name, container, tail, previous, since)

    async def pod_containers(self, namespace: str, name: str) -> tuple[str, ...]:
        """PodLogFollower: the pod's container names (init containers first), for the viewer's choice."""
        def get() -> tuple[str, ...]:
            _, pod = self.client.request("GET", f"/api/v1/namespaces/{q(namespace)}/pods/{q(name)}", verb="get",
                                         resource="pods")
            spec = pod.get("spec") if isinstance(pod, dict) else None
            if not isinstance(spec, dict):
                return ()
            names = [c.get("name") for key in ("initContainers", "containers")
                     for c in (spec.get(key) or ()) if isinstance(c, dict)]
            return tuple(clean_text(n) for n in names if isinstance(n, str))
        return await asyncio.to_thread(get)

    def _pod_logs(self, namespace: str, name: str, container: str | None, tail: int, previous: bool,
                  since: str | None) -> tuple[list[str], str | None]:
        query: dict[str, Any] = {"tailLines": tail, "container": container, "limitBytes": LOG_LIMIT_BYTES,
                                 "timestamps": "true"}
        if previous:
            query["previous"] = "true"
        if since:
            query["sinceTime"] = since
        resp = self.client._call("GET", f"/api/v1/namespaces/{q(namespace)}/pods/{q(name)}/log",
                                 query=query, verb="get", resource="pods/log")
        data = self.client.read_body(resp, "get", "pods/log")
        if not 200 <= resp.status <= 299:
            try:
                doc = msgspec.json.decode(data)
            except msgspec.DecodeError:
                doc = {"message": data[:300].decode("utf-8", "replace")}
            raise error_from(resp.status, doc, "get", "pods/log", resp.reason)
        return split_log_timestamps(data.decode("utf-8", "replace"), since)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-stream bookkeeping (lists, 410 relists, bookmarks, resourceVersion): for tests and `describe`."""
        with self._lock:
            return {f"{s.resource}:{s.path}": {"lists": s.lists, "relists_410": s.relists_410,
                                               "bookmarks": s.bookmarks, "rv": s.rv, "error": s.error,
                                               "items": len(s.items), "watch_events": s.watch_events}
                    for s in self.streams}

    async def close(self) -> None:
        self._stop.set()
        self.client.close()
        threads, self._threads = self._threads, []
        if threads:
            await asyncio.to_thread(_join_all, threads, 3.0)


def _join_all(threads: list[threading.Thread], timeout: float) -> None:
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))


LOG_LIMIT_BYTES = 256 * 1024  # one pods/log read (the API server stops there: limitBytes)
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z")  # the kubelet's timestamps=true prefix


def split_log_timestamps(text: str, since: str | None = None) -> tuple[list[str], str | None]:
    """``timestamps=true`` log text → (lines without their time, sanitised; the last line's time).

    With ``since`` (sinceTime is inclusive, to the second), lines at or before it are dropped: a follow
    read shows each line once. A line without a time (a log cut by limitBytes) is kept as it is."""
    lines: list[str] = []
    last: str | None = since
    floor = _stamp_key(since) if since else None
    for raw in text.splitlines():
        stamp, sep, rest = raw.partition(" ")
        if sep and _RFC3339.fullmatch(stamp):
            if floor is not None and _stamp_key(stamp) <= floor:
                continue
            last = stamp
            lines.append(clean_text(rest.expandtabs(8)))
        else:
            lines.append(clean_text(raw.expandtabs(8)))
    return lines, last


def _stamp_key(stamp: str) -> str:
    """An RFC 3339 UTC time that sorts as text: Go trims the fraction's zeros (``.1Z``, ``.123Z``)."""
    body = stamp.rstrip("Z")
    whole, _, frac = body.partition(".")
    return f"{whole}.{frac.ljust(9, '0')[:9]}"
