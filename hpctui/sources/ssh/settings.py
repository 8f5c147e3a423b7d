"""The TOML section of one SSH node-probe source (``[[clusters.NAME.sources]] kind = "ssh"``).

Which nodes: every node the other sources know (``SourceContext.snapshot()``), plus the
optional hostlist ``nodes``, minus ``exclude``. Which address: ``host`` (a template with
``{node}``), else the node name as ssh_config sees it (``Host``/``HostName``/``Port``/
``User``/``IdentityFile``/``ProxyJump`` from ``~/.ssh/config`` or ``ssh_config``).

Host keys are verified against known_hosts unless ``insecure_skip_host_key_check = true``,
which the status line then shows as a permanent ⚠.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import msgspec

from hpctui.sources.ssh.probe.script import ProbeOptions

if TYPE_CHECKING:
    from hpctui.sources.registry import SourceContext
    from hpctui.sources.ssh.source import SshSource


class QuotaSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[clusters.NAME.sources.quotas]`` of an SSH source: the file system quotas of the users with
    running jobs (``lfs quota -u``, ``beegfs-ctl --getquota``), asked in the background."""

    interval_s: float = 300.0
    """Seconds between quota sweeps (0: never ask). Each sweep asks every owner of a running job once."""
    host: str | None = None
    """Node (a login node) that asks for every user; default: a reachable node of one of the user's running
    jobs that mounts the file system (the quota RPCs then come from nodes that already talk to it)."""
    filesystems: list[str] | None = None
    """Only these mount points are asked; default: every Lustre and BeeGFS mount the probes see on the asking
    node (with ``host`` set: anywhere). With ``host`` set, one no probe sees is asked as Lustre."""
    max_users: int = 256
    """Users asked per sweep at most (the ones with most running jobs first); the rest are said."""
    timeout_s: float = 60.0
    """One node's answer for all its users; past it the node's previous quotas stay."""

    def __post_init__(self) -> None:
        if self.interval_s < 0 or self.timeout_s <= 0 or self.max_users < 1:
            raise ValueError("quotas: interval_s >= 0, timeout_s > 0 and max_users >= 1")
        if self.host is not None and not self.host.strip():
            raise ValueError("quotas: host must not be empty")
        for m in self.filesystems or ():
            if not m.startswith("/"):
                raise ValueError(f"quotas: filesystems must be absolute mount points, not {m!r}")


class FabricSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[clusters.NAME.sources.fabric]`` of an SSH source: the InfiniBand topology read by the fabric tools
    on one node, in the background (leaf switch of each node, the switch port of each HCA port)."""

    interval_s: float = 0.0
    """Seconds between reads (0: never; 900 is a sensible choice). Off by default: ``ibnetdiscover`` sends
    management datagrams to every switch of the fabric."""
    host: str | None = None
    """Node that runs the tool; default: the first reachable probed node with an InfiniBand port."""
    tool: Literal["ibnetdiscover", "iblinkinfo"] = "ibnetdiscover"
    """Which infiniband-diags tool reads the fabric."""
    timeout_s: float = 120.0
    """One read; past it the last good topology stays."""

    def __post_init__(self) -> None:
        if self.interval_s < 0 or self.timeout_s <= 0:
            raise ValueError("fabric: interval_s >= 0 and timeout_s > 0")


class SshSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "ssh"
    """The source's name, as the status line, ``precedence`` and ``ssh_source`` name it."""
    interval_s: float = 2.0
    """Seconds between records: the remote loop prints one per interval."""
    # which nodes
    nodes: str | None = None
    """Hostlist added to the nodes the other sources know, e.g. ``gpu[001-128]``."""
    exclude: str | None = None
    """Hostlist never probed."""
    from_snapshot: bool = True
    """Probe every node the other sources of the cluster know."""
    # which address and how to log in (None: ssh_config decides, then OpenSSH's defaults)
    host: str | None = None
    """Address template with ``{node}``, e.g. ``{node}-mgmt.cluster``; default: the node name via ssh_config."""
    port: int | None = None
    """SSH port; overrides ssh_config."""
    user: str | None = None
    """Login user; overrides ssh_config."""
    identity_files: list[str] | None = None
    """Private keys, loaded once; default: ssh_config ``IdentityFile``, else ``~/.ssh/id_*``."""
    ssh_config: list[str] | None = None
    """ssh_config files read; default: ``~/.ssh/config`` when it exists; ``[]`` = none."""
    proxy_jump: str | None = None
    """Jump host ``[user@]bastion[:port]``; default: ssh_config ``ProxyJump``."""
    known_hosts: list[str] | None = None
    """Known-hosts files; default: ``~/.ssh/known_hosts`` (+ ssh_config ``UserKnownHostsFile``)."""
    insecure_skip_host_key_check: bool = False
    """Do not verify host keys: an explicit opt-out, shown as a permanent ⚠."""
    # pool
    max_handshakes: int = 64
    """SSH handshakes in flight at once (a bastion's MaxStartups drops bursts)"""
    connect_timeout_s: float = 10.0
    """TCP connect + SSH handshake + auth."""
    stale_after_s: float | None = None
    """No record for this long: restart the stream (default 3 × interval + 2 × the probe timeout)."""
    backoff_initial_s: float = 5.0
    """First retry delay of an unreachable node, doubled per failure."""
    backoff_max_s: float = 300.0
    """Longest retry delay of an unreachable node."""
    keepalive_s: float = 30.0
    """SSH keepalive interval on each connection (0: off)."""
    log_host: str | None = None
    """Node (a login node) that reads job output files for the log viewer; default: the job's batch host."""
    probe: ProbeOptions = msgspec.field(default_factory=ProbeOptions)
    """What the node-side loop collects, ``[clusters.NAME.sources.probe]``; its interval is this source's
    ``interval_s``."""
    quotas: QuotaSettings = msgspec.field(default_factory=QuotaSettings)
    """File system quotas of the users with running jobs, ``[clusters.NAME.sources.quotas]``."""
    fabric: FabricSettings = msgspec.field(default_factory=FabricSettings)
    """The InfiniBand topology from ``ibnetdiscover`` / ``iblinkinfo`` on one node, ``[clusters.NAME.sources.fabric]``."""

    def __post_init__(self) -> None:
        if not 0.1 <= self.interval_s <= 3600 or self.connect_timeout_s <= 0:
            raise ValueError("interval_s must be within 0.1..3600 and connect_timeout_s > 0")
        if self.max_handshakes < 1:
            raise ValueError("max_handshakes must be >= 1")
        if self.backoff_initial_s <= 0 or self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("need 0 < backoff_initial_s <= backoff_max_s")
        if self.host is not None and "{node}" not in self.host:
            raise ValueError("host must contain {node}, e.g. \"{node}-mgmt.cluster\"")
        if self.port is not None and not 0 < self.port < 65536:
            raise ValueError("port must be 1-65535")
        if self.stale_after_s is not None and self.stale_after_s <= 0:
            raise ValueError("stale_after_s must be > 0")

    @property
    def stale_after(self) -> float:
        if self.stale_after_s is not None:
            return self.stale_after_s
        return 3 * self.interval_s + 2 * max(self.probe.probe_timeout_s, self.probe.mount_timeout_s)


def build_ssh_source(settings: SshSettings, context: SourceContext | None = None) -> SshSource:
    """The one constructor the registry calls; asyncssh is imported only here, lazily."""
    from hpctui.sources.ssh.source import SshSource

    return SshSource(settings, context)
