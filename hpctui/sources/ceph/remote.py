"""The ``ceph`` CLI on an admin host over SSH: OpenSSH's ``ssh`` argv for one call, every word quoted.

OpenSSH sends a remote command as one string, which the remote user's shell splits and expands: the words of
``ssh host ceph --conf "/etc/ceph/my ceph.conf" status`` arrive as ``--conf``, ``/etc/ceph/my``, ``ceph.conf``,
and a word like ``$(touch /tmp/x)`` would run. So the ``ceph`` command line is joined with :func:`shlex.join`
(each word single-quoted where it needs to be, for a POSIX shell) and passed as that one string: the remote
shell undoes exactly that quoting and runs ``ceph`` with the very words given, nothing expanded.

The connection (address, port, user, keys, jump host, known_hosts and the host-key policy) is built the way the
SSH source builds a node shell (:mod:`hpctui.sources.ssh.shell`, resolved through ssh_config by its
:class:`~hpctui.sources.ssh.targets.Resolver`), plus ``BatchMode=yes`` (never a prompt) and ``-T`` (no
terminal). Resolving reads ssh_config: :func:`ssh_prefix` is called once, off the event loop.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from hpctui.sources.ceph.settings import CephSshSettings
from hpctui.sources.ssh.settings import SshSettings


def _as_ssh_settings(s: CephSshSettings) -> SshSettings:
    return SshSettings(port=s.port, user=s.user, identity_files=s.identity_files, ssh_config=s.ssh_config,
                       proxy_jump=s.proxy_jump, known_hosts=s.known_hosts,
                       insecure_skip_host_key_check=s.insecure_skip_host_key_check,
                       connect_timeout_s=s.connect_timeout_s, keepalive_s=0)


def ssh_prefix(host: str, s: CephSshSettings) -> tuple[str, ...]:
    """``ssh [options] -- host``: everything of the argv but the remote command. Reads ssh_config (blocking);
    ValueError for a host the resolver refuses (not a host name, a broken ssh_config, a bad jump host)."""
    from hpctui.sources.ssh.shell import resolve_jumps, ssh_argv
    from hpctui.sources.ssh.targets import Resolver

    settings = _as_ssh_settings(s)
    resolver = Resolver(settings)
    target = resolver.resolve(host)
    if target.error is not None:
        raise ValueError(f"{host}: {target.error}")
    jumps = resolve_jumps(resolver, target.proxy_jump)
    argv = ssh_argv(settings, target, alias=host, jumps=jumps, program=s.program)
    # -o options: the first value given wins, so these come first
    return (argv[0], "-o", "BatchMode=yes", "-T", *argv[1:])


def remote_command(words: Sequence[str]) -> str:
    """The one string the remote shell reads back into exactly ``words`` (nothing in it expanded)."""
    return shlex.join(words)


def remote_argv(prefix: Sequence[str], words: Sequence[str]) -> list[str]:
    """The local argv that runs ``words`` on the host of ``prefix`` (from :func:`ssh_prefix`)."""
    return [*prefix, remote_command(words)]


__all__ = ["remote_argv", "remote_command", "ssh_prefix"]
