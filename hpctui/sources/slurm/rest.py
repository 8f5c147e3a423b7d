"""slurmrestd backend: aiohttp over a unix socket (rest_auth/local) or HTTP(S) with a JWT.

The version is discovered once from ``/openapi/v3`` (what 22.05 serves) and the newest one
we support is used. Per version, some actions are not in the API (no node update before
v0.0.39, no requeue before v0.0.45); the source sends those to the CLI and says so.

Redirects are refused: slurmrestd never redirects, and following one would send
``X-SLURM-USER-TOKEN`` to whatever host it names. Answers are read streamed up to
``max_answer_mib``; the configured URL is shown with its userinfo redacted.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import aiohttp
import msgspec

from hpctui.base.sanitize import redact_url
from hpctui.model import ControllerHealth, SlurmPartition
from hpctui.model.action import ActionKind, TargetResult
from hpctui.model.scheduler import Reservation
from hpctui.sources.base import SourceError
from hpctui.sources.bounded import (
    MIB,
    AnswerTooLarge,
    NotJson,
    check_announced,
    json_error,
    json_fault,
    read_json_capped,
    read_prefix,
    size_text,
)
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.backend import Collected, Dropped, looks_unreachable, nodes_or_jobs, parse_off_loop
from hpctui.sources.slurm.jwt import JwtProvider
from hpctui.sources.slurm.parse.partitions import parse_partition_records_json
from hpctui.sources.slurm.parse.reservations import parse_reservations_json
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.verify import JobRow, query_ids, verify_cancel

T = TypeVar("T")

_SERVED = re.compile(r"^/slurm/(v0\.0\.\d+)/")
# An error answer is slurmrestd's small errors[] document; a longer one is read only this far
# (garbage of any size costs this much to describe, never a parse of the whole body).
ERROR_BODY_BYTES = 64 * 1024


def version_number(version: str) -> int:
    m = re.fullmatch(r"v0\.0\.(\d+)", version)
    if not m:
        raise SourceError(f"unknown Slurm REST version {version!r}")
    return int(m.group(1))


def rest_capabilities(version: str) -> frozenset[ActionKind]:
    """Which actions this REST version has an endpoint for (FACTS §7)."""
    n = version_number(version)
    kinds = {ActionKind.CANCEL_JOBS}  # DELETE job/{id}: every version
    if n >= 38:
        kinds |= {ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS}  # POST job/{id} {"hold": bool}
    if n >= 39:
        kinds |= {ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES}  # POST node/{name}
    if n >= 45:
        kinds |= {ActionKind.REQUEUE_JOBS}  # POST job/{id}/requeue (26.05; not tested live here)
    return frozenset(kinds)


class RestBackend:
    name = "rest"

    def __init__(self, settings: SlurmSettings, jwt: JwtProvider) -> None:
        assert settings.rest_url
        self.settings = settings
        self.jwt = jwt
        url = settings.rest_url
        if url.startswith("unix://"):
            self.socket_path: str | None = url.removeprefix("unix://")
            self.base = "http://localhost"
        else:
            self.socket_path = None
            parts = urlsplit(url)
            self.base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.version: str | None = settings.rest_version
        self.where = redact_url(url)  # the URL as shown: userinfo (a password) redacted
        self.max_answer = settings.max_answer_mib * MIB
        self.calls: list[str] = []
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def reset_calls(self) -> None:
        self.calls = []

    def capabilities(self) -> frozenset[ActionKind]:
        return rest_capabilities(self.version) if self.version else frozenset()

    # -- transport ------------------------------------------------------------
    async def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is not loop:
            await _retire_session(self._session, self._loop)
            self._session = None
        if self._session is None or self._session.closed:
            self._loop = loop
            connector: aiohttp.BaseConnector
            if self.socket_path:
                connector = aiohttp.UnixConnector(path=self.socket_path)
            else:
                connector = aiohttp.TCPConnector(ssl=self.settings.verify_tls)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s))
        return self._session

    async def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.jwt.configured:
            headers["X-SLURM-USER-NAME"] = self.settings.jwt_user or getpass.getuser()
            headers["X-SLURM-USER-TOKEN"] = await self.jwt.token()
        return headers

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                      query: dict[str, str] | None = None) -> tuple[int, bytes]:
        """One HTTP request; transport failures become a one-line SourceError.

        A redirect (3xx) is an error, never followed (the token stays with the configured
        host); an answer over ``max_answer_mib`` stops the read and is an error that says so.
        """
        headers = await self._headers()
        self.calls.append(f"{method} {path}")
        where = self.where
        started = False
        try:
            session = await self._get_session()
            async with session.request(method, self.base + path, json=body, params=query,
                                       headers=headers, allow_redirects=False) as resp:
                started = True
                if 300 <= resp.status <= 399:
                    raise SourceError(self._redirect_error(resp.status, resp.headers.get("Location", ""), path))
                return resp.status, await self._read(resp, path)
        except TimeoutError as exc:
            if started:  # the answer began and did not finish in time: not an unreachable controller
                raise SourceError(f"slurmrestd at {where}: the answer to {path} did not finish within "
                                  f"{self.settings.timeout_s:g}s") from None
            # slurmrestd took the request and sat on it: in practice it is waiting for slurmctld
            raise SourceError(f"slurmctld unreachable: slurmrestd at {where} did not answer within "
                              f"{self.settings.timeout_s:g}s") from exc
        except aiohttp.ClientError as exc:
            if started:
                raise SourceError(redact_url(f"slurmrestd at {where}: the answer to {path} broke off: "
                                             f"{type(exc).__name__}: {exc}")) from None
            raise SourceError(redact_url(f"slurmrestd unreachable at {where}: {exc}")) from None

    def _redirect_error(self, status: int, location: str, path: str) -> str:
        target = redact_url(location)[:200] or "nowhere"
        return (f"slurmrestd at {self.where} answered {path} with HTTP {status} redirect to {target}: "
                f"redirects are refused (the token would go with it); set rest_url to the real address")

    async def _read(self, resp: aiohttp.ClientResponse, path: str) -> bytes:
        """The body, read in chunks up to ``max_answer_mib`` (then SourceError, connection dropped).

        An error answer (not 200) is read only as far as :data:`ERROR_BODY_BYTES`, and a 200
        answer that does not start like JSON is refused after its first chunk: garbage of any
        size costs one chunk, never a download of the whole of it.
        """
        chunks = resp.content.iter_chunked(64 * 1024)
        try:
            if resp.status != 200:
                body = await read_prefix(chunks, ERROR_BODY_BYTES)
                if not resp.content.at_eof():
                    resp.close()
                return body
            check_announced(resp.content_length, self.max_answer)
            return await read_json_capped(chunks, self.max_answer)
        except AnswerTooLarge as exc:
            resp.close()
            raise SourceError(f"slurmrestd {exc} on {path} (max_answer_mib = {self.settings.max_answer_mib}): "
                              f"reading stopped") from None
        except NotJson as exc:
            resp.close()
            raise SourceError(f"slurmrestd {path}: {exc}: reading stopped") from None

    def _error(self, status: int, body: bytes, path: str) -> SourceError:
        msgs = parse.parse_rest_errors(body[:ERROR_BODY_BYTES])
        text = "; ".join(msgs) or f"HTTP {status}"
        if status in (401, 403, 511):  # 511: 23.02+ when slurmctld rejects the token (24.11, live)
            if self.jwt.configured:
                return SourceError(f"JWT expired or invalid (HTTP {status}: {text})")
            return SourceError(f"slurmrestd refused authentication (HTTP {status}: {text})")
        if status == 404:
            return SourceError(f"slurmrestd does not serve {path} (HTTP 404; unknown REST version {self.version}?)")
        if looks_unreachable(text):
            return SourceError(f"slurmctld unreachable: slurmrestd says {text}")
        if self.jwt.configured and msgs and all(m.startswith("Unspecified error") for m in msgs):
            # 22.05: the controller rejects a bad/expired token and slurmrestd only says this
            return SourceError(f"JWT expired or invalid (slurmctld rejected the request: {text})")
        return SourceError(f"slurmrestd HTTP {status} on {path}: {text}")

    async def get(self, what: str) -> bytes:
        path = f"/slurm/{self.version}/{what}"
        status, body = await self.request("GET", path)
        if status != 200:
            raise self._error(status, body, path)
        return body

    # -- discovery --------------------------------------------------------------
    async def discover(self) -> str:
        """Pick the REST version (settings, else newest supported from /openapi/v3)."""
        if self.version:
            if self.version not in parse.PARSEABLE_REST_VERSIONS:
                raise SourceError(f"unsupported Slurm REST version {self.version} "
                                  f"(supported: {', '.join(parse.PARSEABLE_REST_VERSIONS)})")
            return self.version
        served: set[str] = set()
        for path in ("/openapi/v3", "/openapi"):
            status, body = await self.request("GET", path)
            if status == 200:
                served = await parse_off_loop(_served_versions, body, path)
                break
            if status in (401, 403):
                raise self._error(status, body, path)
        try:
            self.version = parse.pick_rest_version(sorted(served))
        except parse.SlurmParseError as exc:
            raise SourceError(str(exc)) from exc
        return self.version

    # -- reading ----------------------------------------------------------------
    async def collect(self) -> Collected:
        version = await self.discover()
        got = await asyncio.gather(self.get("nodes"), self.get("jobs"), self.get("diag"), self.get("partitions"),
                                   return_exceptions=True)
        nodes_b, jobs_b, diag_b, parts_b = got
        warnings: list[str] = []
        bad_nodes, bad_jobs = Dropped("node"), Dropped("job")

        async def parsed(fn: Callable[[bytes], T], data: object, what: str) -> T | BaseException:
            if isinstance(data, BaseException):
                return data
            assert isinstance(data, bytes)
            try:
                await self._check_json(data, what)
                return await parse_off_loop(fn, data)
            except parse.SlurmParseError as exc:
                return SourceError(f"cannot read slurmrestd {version} output: {exc}")
            except SourceError as exc:
                return exc

        # nodes and jobs are the refresh; one of them failing is a warning, both the source's failure
        nodes, jobs = nodes_or_jobs(
            await parsed(lambda d: parse.parse_nodes_json(d, version, on_invalid=bad_nodes, drops=bad_nodes.values),
                         nodes_b, "nodes"),
            await parsed(lambda d: parse.parse_jobs_json(d, version, on_invalid=bad_jobs, drops=bad_jobs.values), jobs_b, "jobs"),
            warnings)
        bad_nodes.report(warnings)
        bad_jobs.report(warnings)
        partitions: tuple[SlurmPartition, ...] | None = None
        try:  # one call: partition states/limits for the partitions view, node lists for v0.0.36 nodes
            if isinstance(parts_b, BaseException):
                raise parts_b
            assert isinstance(parts_b, bytes)
            await self._check_json(parts_b, "partitions")
            partitions = await parse_off_loop(parse_partition_records_json, parts_b, version)
            if nodes and not any(n.partitions for n in nodes.values()):
                nodes = parse.fill_partitions(nodes, await parse_off_loop(parse.parse_partitions_json, parts_b,
                                                                          version))
        except parse.SlurmParseError as exc:
            warnings.append(f"partitions unreadable: {exc}")
        except SourceError as exc:
            warnings.append(f"partitions unavailable: {exc}")
        ctl: ControllerHealth
        if isinstance(diag_b, BaseException):
            if not isinstance(diag_b, Exception):
                raise diag_b
            # optional (e.g. PrivateData=usage for non-operators): keep nodes and jobs
            warnings.append(f"controller health unavailable: {diag_b}")
            ctl = ControllerHealth(reachable="unreachable" not in str(diag_b), detail=f"diag failed: {diag_b}")
        else:
            try:
                await self._check_json(diag_b, "diag")
                ctl = await parse_off_loop(parse.parse_diag_json, diag_b, version)
            except (parse.SlurmParseError, SourceError) as exc:
                warnings.append(f"diag unreadable: {exc}")
                ctl = ControllerHealth(reachable=True, detail="diag unreadable")
        return Collected(nodes=nodes, jobs=jobs, controller=ctl, warnings=warnings, partitions=partitions)

    async def read_reservations(self, warnings: list[str]) -> tuple[Reservation, ...] | None:
        """``GET reservations`` (optional: a failure is a warning and None)."""
        version = await self.discover()
        try:
            body = await self.get("reservations")
            await self._check_json(body, "reservations")
            dropped = Dropped("reservation")
            out = await parse_off_loop(lambda d: parse_reservations_json(d, version, on_invalid=dropped), body)
        except parse.SlurmParseError as exc:
            warnings.append(f"reservations unreadable: {exc}")
            return None
        except SourceError as exc:
            warnings.append(f"reservations unavailable: {exc}")
            return None
        dropped.report(warnings)
        return out

    @staticmethod
    async def _check_json(body: bytes, what: str) -> None:
        """SourceError when ``body`` is not JSON at all (garbage), before a parser tries to repair it."""
        fault = await parse_off_loop(json_fault, body)
        if fault is not None:
            raise SourceError(f"slurmrestd {what}: {fault} of a {size_text(len(body))} answer: not a Slurm document")

    # -- acting -----------------------------------------------------------------
    def requests(self, kind: ActionKind, targets: tuple[str, ...],
                 params: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None, dict[str, str] | None]]:
        v = self.version
        out: list[tuple[str, str, dict[str, Any] | None, dict[str, str] | None]] = []
        for t in targets:
            q = quote(t, safe="")
            if kind is ActionKind.CANCEL_JOBS:
                sig = params.get("signal")
                out.append(("DELETE", f"/slurm/{v}/job/{q}", None, {"signal": sig} if sig else None))
            elif kind in (ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS):
                out.append(("POST", f"/slurm/{v}/job/{q}", {"hold": kind is ActionKind.HOLD_JOBS}, None))
            elif kind is ActionKind.DRAIN_NODES:
                out.append(("POST", f"/slurm/{v}/node/{q}", {"state": ["DRAIN"], "reason": params.get("reason", "")}, None))
            elif kind is ActionKind.RESUME_NODES:
                out.append(("POST", f"/slurm/{v}/node/{q}", {"state": ["RESUME"]}, None))
            elif kind is ActionKind.REQUEUE_JOBS:
                out.append(("POST", f"/slurm/{v}/job/{q}/requeue", None, None))
            else:
                raise ValueError(f"slurmrestd {v} cannot {kind.value}")
        return out

    def describe(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[str]:
        lines = []
        for method, path, body, query in self.requests(kind, targets, params):
            line = f"{method} {path}"
            if query:
                line += "?" + "&".join(f"{k}={v}" for k, v in query.items())
            if body is not None:
                line += " " + json.dumps(body)
            lines.append(line)
        return lines

    async def act(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        results = []
        for target, (method, path, body, query) in zip(targets, self.requests(kind, targets, params), strict=True):
            try:
                status, data = await self.request(method, path, body, query)
            except SourceError as exc:
                results.append(TargetResult(target=target, ok=False, message=str(exc)))
                continue
            msgs = parse.parse_rest_errors(data[:ERROR_BODY_BYTES]) if data else []
            if status == 200 and not msgs:
                results.append(TargetResult(target=target, ok=True, message="done"))
            else:
                text = "; ".join(msgs) or f"HTTP {status}"
                results.append(TargetResult(target=target, ok=False, message=f"HTTP {status}: {text}"))
        if kind is ActionKind.CANCEL_JOBS:
            results = await self._verify_cancel(results)
        return results

    async def job_rows(self, targets: tuple[str, ...]) -> list[JobRow]:
        """The targets' own records: ``GET job/{id}`` per job id (never the whole queue)."""
        rows: list[JobRow] = []
        for job_id in query_ids(targets):
            path = f"/slurm/{self.version}/job/{job_id}"
            status, body = await self.request("GET", path)
            if status != 200:
                msgs = "; ".join(parse.parse_rest_errors(body[:ERROR_BODY_BYTES])).lower()
                if "invalid job id" in msgs:
                    continue  # purged: gone
                raise self._error(status, body, path)
            try:
                await self._check_json(body, path)
                jobs = await parse_off_loop(lambda d: parse.parse_jobs_json(
                    d, self.version, include_finished=True, on_invalid=lambda _m: None), body)
            except parse.SlurmParseError as exc:
                raise SourceError(f"cannot read {path}: {exc}") from exc
            rows.extend(JobRow(job_id=str(j.job_id), display_id=j.display_id, state=j.state) for j in jobs)
        return rows

    async def _verify_cancel(self, results: list[TargetResult]) -> list[TargetResult]:
        return await verify_cancel(results, self.job_rows, "DELETE succeeded")

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


class _OpenApi(msgspec.Struct):
    paths: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


_OPENAPI = msgspec.json.Decoder(_OpenApi)


def _served_versions(body: bytes, path: str) -> set[str]:
    """The REST versions an OpenAPI document serves (``/slurm/v0.0.NN/...`` paths)."""
    try:
        doc = _OPENAPI.decode(body)
    except msgspec.DecodeError as exc:  # ValidationError (a wrong type) is a DecodeError too
        raise SourceError(f"slurmrestd {path} is not an OpenAPI document: {json_error(exc)}") from None
    return {m.group(1) for p in doc.paths if (m := _SERVED.match(p))}


async def _retire_session(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop | None) -> None:
    """Close a session made on another event loop (each asyncio.run has its own).

    Its connections belong to that loop: closed there if it is still running (another
    thread); otherwise nothing can run on it (``transport.close()`` would raise "Event loop
    is closed"), so the connector is detached and its sockets are closed directly: no leak.
    """
    if session.closed:
        return
    if loop is not None and loop.is_running():
        fut = asyncio.run_coroutine_threadsafe(session.close(), loop)
        try:
            await asyncio.wait_for(asyncio.wrap_future(fut), timeout=2.0)
        except Exception:  # best effort: the other loop may be stuck
            pass
        return
    connector = session.connector
    session.detach()
    if connector is not None:
        _shutdown_connector_sockets(connector)


def _shutdown_connector_sockets(connector: aiohttp.BaseConnector) -> None:
    """Close the raw sockets of a connector whose loop is gone (its transports cannot)."""
    conns: dict[Any, Any] = getattr(connector, "_conns", {}) or {}
    protos = [entry[0] for entries in conns.values() for entry in entries]
    protos.extend(getattr(connector, "_acquired", ()) or ())
    for proto in protos:
        transport = getattr(proto, "transport", None)
        sock = getattr(transport, "_sock", None)
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
    try:
        conns.clear()
        connector._closed = True  # no "Unclosed connector" warning at GC
    except Exception:
        pass
