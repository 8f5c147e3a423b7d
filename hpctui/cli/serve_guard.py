"""Who may talk to ``hpctui serve``: the checks in front of every request to textual-serve's app.

In this order, every HTTP request and websocket handshake:

1. ``Host`` must be one this server answers to (the bound address with its port, ``localhost`` and
   the loopback literals when bound to loopback or a wildcard, and ``[serve] hostnames``): else
   421. A DNS-rebinding page (``evil.example`` resolving to 127.0.0.1) sends its own name.
2. ``Origin``, when the client sends one, must be the served page's own origin (scheme http/https,
   the same host and port as ``Host``): else 403. Browsers always send it on a websocket
   handshake, so a page from any other origin cannot open ``/ws``. A client without ``Origin`` is
   not a browser (no web page can drive it) and is let through to the token check.
3. The token, when one is required: ``?token=`` in the URL or the cookie it sets, compared with
   :func:`hmac.compare_digest`: else 401 (none) or 403 (wrong). ``GET /?token=…`` with the right
   token sets an HttpOnly, SameSite=Strict cookie and redirects to the same URL without it.
4. At most ``max_sessions`` websockets (each is one app process) at once: one more is answered
   503 before any process starts, and so is the page itself while the sessions are full.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from hpctui.core.config import ConfigError
from hpctui.core.wall_settings import ServeSettings, is_loopback

WS_PATH = "/ws"
TOKEN_PARAM = "token"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 512
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
WILDCARD_HOSTS = ("0.0.0.0", "::", "[::]")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Access:
    """What the guard accepts: ``Host`` header values, the token (None: none required), the cap."""

    port: int
    host_headers: frozenset[str]
    token: str | None
    max_sessions: int
    token_file: Path | None = None

    @property
    def cookie_name(self) -> str:
        """One cookie per port: browsers do not keep cookies apart by port."""
        return f"hpctui_token_{self.port}"


@dataclass
class Sessions:
    """The websockets now open (one app process each); a slot is taken before any ``await``."""

    limit: int
    active: int = field(default=0)

    def acquire(self) -> bool:
        if self.active >= self.limit:
            return False
        self.active += 1
        return True

    def release(self) -> None:
        self.active = max(0, self.active - 1)

    @property
    def full(self) -> bool:
        return self.active >= self.limit


def _bracketed(host: str) -> str:
    host = host.lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_headers(bind_host: str, port: int, hostnames: list[str]) -> frozenset[str]:
    """Every ``Host`` header value this server answers to (lower case).

    The bound address with ``:port``; with a loopback or wildcard bind also ``localhost``,
    ``127.0.0.1`` and ``[::1]`` (names no DNS answer can point elsewhere); each configured name as
    given (``name:port`` exactly, a bare ``name`` both bare, for a proxy on the scheme's default
    port, and with ``:port``). Port 80 also allows the bare names (browsers omit a default port).
    """
    names: set[str] = set()
    bind = _bracketed(bind_host)
    if bind not in WILDCARD_HOSTS:
        names.add(bind)
    if is_loopback(bind_host) or bind in WILDCARD_HOSTS:
        names.update(LOOPBACK_NAMES)
    headers = {f"{name}:{port}" for name in names}
    if port == 80:
        headers.update(names)
    for entry in hostnames:
        entry = entry.lower()
        headers.add(entry)
        if not entry.endswith("]") and ":" not in entry.rsplit("]", 1)[-1]:
            headers.add(f"{entry}:{port}")
    return frozenset(headers)


def _host_port(netloc: str, scheme: str) -> tuple[str, int] | None:
    """(host in lower case, port with the scheme's default) of ``host[:port]``, or None if malformed."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.username is not None or parts.path:
        return None
    return parts.hostname.lower(), port if port is not None else DEFAULT_PORTS[scheme]


def origin_matches(origin: str, host_header: str) -> bool:
    """``Origin`` is the served page's own origin: http(s), the same host and port as ``Host``.

    ``null`` (a sandboxed frame, a file) and any other scheme are refused.
    """
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or parts.path not in ("", "/") or parts.query or parts.fragment:
        return False
    ours = _host_port(host_header, parts.scheme)
    theirs = _host_port(parts.netloc, parts.scheme)
    return ours is not None and ours == theirs


def token_matches(expected: str, presented: str | None) -> bool:
    """Constant-time comparison (:func:`hmac.compare_digest`) of what the client sent."""
    if presented is None:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode("utf-8", "surrogateescape"))


def new_token() -> str:
    return secrets.token_urlsafe(32)


def read_token_file(path: Path) -> str:
    """The token in ``path``: a regular file that only its owner (us or root) can read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"[serve] token_file {str(path)!r}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"[serve] token_file {str(path)!r}: not a regular file")
        if st.st_mode & 0o077:
            raise ConfigError(f"[serve] token_file {str(path)!r}: mode {stat.S_IMODE(st.st_mode):04o} lets group or "
                              f"others read or write it; chmod 600 {path}")
        if st.st_uid not in (os.geteuid(), 0):
            raise ConfigError(f"[serve] token_file {str(path)!r}: owned by uid {st.st_uid}, not by us or root")
        data = os.read(fd, MAX_TOKEN_CHARS + 2)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS or not set(token) <= TOKEN_CHARS:
        raise ConfigError(f"[serve] token_file {str(path)!r}: the token must be {MIN_TOKEN_CHARS} to "
                          f"{MAX_TOKEN_CHARS} characters of A-Z a-z 0-9 - . _ ~ (e.g. python3 -c "
                          "'import secrets; print(secrets.token_urlsafe(32))')")
    return token


def token_required(settings: ServeSettings, host: str, read_only: bool, asked: bool) -> bool:
    """A token for anything beyond a loopback read-only display, or when the config/``--token`` asks."""
    return asked or settings.require_token or bool(settings.token_file) or not is_loopback(host) or not read_only


def access_for(settings: ServeSettings, host: str, port: int, read_only: bool, *, asked: bool,
               max_sessions: int | None = None) -> Access:
    """The guard's settings for this run (a token read from ``token_file``, else a random one)."""
    token: str | None = None
    token_file = Path(settings.token_file).expanduser() if settings.token_file else None
    if token_required(settings, host, read_only, asked):
        token = read_token_file(token_file) if token_file is not None else new_token()
    cap = max_sessions if max_sessions is not None else settings.max_sessions
    if not 1 <= cap <= 256:
        raise ConfigError(f"--max-sessions: between 1 and 256, not {cap}")
    return Access(port=port, host_headers=host_headers(host, port, settings.hostnames), token=token,
                  max_sessions=cap, token_file=token_file)


def _refuse(status: int, reason: str) -> web.Response:
    return web.Response(status=status, text=f"hpctui serve: {reason}\n",
                        headers={"Cache-Control": "no-store", "Connection": "close", "X-Content-Type-Options": "nosniff"})


def is_https(request: web.Request) -> bool:
    """The browser talks https: to us, or to a reverse proxy in front that says so (X-Forwarded-Proto)."""
    return request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"


def _token_check(access: Access, request: web.Request) -> web.StreamResponse | None:
    """None when the request may go on; else the refusal, or the redirect that sets the cookie."""
    assert access.token is not None
    in_url = request.query.get(TOKEN_PARAM)
    if in_url is not None:
        if not token_matches(access.token, in_url):
            return _refuse(403, "wrong token")
        if request.path == "/" and request.method == "GET":
            response = web.Response(status=303, headers={"Location": str(request.rel_url.without_query_params(
                TOKEN_PARAM)), "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
            response.set_cookie(access.cookie_name, access.token, path="/", httponly=True, samesite="Strict",
                                secure=is_https(request))
            return response
        return None
    cookie = request.cookies.get(access.cookie_name)
    if cookie is None:
        return _refuse(401, "a token is required: open the URL hpctui serve printed at start (…/?token=…)")
    if not token_matches(access.token, cookie):
        return _refuse(403, "wrong token (the cookie is from another run? open the URL printed at start)")
    return None


def guard(access: Access, sessions: Sessions) -> Middleware:
    """The aiohttp middleware: Host, Origin, token, then the session cap (see the module doc)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if host.lower() not in access.host_headers:
            return _refuse(421, f"Host {host[:100]!r} is not an address of this server (a DNS-rebinding "
                                "page?); a name of your own goes in [serve] hostnames")
        origin = request.headers.get("Origin")
        if origin is not None and not origin_matches(origin, host):
            return _refuse(403, f"Origin {origin[:100]!r} is not this server's page: cross-origin access refused")
        if access.token is not None and (refused := _token_check(access, request)) is not None:
            return refused
        if request.path == WS_PATH:
            if not sessions.acquire():
                return _busy(access)
            try:
                return await handler(request)
            finally:
                sessions.release()
        if request.path == "/" and sessions.full:
            return _busy(access)
        response = await handler(request)
        if not response.prepared:
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            response.headers.setdefault("X-Frame-Options", "DENY")
            response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
            if request.path == "/":
                response.headers.setdefault("Cache-Control", "no-store")
        return response

    return middleware


def _busy(access: Access) -> web.Response:
    return _refuse(503, f"{access.max_sessions} sessions already open (max_sessions = {access.max_sessions}): "
                        "close another tab, or raise [serve] max_sessions / --max-sessions")
