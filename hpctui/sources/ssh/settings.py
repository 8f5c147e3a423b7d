"""The TOML section of one SSH node-probe source (``[[clusters.NAME.sources]] kind = "ssh"``).

Which nodes: every node the other sources know (``SourceContext.snapshot()``), plus the
optional hostlist ``nodes``, minus ``exclude``. Which address: ``host`` (a template with
``{node}``), else the node name as ssh_config sees it (``Host``/``HostName``/``Port``/
``User``/``IdentityFile``/``ProxyJump`` from ``~/.ssh/config`` or ``ssh_config``).

Host keys are verified against known_hosts unless ``insecure_skip_host_key_check = true``,
which the status line then shows as a permanent ⚠.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from hpctui.sources.ssh.probe.script import ProbeOptions

if TYPE_CHECKING:
    from hpctui.sources.registry import SourceContext
    from hpctui.sources.ssh.source import SshSource


class SshSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "ssh"
    interval_s: float = 2.0  # the remote loop prints one record per interval
    # which nodes
    nodes: str | None = None  # hostlist added to the nodes the other sources know, "gpu[001-128]"
    exclude: str | None = None  # hostlist never probed
    from_snapshot: bool = True  # probe every node the other sources of the cluster know
    # which address and how to log in (None: ssh_config decides, then OpenSSH's defaults)
    host: str | None = None  # address template, "{node}-mgmt.cluster" or "{node}"
    port: int | None = None
    user: str | None = None
    identity_files: list[str] | None = None  # loaded once; default: ssh_config IdentityFile, else ~/.ssh/id_*
    ssh_config: list[str] | None = None  # default: ~/.ssh/config when it exists; [] = none
    proxy_jump: str | None = None  # "[user@]bastion[:port]"; default: ssh_config ProxyJump
    known_hosts: list[str] | None = None  # default: ~/.ssh/known_hosts (+ ssh_config UserKnownHostsFile)
    insecure_skip_host_key_check: bool = False  # explicit opt-out; shown as a permanent ⚠
    # pool
    max_handshakes: int = 64  # SSH handshakes in flight at once (a bastion's MaxStartups drops bursts)
    connect_timeout_s: float = 10.0  # TCP connect + SSH handshake + auth
    stale_after_s: float | None = None  # no record for this long: restart the stream (default 3 × interval + probe timeout)
    backoff_initial_s: float = 5.0  # first retry delay of an unreachable node, doubled per failure
    backoff_max_s: float = 300.0
    keepalive_s: float = 30.0  # SSH keepalive on each connection (0: off)
    # what the node-side loop collects: [clusters.NAME.sources.probe] (hpctui.sources.ssh.probe.ProbeOptions:
    # probe_timeout_s, mount_timeout_s, slow_mount_ms, expected_mounts, service_names, ...);
    # its interval is this source's interval_s
    probe: ProbeOptions = msgspec.field(default_factory=ProbeOptions)

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
