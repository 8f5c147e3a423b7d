"""Which nodes to probe, and how to reach each one.

Node names come from the other sources (cluster data: hostile until checked) and the
config's hostlist. Each name must be a valid host name before it is formatted into an
address; the address is then resolved through ssh_config (``Host``/``Match`` blocks:
``HostName``, ``Port``, ``User``, ``IdentityFile``, ``ProxyJump``, ``HostKeyAlias``)
with asyncssh's own OpenSSH config parser, and explicit settings win over ssh_config.
"""

from __future__ import annotations

import atexit
import fnmatch
import getpass
import os
import shutil
import tempfile
import threading
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


class _ConfigFile:
    """One ssh_config file, split once into its global part and its ``Host``/``Match`` blocks.

    asyncssh parses a whole file per host (a shlex split per line): with one ``Host`` block per
    node that is O(nodes²) at start (48 ms per node at 1,024 blocks). Here each host is given only
    the blocks that can apply to it (the global part, every ``Match`` block, the ``Host`` blocks
    whose patterns match), and asyncssh parses that. A file with ``Include`` is used whole.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.whole = False
        self.blocks: list[tuple[list[str] | None, str]] = []  # (Host patterns | None = keep, text)
        try:
            lines = path.read_text().splitlines(keepends=True)
        except OSError:
            lines = []
        patterns: list[str] | None = None
        cur: list[str] = []
        for line in lines:
            words = line.replace("=", " ", 1).split()
            key = words[0].lower() if words and not words[0].startswith("#") else ""
            if key == "include":
                self.whole = True
            if key in ("host", "match"):
                self.blocks.append((patterns, "".join(cur)))
                patterns = [w.lower() for w in words[1:]] if key == "host" else None
                cur = []
            cur.append(line)
        self.blocks.append((patterns, "".join(cur)))
        # blocks of literal host names are looked up, not matched (one block per node is common)
        self.literal: dict[str, list[int]] = {}
        self.other: list[int] = []
        for i, (pats, _text) in enumerate(self.blocks):
            names = [p for word in pats or () for p in word.split(",") if p]
            if pats is not None and names and not any(c in p for p in names for c in "*?!["):
                for name in names:
                    self.literal.setdefault(name, []).append(i)
            else:
                self.other.append(i)

    def text_for(self, alias: str) -> str:
        host = alias.lower()
        out = []
        for i in sorted(self.literal.get(host, []) + self.other):
            patterns, text = self.blocks[i]
            if patterns is None or _host_matches(host, patterns):
                out.append(text)
        return "".join(out)


def _host_matches(host: str, patterns: list[str]) -> bool:
    """OpenSSH ``Host`` semantics: any positive pattern matches and no negated one does."""
    hit = False
    for pattern in (p for word in patterns for p in word.split(",") if p):
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(host, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(host, pattern):
            hit = True
    return hit


def _scratch_parent() -> str | None:
    """Where the per-host filtered ssh_config files are written: ``/dev/shm`` (memory) when usable, else
    the temp dir. One file is rewritten per node; on ext4 each rewrite of a truncated file is flushed on
    close (``auto_da_alloc``): ~4 ms a node on a busy disk, 4 s before the first of 1,024 connects."""
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
            return str(shm)
    except OSError:
        pass
    return None


class Resolver:
    """Resolves node names to :class:`Target` through the template and ssh_config."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self.paths = config_paths(settings)
        self.local_user = local_user()
        self._files = [_ConfigFile(p) for p in self.paths]
        self._scratch: Path | None = None
        # one alias at a time writes the scratch files and reads them back: the source resolves nodes in a worker
        # thread while the event loop resolves a jump host, and both write the same files
        self._scratch_lock = threading.Lock()

    def _filtered_paths(self, alias: str) -> list[str]:
        if any(f.whole for f in self._files):
            return [str(p) for p in self.paths]
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="hpctui-ssh-config-", dir=_scratch_parent()))
            atexit.register(shutil.rmtree, self._scratch, True)
        out = []
        for i, f in enumerate(self._files):
            scratch = self._scratch / f"config.{i}"
            scratch.write_text(f.text_for(alias))
            out.append(str(scratch))
        return out

    def _config(self, alias: str) -> object | None:
        if not self.paths:
            return None
        from asyncssh.config import SSHClientConfig

        s = self.settings
        with self._scratch_lock:
            return SSHClientConfig.load(None, self._filtered_paths(alias), False, False, False, self.local_user,
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
