"""SSH source pieces that need no sshd: settings, node selection, ssh_config resolution."""

from __future__ import annotations

import resource
from pathlib import Path

import asyncssh
import msgspec
import pytest

from hpctui.core.config import ConfigError, load_config, source_settings
from hpctui.model.hostlist import HostlistError
from hpctui.sources.registry import PLANNED_SOURCE_KINDS, SOURCE_KINDS
from hpctui.sources.ssh.pool import describe_error, parse_jump, raise_nofile_limit
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.targets import Resolver, select_nodes


def test_registry_and_config(tmp_path: Path) -> None:
    assert "ssh" in SOURCE_KINDS and "ssh" not in PLANNED_SOURCE_KINDS
    path = tmp_path / "config.toml"
    path.write_text('[clusters.lab]\n[[clusters.lab.sources]]\nkind = "ssh"\nnodes = "gpu[001-004]"\n'
                    'host = "{node}-mgmt.lab"\n[clusters.lab.sources.probe]\nexpected_mounts = ["/lustre"]\n')
    s = source_settings(load_config(path), "lab", 0)
    assert isinstance(s, SshSettings) and s.nodes == "gpu[001-004]" and not s.insecure_skip_host_key_check
    assert s.probe.expected_mounts == ("/lustre",)
    path.write_text('[clusters.lab]\n[[clusters.lab.sources]]\nkind = "ssh"\nhostt = "x"\n')
    with pytest.raises(ConfigError, match="hostt"):
        load_config(path)


@pytest.mark.parametrize("kw", [{"host": "no-placeholder"}, {"interval_s": 0}, {"max_handshakes": 0},
                                {"port": 70000}, {"backoff_initial_s": 10, "backoff_max_s": 1}])
def test_bad_settings(kw: dict[str, object]) -> None:
    with pytest.raises((ValueError, msgspec.ValidationError)):
        msgspec.convert(kw, SshSettings)


def test_select_nodes() -> None:
    s = SshSettings(nodes="gpu[01-03]", exclude="gpu02,c1")
    assert select_nodes(s, ["c1", "c2", "gpu01"]) == ["c2", "gpu01", "gpu03"]
    assert select_nodes(SshSettings(nodes="gpu[01-02]", from_snapshot=False), ["c1"]) == ["gpu01", "gpu02"]
    with pytest.raises(HostlistError):
        select_nodes(SshSettings(nodes="gpu[01-"), [])


def test_ssh_config_is_honoured(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host gpu*\n  HostName %h.mgmt.lab\n  User ops\n  Port 2202\n  IdentityFile ~/k1\n"
                   "  ProxyJump jump@bastion:2200\n  HostKeyAlias gpukey\n"
                   "Host bastion\n  HostName 10.0.0.1\n  Port 22\n")
    r = Resolver(SshSettings(ssh_config=[str(cfg)]))
    t = r.resolve("gpu01")
    assert (t.host, t.port, t.user, t.proxy_jump) == ("gpu01.mgmt.lab", 2202, "ops", "jump@bastion:2200")
    assert t.identity_files == (str(Path("~/k1").expanduser()),) and t.host_key_alias == "gpukey"
    assert r.endpoint("bastion")[:2] == ("10.0.0.1", 22)
    # explicit settings win over ssh_config
    t2 = Resolver(SshSettings(ssh_config=[str(cfg)], user="root", port=22, proxy_jump="none",
                              host="{node}-ipmi")).resolve("gpu01")
    assert (t2.host, t2.port, t2.user, t2.proxy_jump) == ("gpu01-ipmi.mgmt.lab", 22, "root", None)
    # no ssh_config at all
    t3 = Resolver(SshSettings(ssh_config=[], host="{node}.lab")).resolve("c7")
    assert (t3.host, t3.port, t3.identity_files, t3.error) == ("c7.lab", 22, (), None)


@pytest.mark.parametrize("name", ["a;rm -rf /", "$(reboot)", "x y", "`id`", "-oProxyCommand=sh", ""])
def test_hostile_node_names_are_never_dialled(name: str) -> None:
    t = Resolver(SshSettings(ssh_config=[])).resolve(name)
    assert t.error and "not a valid host name" in t.error and t.host == ""


def test_parse_jump() -> None:
    assert parse_jump("bastion") == (None, "bastion", None)
    assert parse_jump("ops@bastion:2200") == ("ops", "bastion", 2200)
    assert parse_jump("[::1]:22") == (None, "::1", 22)


def test_error_lines() -> None:
    assert "unknown or changed host key" in describe_error(asyncssh.HostKeyNotVerifiable("Host key is not trusted"))
    assert describe_error(asyncssh.PermissionDenied("no")).startswith("authentication refused")
    assert describe_error(ConnectionRefusedError(111, "Connection refused")) == "connection refused"
    assert describe_error(TimeoutError(), 3) == "connect timed out after 3 s"


def test_nofile_raised_to_hard_limit() -> None:
    soft, hard = raise_nofile_limit()
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft
    assert hard == resource.RLIM_INFINITY or soft == hard


def test_probe_findings() -> None:
    from hpctui.findings.health import probe_findings
    from hpctui.model import Severity
    from hpctui.model.probe import ProbeStatus

    assert probe_findings(ProbeStatus(node="n1", reachable=True)) == []
    late = probe_findings(ProbeStatus(node="n1", reachable=True, late_probes=("gpu",)))
    assert late[0].severity is Severity.WARNING and "gpu" in late[0].message
    down = probe_findings(ProbeStatus(node="n1", reachable=False, error="connection refused", next_retry=0.0))
    assert down[0].severity is Severity.ERROR and "connection refused" in down[0].message
    assert down[0].object == "node/n1"
    pending = probe_findings(ProbeStatus(node="n1", reachable=False, error="connecting (no record yet)"))
    assert pending[0].severity is Severity.INFO


def test_ssh_config_blocks_per_host(tmp_path: Path) -> None:
    """Each host gets the global part, its literal/wildcard Host blocks (with negation) and Match blocks."""
    one = tmp_path / "one"
    one.write_text("User globaluser\n"
                   "Host gpu001 gpu002\n  HostName 10.0.0.1\n"
                   "Host gpu* !gpu003\n  Port 2200\n"
                   "Host gpu003\n  HostName 10.0.0.3\n"
                   "Match host gpu002\n  Port 2202\n")
    two = tmp_path / "two"
    two.write_text("Host *\n  IdentityFile /k2\n")
    r = Resolver(SshSettings(ssh_config=[str(one), str(two)]))
    assert r.endpoint("gpu001")[:3] == ("10.0.0.1", 2200, "globaluser")
    assert r.endpoint("gpu002")[:2] == ("10.0.0.1", 2200)  # the first value obtained wins, as in OpenSSH
    assert r.endpoint("gpu003")[:2] == ("10.0.0.3", 22)
    assert r.endpoint("gpu004")[:2] == ("gpu004", 2200)
    assert r.endpoint("c1")[3] == ("/k2",)
    # a file with Include is handed to asyncssh whole
    inc = tmp_path / "inc"
    inc.write_text(f"Include {one}\n")
    assert Resolver(SshSettings(ssh_config=[str(inc)])).endpoint("gpu003")[:2] == ("10.0.0.3", 22)
