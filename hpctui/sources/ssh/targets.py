"""Which nodes to probe, and how to reach each one.

Node names come from the other sources (cluster data: hostile until checked) and the
config's hostlist. Each name must be a valid host name before it is formatted into an
address; the address is then resolved through ssh_config (``Host``/``Match`` blocks:
``HostName``, ``Port``, ``User``, ``IdentityFile``, ``ProxyJump``, ``HostKeyAlias``)
with asyncssh's own OpenSSH config parser, and explicit settings win over ssh_config.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.sources.ssh.settings import SshSettings


@dataclass(frozen=True)
class Target:
    """One node's resolved SSH endpoint (or why it has none)."""

    node: str
    host: str = ""
    port: int = 22
    user: str = ""
    identity_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    host_key_alias: str | None = None
    error: str | None = None  # set: the node is never dialled (invalid name, bad template)


def local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry and no LOGNAME/USER: OpenSSH would fail too
        return "root"


def config_paths(settings: SshSettings) -> list[Path]:
    if settings.ssh_config is not None:
        return [Path(p).expanduser() for p in settings.ssh_config]
    default = Path("~/.ssh/config").expanduser()
    return [default] if default.is_file() else []


def select_nodes(settings: SshSettings, known: Iterable[str]) -> list[str]:
    """Nodes the other sources know (when ``from_snapshot``) ∪ ``nodes`` − ``exclude``, sorted.

    Raises HostlistError for a bad ``nodes``/``exclude`` expression (a config error)."""
    names: set[str] = set(known) if settings.from_snapshot else set()
    if settings.nodes:
        names.update(expand(settings.nodes))
    if settings.exclude:
        names.difference_update(expand(settings.exclude))
    return sorted(names)


class Resolver:
    """Resolves node names to :class:`Target` through the template and ssh_config."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self.paths = config_paths(settings)
        self.local_user = local_user()

    def _config(self, alias: str) -> object | None:
        if not self.paths:
            return None
        from asyncssh.config import SSHClientConfig

        s = self.settings
        return SSHClientConfig.load(None, [str(p) for p in self.paths], False, False, False, self.local_user,
                                    s.user if s.user is not None else (), alias,
                                    s.port if s.port is not None else ())

    def endpoint(self, alias: str) -> tuple[str, int, str, tuple[str, ...], str | None, str | None]:
        """(host, port, user, identity files, proxy jump, host key alias) for one ssh_config alias."""
        s = self.settings
        cfg = self._config(alias)

        def get(option: str, default: object = None) -> object:
            return cfg.get(option, default) if cfg is not None else default  # type: ignore[attr-defined]

        host = str(get("Hostname", alias) or alias)
        port = s.port if s.port is not None else int(get("Port", 22) or 22)  # type: ignore[call-overload]
        user = s.user if s.user is not None else str(get("User", self.local_user) or self.local_user)
        if s.identity_files is not None:
            idents = tuple(str(Path(p).expanduser()) for p in s.identity_files)
        else:
            raw = get("IdentityFile", ()) or ()
            idents = tuple(str(Path(str(p)).expanduser()) for p in raw)  # type: ignore[attr-defined]
        jump = s.proxy_jump if s.proxy_jump is not None else get("ProxyJump")
        jump_s = str(jump) if jump and str(jump).lower() != "none" else None
        alias_key = get("HostKeyAlias")
        return host, port, user, idents, jump_s, (str(alias_key) if alias_key else None)

    def resolve(self, node: str) -> Target:
        if not is_valid_hostname(node):
            return Target(node=node, error="not a valid host name; not dialled")
        alias = self.settings.host.format(node=node) if self.settings.host else node
        if not is_valid_hostname(alias):
            return Target(node=node, error=f"address {alias!r} is not a valid host name; not dialled")
        try:
            host, port, user, idents, jump, key_alias = self.endpoint(alias)
        except Exception as exc:  # a broken ssh_config: one line for this node
            return Target(node=node, error=f"ssh_config: {exc}")
        return Target(node=node, host=host, port=port, user=user, identity_files=idents, proxy_jump=jump,
                      host_key_alias=key_alias)


__all__ = ["HostlistError", "Resolver", "Target", "config_paths", "local_user", "select_nodes"]
