"""The argv of each shell, built from its source's settings (pure: nothing runs).

ssh: the resolved endpoint (ssh_config, the ``host`` template, explicit settings winning), the
host-key policy and files, a jump host as a ProxyCommand with the same options; kubectl exec with
the source's kubeconfig/context; srun --overlap --pty with the source's slurm_conf/bin_dir. Names
from the cluster are hostile: anything that is not a valid name builds no argv at all.
"""

from __future__ import annotations

import itertools
import shlex
from pathlib import Path

import pytest

from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.shell import CONTAINER_SHELL, kubectl_exec_argv
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.shell import srun_argv, srun_remote_command
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.shell import ssh_argv
from hpctui.sources.ssh.source import SshSource
from hpctui.sources.ssh.targets import Target

HOSTILE = ["-oProxyCommand=touch /tmp/pwned", "gpu01;id", "gpu01 -v", "$(id)", "gpu\n01", "`id`", "gpu01\x1b[2J",
           "../etc", "", "a" * 300]


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


def _opts(argv: tuple[str, ...]) -> dict[str, str]:
    """The ``-o KEY=VALUE`` options of an argv (the first value of each key: ssh's rule)."""
    out: dict[str, str] = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "-o":
            key, _, val = value.partition("=")
            out.setdefault(key, val)
    return out


def test_ssh_argv_uses_the_resolved_endpoint_and_the_host_key_policy(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "Host gpu01\n  HostName 10.0.0.1\n  Port 2222\n  User admin\n  IdentityFile ~/k1\n")
    source = SshSource(SshSettings(ssh_config=[str(cfg)], known_hosts=[str(tmp_path / "kh"), "/a b/kh"],
                                   connect_timeout_s=2.5, keepalive_s=0))
    argv = source.node_shell_argv("gpu01")
    assert argv[0] == "ssh" and argv[-2:] == ("--", "gpu01")  # the alias last, after "--"
    assert argv[argv.index("-F") + 1] == str(cfg)
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "admin"
    assert argv[argv.index("-i") + 1] == str(Path("~/k1").expanduser())
    opts = _opts(argv)
    assert opts["HostName"] == "10.0.0.1"
    assert opts["StrictHostKeyChecking"] == "yes"  # unknown or changed keys refuse, as the probes do
    assert opts["UserKnownHostsFile"] == f'{tmp_path / "kh"} "/a b/kh"' and opts["GlobalKnownHostsFile"] == "/dev/null"
    assert opts["ConnectTimeout"] == "3" and "ServerAliveInterval" not in opts
    assert "ProxyCommand" not in opts and "-J" not in argv and "-t" not in argv


def test_explicit_settings_win_over_ssh_config_and_the_host_template_is_the_alias(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "Host *-mgmt\n  User cfguser\n  Port 2200\n")
    settings = SshSettings(ssh_config=[str(cfg)], host="{node}-mgmt", user="root", port=22022,
                           identity_files=["/keys/id_%u"], keepalive_s=15)
    argv = SshSource(settings).node_shell_argv("gpu07", command="uptime", tty=True, program="/opt/ssh")
    assert argv[0] == "/opt/ssh" and argv[-4:] == ("-t", "--", "gpu07-mgmt", "uptime")
    assert argv[argv.index("-l") + 1] == "root" and argv[argv.index("-p") + 1] == "22022"
    assert argv[argv.index("-i") + 1] == "/keys/id_%%u"  # ssh expands %-tokens in IdentityFile: literal % doubled
    assert _opts(argv)["ServerAliveInterval"] == "15"


def test_no_ssh_config_is_none_and_insecure_turns_checking_off_for_both(tmp_path: Path) -> None:
    argv = SshSource(SshSettings(ssh_config=[], insecure_skip_host_key_check=True)).node_shell_argv("gpu01")
    assert argv[argv.index("-F") + 1] == "none"
    opts = _opts(argv)
    assert opts["StrictHostKeyChecking"] == "no" and opts["UserKnownHostsFile"] == "/dev/null"


def _expand(proxy_command: str, host: str, port: str) -> list[str]:
    """What ssh runs for a ProxyCommand: its %-tokens expanded, then the shell's words."""
    out, i = [], 0
    while i < len(proxy_command):
        c = proxy_command[i]
        if c == "%" and i + 1 < len(proxy_command):
            nxt = proxy_command[i + 1]
            out.append({"h": host, "p": port, "%": "%"}[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return shlex.split("".join(out))


def test_a_jump_host_is_a_proxy_command_with_the_same_options(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "Host bastion\n  HostName 192.0.2.9\n  Port 2022\n  User jumper\n"
                            "Host gpu01\n  HostName 10.0.0.1\n  ProxyJump bastion\n")
    kh = tmp_path / "known 100%"
    argv = SshSource(SshSettings(ssh_config=[str(cfg)], known_hosts=[str(kh)])).node_shell_argv("gpu01")
    inner = _expand(_opts(argv)["ProxyCommand"], "10.0.0.1", "22")
    assert inner[0] == "ssh" and inner[-4:] == ["-W", "[10.0.0.1]:22", "--", "bastion"]
    assert inner[inner.index("-p") + 1] == "2022" and inner[inner.index("-l") + 1] == "jumper"
    assert _opts(tuple(inner))["HostName"] == "192.0.2.9"
    # the hop checks its host key against the same files, with the same policy
    assert _opts(tuple(inner))["UserKnownHostsFile"] == f'"{str(kh).replace("%", "%%")}"'
    assert _opts(tuple(inner))["StrictHostKeyChecking"] == "yes"


def test_a_jump_chain_is_passed_as_minus_j(tmp_path: Path) -> None:
    settings = SshSettings(ssh_config=[], proxy_jump="a@hop1:2201,hop2")
    argv = SshSource(settings).node_shell_argv("gpu01")
    assert argv[argv.index("-J") + 1].startswith("a@hop1:2201,") and "ProxyCommand" not in _opts(argv)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_node_name_builds_no_argv(name: str) -> None:
    with pytest.raises(ValueError):
        SshSource(SshSettings(ssh_config=[])).node_shell_argv(name)


def test_a_hostile_jump_host_builds_no_argv() -> None:
    with pytest.raises(ValueError, match="jump host"):
        SshSource(SshSettings(ssh_config=[], proxy_jump="-oProxyCommand=id")).node_shell_argv("gpu01")


def test_a_refused_target_raises() -> None:
    with pytest.raises(ValueError, match="nope"):
        ssh_argv(SshSettings(ssh_config=[]), Target(node="x", error="nope"))


def test_kubectl_exec_argv_uses_the_sources_kubeconfig_and_context() -> None:
    settings = K8sSettings(kubeconfig="~/kc", context="prod")
    argv = kubectl_exec_argv(settings, "ml", "trainer-0", "worker", kubectl="/usr/bin/kubectl")
    assert argv == ("/usr/bin/kubectl", "--kubeconfig", str(Path("~/kc").expanduser()), "--context", "prod",
                    "exec", "-it", "-n", "ml", "trainer-0", "-c", "worker", "--", *CONTAINER_SHELL)
    assert kubectl_exec_argv(K8sSettings(in_cluster=True), "a", "b", None) == (
        "kubectl", "exec", "-it", "-n", "a", "b", "--", *CONTAINER_SHELL)


@pytest.mark.parametrize(("ns", "pod", "container"), [
    ("ml;id", "p", None), ("ml", "-c", None), ("ml", "p", "--privileged"), ("ml", "p q", None),
    ("ml", "p", "c\x1b]0;x\x07"), ("-n", "p", None), ("ml", "p", "UPPER")])
def test_hostile_pod_names_build_no_argv(ns: str, pod: str, container: str | None) -> None:
    with pytest.raises(ValueError):
        kubectl_exec_argv(K8sSettings(), ns, pod, container)


def test_srun_argv_uses_the_sources_slurm_conf_and_bin_dir() -> None:
    settings = SlurmSettings(slurm_conf="/etc/slurm-lab/slurm.conf", bin_dir="/opt/slurm/bin")
    assert srun_argv(settings, "4242", "/bin/bash") == (
        "env", "SLURM_CONF=/etc/slurm-lab/slurm.conf", "/opt/slurm/bin/srun", "--jobid=4242", "--overlap", "--pty",
        "/bin/bash")
    assert srun_argv(SlurmSettings(), "7", "/bin/sh") == ("srun", "--jobid=7", "--overlap", "--pty", "/bin/sh")
    assert srun_remote_command("7") == 'srun --jobid=7 --overlap --pty "${SHELL:-/bin/sh}"'


@pytest.mark.parametrize("job", ["0", "12_3", "-1", "7;id", "7 --uid=0", "$(id)", ""])
def test_a_bad_job_id_or_shell_builds_no_argv(job: str) -> None:
    with pytest.raises(ValueError):
        srun_argv(SlurmSettings(), job, "/bin/sh")
    with pytest.raises(ValueError):
        srun_remote_command(job)
    with pytest.raises(ValueError):
        srun_argv(SlurmSettings(), "7", "bash; id")
