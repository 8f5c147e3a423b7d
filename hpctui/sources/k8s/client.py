"""A thin, blocking layer over the official ``kubernetes`` client.

The client loads the kubeconfig (or the in-cluster service account), does TLS and auth
and serialises requests; responses are decoded here with msgspec straight into dicts,
because the generated model classes cost ~1 ms per pod (10 s for 10,000 pods). Only
called from worker threads of the source, never from the event loop.

Bounded (issue #19 §5): every answer is read in chunks up to ``max_answer_mib``; a watch
line longer than ``max_watch_line_mib`` ends the watch (the source relists), and a line that
is not a JSON object is dropped and reported to the caller, never silently. Redirects are
refused (``retries = 0`` makes urllib3 raise instead of following one), so the bearer token
or client certificate only ever goes to the configured server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.sources.bounded import CHUNK, MIB, AnswerTooLarge, LineTooLong, gather_capped, json_error, split_lines
from hpctui.sources.k8s.settings import K8sSettings

_JSON = msgspec.json.Decoder()


class K8sError(Exception):
    """One failed request, phrased for a status line: HTTP status, verb, resource, server message."""

    def __init__(self, status: int, message: str, *, verb: str = "", resource: str = "", reason: str = "") -> None:
        self.status = status
        self.verb = verb
        self.resource = resource
        self.reason = clean_text(reason)
        self.message = redact_url(clean_text(message))
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.status == 403:
            return f"403 Forbidden: {self.verb} {self.resource} refused: {self.message}"
        if self.status == 0:
            return f"{self.verb} {self.resource}: {self.message}"
        return f"{self.status} {self.reason or ''}: {self.verb} {self.resource}: {self.message}".replace("  ", " ")


def load_api_client(settings: K8sSettings) -> Any:
    """An ``ApiClient`` from the kubeconfig (context) or the in-cluster service account."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    try:
        if settings.in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            path = str(Path(settings.kubeconfig).expanduser()) if settings.kubeconfig else None
            config.load_kube_config(config_file=path, context=settings.context,
                                    client_configuration=cfg, persist_config=False)
    except ConfigException as exc:
        raise K8sError(0, f"kubeconfig: {exc}", verb="load", resource="config") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:  # unreadable or malformed kubeconfig
        where = settings.kubeconfig or "$KUBECONFIG or ~/.kube/config"
        raise K8sError(0, f"kubeconfig {where}: {type(exc).__name__}: {exc}", verb="load", resource="config") from None
    cfg.retries = 0  # the source has its own backoff; urllib3's silent retries would hide a dead server
    return client.ApiClient(cfg)


class WatchBroken(K8sError):
    """The watch stream cannot be trusted any more (a line over the cap): relist, then watch."""


def _is_redirect_refusal(exc: BaseException) -> bool:
    """urllib3 with ``retries = 0`` met a 3xx: it raises MaxRetryError("too many redirects")."""
    reason = getattr(exc, "reason", None)
    return type(exc).__name__ == "MaxRetryError" and "redirect" in str(reason).lower()


class KubeClient:
    """Raw JSON requests through the official client's ApiClient (auth, TLS, serialisation)."""

    def __init__(self, settings: K8sSettings, api_client: Any | None = None) -> None:
        self.settings = settings
        self._api = api_client
        self._lock = threading.Lock()
        self._open: set[Any] = set()  # streaming responses, closed by close()
        self.closed = False

    @property
    def api(self) -> Any:
        with self._lock:
            if self._api is None:
                self._api = load_api_client(self.settings)
            return self._api

    def close(self) -> None:
        self.closed = True
        with self._lock:
            streams = list(self._open)
        for resp in streams:
            try:
                resp.response.shutdown() if hasattr(resp.response, "shutdown") else resp.response.close()
            except Exception:
                pass

    def _call(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
              content_type: str | None = None, timeout: float | tuple[float, float] | None = None,
              verb: str = "", resource: str = "") -> Any:
        api = self.api
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        try:
            m, url, hdrs, b, post = api.param_serialize(method=method, resource_path=path, query_params=params,
                                                        header_params=headers, body=body,
                                                        auth_settings=["BearerToken"])
            return api.call_api(m, url, hdrs, b, post,
                                _request_timeout=timeout if timeout is not None else self.settings.timeout_s)
        except Exception as exc:  # connection refused, TLS, timeout: ApiException(status=0) or urllib3 errors
            if isinstance(exc, K8sError):
                raise
            if _is_redirect_refusal(exc):
                raise K8sError(0, "the API server answered with a redirect: redirects are refused (the "
                               "credentials stay with the configured server)", verb=verb or method.lower(),
                               resource=resource) from None
            status = getattr(exc, "status", 0) or 0
            reason = getattr(exc, "reason", None) or str(exc)
            raise K8sError(int(status), _short(str(reason)), verb=verb or method.lower(), resource=resource) from None

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, verb: str = "", resource: str = "",
                ok: tuple[int, ...] = ()) -> tuple[int, Any]:
        """One request; returns (status, decoded body). Raises K8sError for a non-2xx not in ``ok``."""
        resp = self._call(method, path, query=query, body=body, content_type=content_type, verb=verb,
                          resource=resource)
        data = self.read_body(resp, verb or method.lower(), resource)
        try:
            doc = _JSON.decode(data) if data else {}
        except msgspec.DecodeError as exc:
            if 200 <= resp.status <= 299:
                raise K8sError(0, json_error(exc), verb=verb or method.lower(), resource=resource) from None
            doc = {"message": data[:200].decode("utf-8", "replace")}
        if not 200 <= resp.status <= 299 and resp.status not in ok:
            raise error_from(resp.status, doc, verb or method.lower(), resource, resp.reason)
        return resp.status, doc

    def read_body(self, resp: Any, verb: str, resource: str) -> bytes:
        """A response's body, read in chunks up to ``max_answer_mib`` (else K8sError, connection closed)."""
        raw = resp.response
        limit = self.settings.max_answer_mib * MIB
        try:
            length = raw.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise AnswerTooLarge(limit, int(length))
            return gather_capped(raw.stream(CHUNK), limit)
        except AnswerTooLarge as exc:
            try:
                raw.close()
            except Exception:
                pass
            raise K8sError(0, f"{exc} (max_answer_mib = {self.settings.max_answer_mib}): reading stopped",
                           verb=verb, resource=resource) from None
        finally:
            try:
                raw.release_conn()
            except Exception:
                pass

    def list_all(self, path: str, *, query: dict[str, Any] | None = None, resource: str = "") -> tuple[list[Any], str]:
        """Every item of a (paginated) list and the list's resourceVersion."""
        items: list[Any] = []
        cont: str | None = None
        rv = ""
        while True:
            q = dict(query or {}, limit=self.settings.page_size)
            if cont:
                q["continue"] = cont
            _, doc = self.request("GET", path, query=q, verb="list", resource=resource)
            page = doc.get("items") if isinstance(doc, dict) else None
            items.extend(page if isinstance(page, list) else [])
            meta = doc.get("metadata") if isinstance(doc, dict) else None
            meta = meta if isinstance(meta, dict) else {}
            rv = str(meta.get("resourceVersion") or rv)
            cont = meta.get("continue") or None
            if not cont:
                return items, rv

    def watch(self, path: str, *, resource_version: str, query: dict[str, Any] | None = None,
              resource: str = "", timeout_s: int | None = None,
              on_bad_line: Callable[[str], None] | None = None) -> Iterator[dict[str, Any]]:
        """Watch events (dicts with ``type`` and ``object``) until the server ends the watch.

        An ``ERROR`` event (e.g. 410 Gone) is yielded like any other; the caller decides. A
        line that is not a JSON object is dropped and described to ``on_bad_line``; a line
        over ``max_watch_line_mib`` raises :class:`WatchBroken` (events may be lost: relist).
        """
        timeout_s = timeout_s or self.settings.watch_timeout_s
        q = dict(query or {}, watch="true", resourceVersion=resource_version, allowWatchBookmarks="true",
                 timeoutSeconds=timeout_s)
        # read timeout: the server ends the watch after timeout_s; a silent connection longer than that is dead
        resp = self._call("GET", path, query=q, timeout=(self.settings.timeout_s, timeout_s + 30.0),
                          verb="watch", resource=resource)
        if not 200 <= resp.status <= 299:
            data = self.read_body(resp, "watch", resource)
            try:
                doc = _JSON.decode(data) if data else {}
            except msgspec.DecodeError:
                doc = {}
            raise error_from(resp.status, doc, "watch", resource, resp.reason)
        with self._lock:
            self._open.add(resp)
        limit = self.settings.max_watch_line_mib * MIB
        try:
            # amt: read at most CHUNK at a time (amt=None would read a whole chunked-encoding
            # chunk, or without chunking the whole endless answer, before yielding anything)
            for line in split_lines(resp.response.stream(amt=CHUNK, decode_content=False), limit):
                if self.closed:
                    return
                if not line.strip():
                    continue
                try:
                    event = _JSON.decode(line)
                except msgspec.DecodeError as exc:
                    if on_bad_line is not None:
                        on_bad_line(f"{json_error(exc)} of a {len(line):,}-byte line")
                    continue
                if isinstance(event, dict):
                    yield event
                elif on_bad_line is not None:
                    on_bad_line(f"a line that is JSON but not an event object ({type(event).__name__})")
        except LineTooLong as exc:
            if on_bad_line is not None:
                on_bad_line(str(exc))
            raise WatchBroken(0, f"{exc} (max_watch_line_mib = {self.settings.max_watch_line_mib}): "
                                 f"watch dropped, relisting", verb="watch", resource=resource) from None
        except Exception as exc:
            if self.closed:
                return
            raise K8sError(0, f"watch dropped: {type(exc).__name__}: {_short(str(exc))}", verb="watch",
                           resource=resource) from None
        finally:
            with self._lock:
                self._open.discard(resp)
            try:
                resp.response.release_conn()
            except Exception:
                pass


def error_from(status: int, doc: Any, verb: str, resource: str, reason: str | None = None) -> K8sError:
    message = doc.get("message") if isinstance(doc, dict) else None
    return K8sError(status, str(message or reason or "no message"), verb=verb, resource=resource,
                    reason=str(doc.get("reason") or reason or "") if isinstance(doc, dict) else "")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def q(name: str) -> str:
    """A path segment (names are DNS labels, but never trust them into a URL)."""
    return quote(name, safe="")
