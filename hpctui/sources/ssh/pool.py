"""A pool of persistent asyncssh client connections, one per node.

- Keys are read once (``asyncssh.load_keypairs``) and known_hosts once
  (``asyncssh.read_known_hosts``); every connection gets the loaded objects, never paths
  (passing paths costs ~15× more CPU per connection).
- At most ``max_handshakes`` handshakes are in flight (a bastion's ``MaxStartups`` drops bursts).
- Jump hosts (``ProxyJump``) are one shared connection per jump spec, reopened when lost;
  node connections are tunnelled over it (``tunnel=``).
- Host keys are verified unless the settings opt out explicitly.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncssh

from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.targets import Resolver, Target


def raise_nofile_limit() -> tuple[int, int]:
    """Raise RLIMIT_NOFILE's soft limit to the hard limit (one fd per node); returns (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard_target = max(soft, 1 << 20) if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < hard_target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard_target, hard))
            soft = hard_target
        except (ValueError, OSError):
            pass
    return soft, hard


def describe_error(exc: BaseException, connect_timeout_s: float | None = None) -> str:
    """One clear line for a failed connect or stream."""
    if isinstance(exc, JumpError):
        return str(exc)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return f"host key not verified (unknown or changed host key; check known_hosts): {exc.reason}"
    if isinstance(exc, asyncssh.PermissionDenied):
        return f"authentication refused: {exc.reason}"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"disconnected: {exc.reason}"
    if isinstance(exc, asyncssh.ChannelOpenError):
        return f"channel refused: {exc.reason}"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return f"connect timed out after {connect_timeout_s:g} s" if connect_timeout_s else "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"


def _load_keys(identity_files: tuple[str, ...]) -> Sequence[Any]:
    from asyncssh.public_key import load_default_keypairs

    if not identity_files:
        return load_default_keypairs()  # ~/.ssh/id_ed25519, id_ecdsa, id_rsa... as OpenSSH
    existing = [p for p in identity_files if Path(p).is_file()]
    return asyncssh.load_keypairs(existing) if existing else []


class SshPool:
    def __init__(self, settings: SshSettings, resolver: Resolver) -> None:
        self.settings = settings
        self.resolver = resolver
        self._handshakes = asyncio.Semaphore(settings.max_handshakes)
        self._keys: dict[tuple[str, ...], Sequence[Any]] = {}
        self._keys_lock = asyncio.Lock()
        self._known_hosts: Any = ()  # () = not loaded yet; None = verification off
        self._jumps: dict[str, SSHJump] = {}
        self.handshakes_done = 0

    # -- loaded once -------------------------------------------------------------------------

    def known_hosts_paths(self) -> list[Path]:
        if self.settings.known_hosts is not None:
            return [Path(p).expanduser() for p in self.settings.known_hosts]
        return [Path("~/.ssh/known_hosts").expanduser(), Path("/etc/ssh/ssh_known_hosts")]

    def _load_known_hosts(self) -> Any:
        if self.settings.insecure_skip_host_key_check:
            return None
        existing = [str(p) for p in self.known_hosts_paths() if p.is_file()]
        # no file: an empty list of trusted keys, so every node reports "unknown host key"
        return asyncssh.read_known_hosts(existing) if existing else asyncssh.import_known_hosts("")

    async def known_hosts(self) -> Any:
        if self._known_hosts == ():
            self._known_hosts = await asyncio.to_thread(self._load_known_hosts)
        return self._known_hosts

    async def keys(self, identity_files: tuple[str, ...]) -> Sequence[Any]:
        """The loaded key pairs for these IdentityFiles (default keys for ``()``), read once."""
        async with self._keys_lock:
            if identity_files not in self._keys:
                self._keys[identity_files] = await asyncio.to_thread(_load_keys, identity_files)
            return self._keys[identity_files]

    # -- connecting ----------------------------------------------------------------------------

    async def _options(self, target: Target) -> dict[str, Any]:
        keys = await self.keys(target.identity_files)
        opts: dict[str, Any] = {
            "username": target.user,
            "known_hosts": await self.known_hosts(),
            "config": None,  # resolved once by the Resolver; do not re-read ssh_config per connection
            "connect_timeout": self.settings.connect_timeout_s,
            "keepalive_interval": self.settings.keepalive_s or None,
            "keepalive_count_max": 3,
        }
        if keys:
            opts["client_keys"] = keys
            opts["agent_path"] = None
        if target.host_key_alias:
            opts["host_key_alias"] = target.host_key_alias
        return opts

    async def connect(self, target: Target) -> asyncssh.SSHClientConnection:
        """One authenticated connection to ``target`` (through its jump host, if any)."""
        tunnel: Any = ()
        if target.proxy_jump:
            tunnel = await self.jump(target.proxy_jump)
        opts = await self._options(target)
        async with self._handshakes:
            conn = await asyncio.wait_for(
                asyncssh.connect(target.host, target.port, tunnel=tunnel, **opts),
                timeout=self.settings.connect_timeout_s + 1,
            )
        self.handshakes_done += 1
        return conn

    async def jump(self, spec: str) -> asyncssh.SSHClientConnection:
        j = self._jumps.get(spec)
        if j is None:
            j = self._jumps[spec] = SSHJump(self, spec)
        return await j.get()

    async def close(self) -> None:
        for j in self._jumps.values():
            j.close()
        self._jumps.clear()


def parse_jump(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` → (user, host, port)."""
    user, _, hostport = spec.rpartition("@")
    host, port = hostport, None
    if hostport.startswith("["):  # [v6]:port
        end = hostport.find("]")
        host, rest = hostport[1:end], hostport[end + 1:]
        port = int(rest[1:]) if rest.startswith(":") else None
    elif hostport.count(":") == 1:
        host, p = hostport.split(":")
        port = int(p)
    return (user or None), host, port


class SSHJump:
    """One shared connection to a jump host (a comma list: hops in order), reopened when lost."""

    def __init__(self, pool: SshPool, spec: str) -> None:
        self.pool = pool
        self.spec = spec
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._conns: list[asyncssh.SSHClientConnection] = []
        self._failed: JumpError | None = None
        self._retry_at = 0.0

    def _alive(self) -> bool:
        c = self._conn
        return c is not None and not c.is_closed()

    async def get(self) -> asyncssh.SSHClientConnection:
        if self._alive():
            assert self._conn is not None
            return self._conn
        async with self._lock:
            if self._alive():
                assert self._conn is not None
                return self._conn
            if self._failed is not None and time.monotonic() < self._retry_at:
                raise self._failed  # one attempt per backoff period, not one per node behind it
            self.close()
            tunnel: Any = ()
            for hop in self.spec.split(","):
                user, alias, port = parse_jump(hop.strip())
                host, cport, cuser, idents, _jump, key_alias = self.pool.resolver.endpoint(alias)
                target = Target(node=alias, host=host, port=port or cport, user=user or cuser,
                                identity_files=idents, host_key_alias=key_alias)
                opts = await self.pool._options(target)
                try:
                    async with self.pool._handshakes:
                        conn = await asyncio.wait_for(
                            asyncssh.connect(target.host, target.port, tunnel=tunnel, **opts),
                            timeout=self.pool.settings.connect_timeout_s + 1)
                except Exception as exc:
                    self.close()
                    self._failed = JumpError(f"jump host {hop.strip()}: "
                                             f"{describe_error(exc, self.pool.settings.connect_timeout_s)}")
                    self._retry_at = time.monotonic() + self.pool.settings.backoff_initial_s
                    raise self._failed from exc
                self._conns.append(conn)
                tunnel = conn
            self._conn = tunnel
            self._failed = None
            return tunnel

    def close(self) -> None:
        for c in reversed(self._conns):
            c.close()
        self._conns.clear()
        self._conn = None


class JumpError(Exception):
    """The jump host itself could not be reached; the message says which and why."""
