"""Ceph health from the mgr's Prometheus module (``ceph mgr module enable prometheus``, ``/metrics`` on 9283).

For a site that runs the module and gives hpctui no ``ceph`` CLI: one bounded GET of ``metrics_url`` per read
(aiohttp, like the Prometheus and Alertmanager sources; ``max_answer_mib``, ``timeout_s``), parsed here into the
same :class:`~hpctui.model.storage.CephHealth` the CLI gives, so the findings are the same where the metrics
carry the information:

- ``ceph_health_status`` (0 OK, 1 WARN, 2 ERR) and ``ceph_health_detail{name, severity}`` (1: the check is
  active; 0: seen before, cleared now) give the overall status and each check's code and severity. The metrics
  carry **no message** (no summary, no detail lines): each check's summary is left empty and the finding says
  so. ``ceph_osd_up`` / ``ceph_osd_in`` with ``ceph_osd_metadata{hostname, device_class}`` give the OSDs.
- ``ceph_pg_<state>{pool_id}`` (summed over the pools) give PG counts per state word (``degraded``,
  ``undersized``, ``stale``...), kept as single-word states; ``ceph_pg_total`` the number of PGs.
- ``ceph_pool_metadata{pool_id, name}`` with ``ceph_pool_percent_used`` (a fraction), ``_stored``,
  ``_objects``, ``_max_avail`` (and ``_quota_bytes`` / ``_quota_objects`` where the module has them) give the
  pools; ``ceph_cluster_total_bytes`` / ``_total_used_bytes`` the raw usage.
- ``ceph_mon_metadata{public_addr, ceph_version}`` gives the mons' addresses (IPs: what ties an old-syntax
  CephFS mount to this cluster) and the version. There is no fsid in the metrics.

The text exposition format is parsed line by line: a line that is not a sample (or a sample of a metric not
read here) is skipped, so one bad sample costs that sample; at most ``MAX_SAMPLES`` are kept. Every label
value is sanitised (:func:`~hpctui.base.sanitize.clean_text`) and bounded before it goes anywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import aiohttp

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.model.storage import CEPH_SEVERITY, CephCheck, CephHealth, CephOsd, CephPool
from hpctui.sources.bounded import MIB, AnswerTooLarge, check_announced, read_json_capped
from hpctui.sources.ceph.parse import CephParseError
from hpctui.sources.ceph.settings import CephSettings

MAX_SAMPLES = 500_000  # samples of the metrics read here, kept at most (a 10k-OSD cluster has ~60k)
MAX_LABEL = 256  # characters of a label value kept
_STATUS = {0: "HEALTH_OK", 1: "HEALTH_WARN", 2: "HEALTH_ERR"}
_SEVERITY = {"HEALTH_WARN": "HEALTH_WARN", "HEALTH_WARNING": "HEALTH_WARN", "HEALTH_ERR": "HEALTH_ERR",
             "HEALTH_ERROR": "HEALTH_ERR"}
_POOL_STATS = {"ceph_pool_percent_used", "ceph_pool_stored", "ceph_pool_objects", "ceph_pool_max_avail",
               "ceph_pool_quota_bytes", "ceph_pool_quota_objects"}
_SINGLE = {"ceph_health_status", "ceph_cluster_total_bytes", "ceph_cluster_total_used_bytes",
           "ceph_num_objects_degraded"}
_NAME = re.compile(rb"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_ESCAPE = re.compile(r"\\(.)")
_VERSION = re.compile(r"ceph version (\S+)")


def _wanted(name: str) -> bool:
    return (name in _SINGLE or name in _POOL_STATS or name.startswith("ceph_pg_")
            or name in ("ceph_health_detail", "ceph_osd_up", "ceph_osd_in", "ceph_osd_metadata",
                        "ceph_pool_metadata", "ceph_mon_metadata"))


def _unescape(value: str) -> str:
    return _ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _labels(text: str) -> dict[str, str] | None:
    """``a="x",b="y"`` → {a: x, b: y}, every value sanitised and bounded; None when it does not parse."""
    out: dict[str, str] = {}
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _LABEL.match(text, pos)
        if m is None or m.end() == pos:
            return None
        out[m.group(1)] = clean_text(_unescape(m.group(2))[:MAX_LABEL])
        pos = m.end()
    return out


Sample = tuple[str, dict[str, str], float]


def parse_exposition(data: bytes, wanted: Iterable[str] | None = None) -> tuple[list[Sample], int]:
    """The samples of a Prometheus text exposition whose metric Ceph's health is read from: (samples, lines
    skipped as malformed). Comments, blank lines and other metrics are passed over; a line that does not parse
    is skipped alone."""
    keep = set(wanted) if wanted is not None else None
    samples: list[Sample] = []
    bad = 0
    for raw in data.split(b"\n"):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        m = _NAME.match(line)
        if m is None:
            bad += 1
            continue
        name = m.group().decode("ascii")
        if not (name in keep if keep is not None else _wanted(name)):
            continue
        rest = line[m.end():]
        labels: dict[str, str] | None = {}
        if rest.startswith(b"{"):
            close = rest.rfind(b"}")
            if close < 0:
                bad += 1
                continue
            labels = _labels(rest[1:close].decode("utf-8", "replace"))
            rest = rest[close + 1:]
        words = rest.split()
        if labels is None or not 1 <= len(words) <= 2:
            bad += 1
            continue
        try:
            value = float(words[0])
        except ValueError:
            bad += 1
            continue
        if len(samples) >= MAX_SAMPLES:
            break
        samples.append((name, labels, value))
    return samples, bad


def _int(value: float | None) -> int | None:
    return None if value is None or not math.isfinite(value) else int(value)


def health_from_metrics(name: str, data: bytes, pool_warn_pct: float = 85.0) -> CephHealth:
    """One exposition of the mgr's Prometheus module as the cluster's health (see the module docstring).
    Raises :class:`CephParseError` for an answer with no ``ceph_health_status`` (not the mgr's metrics)."""
    samples, bad = parse_exposition(data)
    single: dict[str, float] = {}
    checks: list[CephCheck] = []
    up: dict[str, float] = {}
    in_: dict[str, float] = {}
    osd_meta: dict[str, dict[str, str]] = {}
    pool_names: dict[str, str] = {}
    pool_stats: dict[str, dict[str, float]] = {}
    pg: dict[str, float] = {}
    mons: set[str] = set()
    versions: set[str] = set()
    for metric, labels, value in samples:
        if metric in _SINGLE:
            single[metric] = value
        elif metric == "ceph_health_detail":
            code = labels.get("name", "")
            if value >= 1 and code:
                sev = _SEVERITY.get(labels.get("severity", ""), "HEALTH_WARN")
                checks.append(CephCheck(code=code[:80], severity=CEPH_SEVERITY[sev], summary=""))
        elif metric in ("ceph_osd_up", "ceph_osd_in"):
            daemon = labels.get("ceph_daemon", "")
            if daemon:
                (up if metric == "ceph_osd_up" else in_)[daemon] = value
        elif metric == "ceph_osd_metadata":
            if labels.get("ceph_daemon"):
                osd_meta[labels["ceph_daemon"]] = labels
        elif metric == "ceph_pool_metadata":
            if labels.get("pool_id") and labels.get("name"):
                pool_names[labels["pool_id"]] = labels["name"]
        elif metric in _POOL_STATS:
            if labels.get("pool_id"):
                pool_stats.setdefault(labels["pool_id"], {})[metric] = value
        elif metric.startswith("ceph_pg_"):
            if math.isfinite(value):
                word = metric.removeprefix("ceph_pg_")
                pg[word] = pg.get(word, 0.0) + value
        elif metric == "ceph_mon_metadata":
            addr = labels.get("public_addr", "")
            if addr and len(addr) <= 64:
                mons.add(addr)
            v = _VERSION.match(labels.get("ceph_version", ""))
            if v:
                versions.add(clean_text(v.group(1)))
    status_value = single.get("ceph_health_status")
    if status_value is None:
        raise CephParseError(f"no ceph_health_status in the answer ({len(samples)} Ceph samples, {bad} bad lines): "
                             "not the mgr's Prometheus metrics")
    status = _STATUS.get(_int(status_value) or 0, "HEALTH_UNKNOWN")
    osds = []
    for daemon in sorted(up.keys() | in_.keys(), key=lambda d: (len(d), d)):
        meta = osd_meta.get(daemon, {})
        num = daemon.removeprefix("osd.")
        osds.append(CephOsd(id=int(num) if num.isdigit() else -1, name=daemon[:80], host=meta.get("hostname") or None,
                            up=up.get(daemon, 1.0) >= 1, in_cluster=in_.get(daemon, 1.0) > 0,
                            device_class=meta.get("device_class") or None))
    pools = []
    for pid in sorted(pool_names.keys() | pool_stats.keys(), key=lambda p: (len(p), p)):
        st = pool_stats.get(pid, {})
        pct = st.get("ceph_pool_percent_used")
        pools.append(CephPool(
            name=pool_names.get(pid, f"pool {pid}"), id=int(pid) if pid.isdigit() else None,
            stored_bytes=_int(st.get("ceph_pool_stored")), objects=_int(st.get("ceph_pool_objects")),
            used_pct=100.0 * pct if pct is not None and math.isfinite(pct) else None,
            max_avail_bytes=_int(st.get("ceph_pool_max_avail")),
            quota_bytes=_int(st.get("ceph_pool_quota_bytes")) or None,
            quota_objects=_int(st.get("ceph_pool_quota_objects")) or None))
    total = pg.pop("total", None)
    states = tuple((w, int(n)) for w, n in sorted(pg.items()) if int(n) > 0)
    return CephHealth(
        name=name, status=status, version=", ".join(sorted(versions)) or None,
        checks=tuple(sorted(checks, key=lambda c: (-c.severity, c.code))),
        osds_total=len(osds) if osds else None, osds_up=sum(1 for o in osds if o.up) if osds else None,
        osds_in=sum(1 for o in osds if o.in_cluster) if osds else None, osds=tuple(osds),
        pgs_total=_int(total), pg_states=states, degraded_objects=_int(single.get("ceph_num_objects_degraded")),
        bytes_total=_int(single.get("ceph_cluster_total_bytes")),
        bytes_used=_int(single.get("ceph_cluster_total_used_bytes")), pools=tuple(pools),
        pool_warn_pct=pool_warn_pct, mon_addrs=tuple(sorted(mons)), via="metrics",
        parts_missing=(f"metrics: {bad} malformed line(s) skipped",) if bad else ())


class MetricsReader:
    """GETs ``metrics_url`` and reads the health from it: one short-lived aiohttp session per read (every
    ``interval_s``, 30 s: nothing worth keeping open, and no session outlives the event loop it was made on)."""

    def __init__(self, settings: CephSettings) -> None:
        assert settings.metrics_url is not None
        self.settings = settings
        self.url = settings.metrics_url
        self.where = redact_url(self.url)
        self.limit = settings.max_answer_mib * MIB

    def __repr__(self) -> str:
        return f"MetricsReader({self.where!r})"

    async def fetch(self) -> bytes:
        """The answer's body, bounded; :class:`CephParseError` (one line) when it did not come, was too large or
        was an HTTP error."""
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        try:
            async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=1)) as session, \
                    session.get(self.url, headers={"Accept": "text/plain"}) as resp:
                try:
                    check_announced(resp.content_length, self.limit)
                    body = await read_json_capped(resp.content.iter_chunked(64 * 1024), self.limit, json_only=False)
                except AnswerTooLarge as exc:
                    resp.close()
                    raise CephParseError(f"{exc} from {self.where} (max_answer_mib = {self.settings.max_answer_mib});"
                                         " reading stopped") from None
                if resp.status >= 400:
                    first = clean_text(body[:200].decode("utf-8", "replace").strip().split("\n", 1)[0])
                    raise CephParseError(f"HTTP {resp.status} from {self.where}: {first or resp.reason}")
                return body
        except TimeoutError:
            raise CephParseError(f"no complete answer from {self.where} within {self.settings.timeout_s:g} s"
                                 ) from None
        except aiohttp.ClientConnectorError as exc:
            raise CephParseError(redact_url(f"cannot reach {self.where}: {exc.os_error.strerror or exc}")) from None
        except aiohttp.ClientError as exc:
            raise CephParseError(redact_url(f"{self.where}: {type(exc).__name__}: {clean_text(str(exc))}")) from None

    async def read(self, name: str) -> CephHealth:
        body = await self.fetch()
        return health_from_metrics(name, body, self.settings.pool_warn_pct)


__all__ = ["MAX_SAMPLES", "MetricsReader", "health_from_metrics", "parse_exposition"]
