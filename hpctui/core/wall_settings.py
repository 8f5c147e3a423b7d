"""Config of the wall display (``[wall]``) and of ``hpctui serve`` (``[serve]``).

Both are top-level tables of the config file::

    [wall]
    rotate_s = 15                                   # seconds each view stays on screen
    views = ["heatmap", "problems", "queue", "events"]

    [serve]
    host = "127.0.0.1"        # loopback unless allow_remote = true
    port = 8765
    allow_actions = false     # the browser app is read-only unless this (or --allow-actions) says otherwise
    allow_remote = false      # a non-loopback host is refused unless this is true
    max_sessions = 4          # browser sessions (app processes) at once; one more gets HTTP 503
    hostnames = []            # Host names besides the bound address, e.g. a reverse proxy's "hpc.example.org"
    token_file = ""           # the access token, from a file only its owner can read (else a random one)
    require_token = false     # a token even for a loopback read-only display (always: non-loopback, actions)
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

import msgspec

WallView = Literal["heatmap", "problems", "queue", "events", "pods"]
WALL_VIEWS: tuple[str, ...] = ("heatmap", "problems", "queue", "events", "pods")
DEFAULT_WALL_VIEWS: tuple[WallView, ...] = ("heatmap", "problems", "queue", "events")
# a Host header value: a DNS name, an IPv4 address or a bracketed IPv6 one, an optional port
HOSTNAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


class WallSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    rotate_s: Annotated[float, msgspec.Meta(ge=2, le=86_400)] = 15.0
    """Seconds each view stays on screen."""
    views: list[WallView] = msgspec.field(default_factory=lambda: list(DEFAULT_WALL_VIEWS))
    """Views in the order they rotate: "heatmap", "problems", "queue", "events", "pods"; one view: no rotation."""

    def __post_init__(self) -> None:
        if not self.views:
            raise ValueError("views: at least one view (heatmap, problems, queue, events, pods)")
        if len(set(self.views)) != len(self.views):
            raise ValueError("views: a view is listed twice")


class ServeSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    host: str = "127.0.0.1"
    """Address to listen on; loopback unless ``allow_remote = true``."""
    port: Annotated[int, msgspec.Meta(ge=1, le=65_535)] = 8765
    """Port to listen on."""
    allow_actions: bool = False
    """The browser app may act (else it is read-only, as without ``--allow-actions``); needs a token."""
    allow_remote: bool = False
    """A non-loopback ``host`` is allowed (a token is then always required)."""
    max_sessions: Annotated[int, msgspec.Meta(ge=1, le=256)] = 4
    """Browser sessions (app processes) at once; one more gets HTTP 503."""
    hostnames: list[str] = msgspec.field(default_factory=list)
    """Host names besides the bound address, ``"hpc.example.org"`` or ``"name:port"`` (a reverse proxy's)."""
    token_file: str = ""
    """The access token, from a file only its owner (or root) can read; empty: a random token per start."""
    require_token: bool = False
    """A token even for a loopback read-only display (same as ``--token``)."""
    shared_collector: bool = True
    """One collector process polls the cluster for every browser session (N tabs cost the cluster what one
    costs); false: each tab's app polls on its own. A demo with actions allowed always polls per session."""

    def __post_init__(self) -> None:
        if not self.host.strip():
            raise ValueError("host: empty")
        for name in self.hostnames:
            if not HOSTNAME.fullmatch(name):
                raise ValueError(f"hostnames: not a host name or host:port: {name!r}")


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost``: reachable from this machine only."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
