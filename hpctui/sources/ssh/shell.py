"""The argv of the system ``ssh`` client for an interactive session, from an SSH source's settings.

The probes dial with asyncssh; a person's shell runs OpenSSH's ``ssh`` on the real terminal. Both
must reach the same endpoint with the same trust: the node's address, port, user, keys, jump host
and host-key alias come from the source's own :class:`~hpctui.sources.ssh.targets.Resolver`
(``host`` template, ssh_config, explicit settings winning), and are passed to ``ssh`` explicitly;
the ssh_config file is passed too (``-F``), so its other options (``ForwardAgent``, ciphers) apply.

Host keys: the source verifies against known_hosts and never asks, so ``ssh`` runs with
``StrictHostKeyChecking=yes`` (an unknown or changed key refuses the connection) against the same
files; ``insecure_skip_host_key_check`` turns checking off the same way for both.

A jump host: OpenSSH applies command-line options to the destination only, never to a
``ProxyJump`` hop, so a single hop is written as a ``ProxyCommand`` running ``ssh -W`` with the
same options (known_hosts, policy, keys, timeouts); a chain of hops is passed as ``-J`` (the hops
then take their options from ssh_config alone).

Every value that came from the cluster (the node name) was checked to be a host name by the
resolver; the destination still follows ``--``, so nothing can be read as an option.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from hpctui.model.hostlist import is_valid_hostname
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.targets import Resolver, Target, config_paths


def _percent(value: str) -> str:
    """A path as ssh_config reads it: ``%`` starts a token (``%h``, ``%d``), so a literal one doubles."""
    return value.replace("%", "%%")


def _file_list(paths: Sequence[str]) -> str:
    """Files of a ``-o`` option that takes several (space separated; a path with a space quoted)."""
    return " ".join(f'"{_percent(p)}"' if " " in p else _percent(p) for p in paths)


def common_options(settings: SshSettings) -> list[str]:
    """Options every hop shares: the config file, host-key policy and files, timeouts, keepalive."""
    paths = config_paths(settings)
    out: list[str] = ["-F", str(paths[0]) if paths else "none"]
    if settings.insecure_skip_host_key_check:
        out += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    else:
        out += ["-o", "StrictHostKeyChecking=yes"]
        if settings.known_hosts is not None:
            files = [str(p) for p in settings.known_hosts]
            out += ["-o", f"UserKnownHostsFile={_file_list(files) or '/dev/null'}",
                    "-o", "GlobalKnownHostsFile=/dev/null"]
    out += ["-o", f"ConnectTimeout={max(1, math.ceil(settings.connect_timeout_s))}"]
    if settings.keepalive_s > 0:
        out += ["-o", f"ServerAliveInterval={max(1, math.ceil(settings.keepalive_s))}"]
    return out


def endpoint_options(target: Target) -> list[str]:
    """The resolved endpoint of one hop: address, port, user, keys, host-key alias."""
    out = ["-o", f"HostName={target.host}", "-p", str(target.port)]
    if target.user:
        out += ["-l", target.user]
    for ident in target.identity_files:
        out += ["-i", _percent(ident)]
    if target.host_key_alias:
        out += ["-o", f"HostKeyAlias={target.host_key_alias}"]
    return out


def ssh_argv(settings: SshSettings, target: Target, *, alias: str | None = None,
             jumps: Sequence[Target] = (), command: str | None = None, tty: bool = False,
             program: str = "ssh") -> tuple[str, ...]:
    """``ssh`` to ``target`` with ``settings``: an interactive login shell, or ``command`` (one
    string the remote shell reads; ``tty`` forces a pseudo-terminal for it, ``-t``). ``alias``: the
    name ssh_config knows the node by (default: the node's name); ``jumps``: the resolved hops of
    its ``ProxyJump``, in order. Raises ValueError for a target the resolver refused."""
    if target.error is not None or not target.host:
        raise ValueError(f"{target.node}: {target.error or 'no address'}")
    argv = [program, *common_options(settings), *endpoint_options(target)]
    if len(jumps) == 1:
        hop = jumps[0]
        inner = [program, *common_options(settings), *endpoint_options(hop), "-W", "[%h]:%p", "--", hop.node]
        # ProxyCommand is read by the shell after ssh expands its %-tokens: each word shell-quoted,
        # every literal % doubled once more (the inner ssh expands its own), %h/%p kept as tokens
        argv += ["-o", "ProxyCommand=" + " ".join(shlex.quote(a if a == "[%h]:%p" else _percent(a)) for a in inner)]
    elif jumps:
        argv += ["-J", ",".join(_jump_spec(h) for h in jumps)]
    if tty:
        argv.append("-t")
    argv += ["--", alias or target.node]
    if command is not None:
        argv.append(command)
    return tuple(argv)


def _jump_spec(hop: Target) -> str:
    """``user@host:port`` of one resolved hop (its address, as the source dials it)."""
    user = f"{hop.user}@" if hop.user else ""
    host = f"[{hop.host}]" if ":" in hop.host else hop.host
    return f"{user}{host}:{hop.port}"


def resolve_jumps(resolver: Resolver, spec: str | None) -> tuple[Target, ...]:
    """The hops of a ``ProxyJump`` spec (``[user@]host[:port]``, comma separated), each resolved
    through ssh_config as the source's jump connection resolves it; ValueError for a bad hop."""
    if not spec:
        return ()
    from hpctui.sources.ssh.pool import parse_jump  # asyncssh: only when there is a jump host

    hops: list[Target] = []
    for hop in spec.split(","):
        user, alias, port = parse_jump(hop.strip())
        if not is_valid_hostname(alias):
            raise ValueError(f"jump host {alias!r} is not a valid host name")
        host, cport, cuser, idents, _jump, key_alias = resolver.endpoint(alias)
        hops.append(Target(node=alias, host=host, port=port or cport, user=user or cuser,
                           identity_files=idents, host_key_alias=key_alias))
    return tuple(hops)
