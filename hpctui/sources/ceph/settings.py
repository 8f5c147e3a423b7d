"""The TOML section of one Ceph source (``kind = "ceph"``): how to reach the cluster's health.

Three ways in: the ``ceph`` CLI here (``command``), the same CLI on an admin host over SSH (``host``, with the
connection settings of ``[clusters.NAME.sources.ssh]``), or the mgr's Prometheus module (``metrics_url``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from hpctui.model.hostlist import is_valid_hostname

if TYPE_CHECKING:
    from hpctui.sources.ceph.source import CephSource
    from hpctui.sources.registry import SourceContext


class CephSshSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[clusters.NAME.sources.ssh]`` of a Ceph source with ``host``: how OpenSSH's ``ssh`` reaches the admin
    host (the same keys, and the same meaning, as an SSH source's; None: ssh_config decides)."""

    port: int | None = None
    """SSH port; overrides ssh_config."""
    user: str | None = None
    """Login user; overrides ssh_config."""
    identity_files: list[str] | None = None
    """Private keys (``-i``); default: ssh_config ``IdentityFile``, else ssh's own (``~/.ssh/id_*``, the agent)."""
    ssh_config: list[str] | None = None
    """ssh_config file (the first is passed as ``-F``); default: ``~/.ssh/config`` when it exists; ``[]`` = none."""
    proxy_jump: str | None = None
    """Jump host ``[user@]bastion[:port]``; default: ssh_config ``ProxyJump``."""
    known_hosts: list[str] | None = None
    """Known-hosts files; default: ssh's (``~/.ssh/known_hosts``). Host keys are always checked
    (``StrictHostKeyChecking=yes``) unless ``insecure_skip_host_key_check``."""
    insecure_skip_host_key_check: bool = False
    """Do not verify the admin host's key: an explicit opt-out."""
    connect_timeout_s: float = 10.0
    """TCP connect + SSH handshake (``ConnectTimeout``)."""
    program: str = "ssh"
    """The OpenSSH client run."""

    def __post_init__(self) -> None:
        if self.port is not None and not 0 < self.port < 65536:
            raise ValueError("ssh.port must be 1-65535")
        if self.connect_timeout_s <= 0 or not self.program.strip():
            raise ValueError("ssh.connect_timeout_s must be > 0 and ssh.program must name a program")


class CephSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "ceph"
    """This source's name (unique in the cluster; the problem list's group is ``ceph/<name>``)."""
    command: list[str] = msgspec.field(default_factory=lambda: ["ceph"])
    """The ``ceph`` CLI as an argv: run here (never through a shell), or with ``host`` on that host. On an admin
    host: ``["ceph"]``; in a cephadm container: ``["cephadm", "shell", "--", "ceph"]``."""
    host: str | None = None
    """Admin host (an ssh_config alias or an address) that runs ``command`` over SSH, for an hpctui that is not on
    one: OpenSSH's ``ssh`` with ``BatchMode=yes`` and the ``ssh`` table's settings; every word of the ``ceph``
    command line is shell-quoted for the remote shell (a POSIX one: sh, bash, dash, zsh), so a path with a
    space or a ``$(...)`` arrives as one word and never runs. Default: here."""
    ssh: CephSshSettings = msgspec.field(default_factory=CephSshSettings)
    """How ``ssh`` reaches ``host``, ``[clusters.NAME.sources.ssh]``."""
    metrics_url: str | None = None
    """Read the health from the mgr's Prometheus module instead of the CLI, e.g. ``http://mgr1:9283/metrics``
    (``ceph mgr module enable prometheus``): check codes and severities, OSDs up/in, PG states, pool usage.
    Its metrics carry no check messages and no fsid (CephFS mounts are then tied by mon address only)."""
    conf: str | None = None
    """``--conf``: the cluster's ceph.conf (default: the CLI's own, ``/etc/ceph/ceph.conf``)."""
    keyring: str | None = None
    """``--keyring``: a keyring file of the client (its path only: the key is never read by hpctui)."""
    client: str | None = None
    """``--name``: the cephx client (``client.admin``, or a read-only ``client.hpctui`` with
    ``mon 'allow r' mgr 'allow r'``)."""
    interval_s: float = 30.0
    """Seconds between two reads (each is four ``ceph`` calls: status, health detail, osd tree, df detail; or
    one GET of ``metrics_url``)."""
    timeout_s: float = 20.0
    """One ``ceph`` call (or the GET of ``metrics_url``); also passed as ``--connect-timeout`` (a mon that does
    not answer fails the read)."""
    pool_warn_pct: float = 85.0
    """A pool this full (Ceph's %USED of what it may grow to), or this near its quota, is a warning."""
    max_answer_mib: int = 64
    """Largest answer read from one call (MiB); a bigger one fails that call."""

    def __post_init__(self) -> None:
        if self.host is not None and not is_valid_hostname(self.host):
            raise ValueError(f"host {self.host[:80]!r} is not a host name")
        if self.metrics_url is not None:
            if not self.metrics_url.startswith(("http://", "https://")):
                raise ValueError("metrics_url must be an http:// or https:// URL")
            if self.host is not None:
                raise ValueError("set host (the CLI over SSH) or metrics_url (the mgr's metrics), not both")
        if not self.command or not all(self.command):
            raise ValueError("command must be a non-empty argv (e.g. [\"ceph\"])")
        if self.interval_s <= 0 or self.timeout_s <= 0:
            raise ValueError("interval_s and timeout_s must be > 0")
        if not 0 < self.pool_warn_pct <= 100:
            raise ValueError("pool_warn_pct must be > 0 and at most 100")
        if not 1 <= self.max_answer_mib <= 1024:
            raise ValueError("max_answer_mib must be 1..1024")


def build_ceph_source(settings: CephSettings, context: SourceContext) -> CephSource:
    from hpctui.sources.ceph.source import CephSource

    return CephSource(settings)
