"""The Ceph source's ``host`` (the ``ceph`` CLI on an admin host over SSH): the exact ``ssh`` argv, and every word
of the ceph command line arriving at the remote shell as one word, never run: a stand-in ``ssh`` hands the remote
command to ``sh -c``, as sshd hands it to the login shell. (The real sshd and Ceph: tests/ceph/test_ceph_ssh_live.py.)"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from hpctui.sources.ceph.remote import remote_argv, remote_command
from hpctui.sources.ceph.settings import CephSettings, CephSshSettings
from hpctui.sources.ceph.source import CephError, CephSource

HOSTILE = ["/etc/ceph/my ceph.conf", "$(touch {m}/dollar)", "`touch {m}/backtick`", "x; touch {m}/semicolon",
           "a'b\"c", "two\nlines", "*", "--", "-f", "&& touch {m}/and", "${{HOME}}", "~root", "| touch {m}/pipe"]


def stand_in_ssh(tmp: Path) -> str:
    """An ``ssh`` that runs its remote command the way sshd does: one string to ``sh -c``."""
    script = tmp / "ssh"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import subprocess, sys
        args = sys.argv[1:]
        i = args.index("--")
        host, command = args[i + 1], args[i + 2:]
        assert host == "admin1" and len(command) == 1, args
        sys.exit(subprocess.call(["/bin/sh", "-c", command[0]]))
        """))
    script.chmod(0o755)
    return str(script)


def dump_argv(tmp: Path) -> list[str]:
    """A stand-in ``ceph`` that prints its argv as JSON."""
    script = tmp / "dump.py"
    script.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    return [sys.executable, str(script)]


def test_the_ssh_argv() -> None:
    s = CephSource(CephSettings(host="admin1", conf="/etc/ceph/my ceph.conf", client="client.hpctui", timeout_s=7,
                                ssh=CephSshSettings(ssh_config=[], user="ops", port=2222, identity_files=["/k/id"],
                                                    known_hosts=["/k/known hosts"], connect_timeout_s=4)))
    argv = asyncio.run(s.command_line("health", "detail"))
    assert argv[:4] == ["ssh", "-o", "BatchMode=yes", "-T"]
    assert argv[4:6] == ["-F", "none"]  # ssh_config = []: none read
    assert "StrictHostKeyChecking=yes" in argv and 'UserKnownHostsFile="/k/known hosts"' in argv
    assert "ConnectTimeout=4" in argv and "HostName=admin1" in argv
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "ops"
    assert argv[argv.index("-i") + 1] == "/k/id"
    assert argv[-3:-1] == ["--", "admin1"]  # nothing after "--" can be read as an option
    assert argv[-1] == ("ceph --conf '/etc/ceph/my ceph.conf' --name client.hpctui --connect-timeout 7 "
                        "health detail -f json")
    assert shlex.split(argv[-1]) == s.argv("health", "detail")
    assert s.via == "ssh"


def test_hostile_words_arrive_as_one_word_and_never_run(tmp_path: Path) -> None:
    tmp = tmp_path / "a dir with spaces"
    tmp.mkdir()
    marks = tmp_path / "marks"  # no space: the control below must be able to touch files in it
    marks.mkdir()
    words = [w.format(m=marks) for w in HOSTILE]
    source = CephSource(CephSettings(host="admin1", command=[*dump_argv(tmp), *words], conf=words[0],
                                     keyring=words[1], client=words[3],
                                     ssh=CephSshSettings(ssh_config=[], program=stand_in_ssh(tmp))))
    argv = asyncio.run(source.command_line("status"))
    r = asyncio.run(source.runner.run(argv))
    assert r.ok, r.stderr
    assert json.loads(r.stdout) == source.argv("status")[2:]  # word for word, after the interpreter and script
    assert list(marks.iterdir()) == []  # nothing ran
    # the control: words joined with spaces (what `command = ["ssh", "admin1", "ceph", ...]` sends) do run
    naive = [*argv[:-1], " ".join(["echo", words[1], words[2], words[3]])]
    asyncio.run(source.runner.run(naive))
    assert {p.name for p in marks.iterdir()} >= {"dollar", "backtick", "semicolon"}


def test_remote_command_round_trips() -> None:
    for words in (["ceph", "status"], ["ceph", "--conf", "a b"], ["ceph", ""], ["ceph", "'"], ["ceph", "é\u202e"]):
        assert shlex.split(remote_command(words)) == words
    assert remote_argv(("ssh", "--", "h"), ["ceph", "a b"]) == ["ssh", "--", "h", "ceph 'a b'"]


@pytest.mark.parametrize("bad", [{"host": "admin1; rm -rf /"}, {"host": "-oProxyCommand=x"}, {"host": ""},
                                 {"host": "a", "metrics_url": "http://m:9283/metrics"},
                                 {"metrics_url": "ftp://m/metrics"}, {"ssh": {"port": 0}},
                                 {"ssh": {"program": " "}}, {"ssh": {"nope": 1}}])
def test_settings_refuse(bad: dict[str, object]) -> None:
    with pytest.raises((ValueError, msgspec.ValidationError)):
        msgspec.convert(bad, CephSettings)


def test_a_host_ssh_cannot_resolve_is_a_ceph_error(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host admin1\n  ProxyJump bad host name!\n")
    source = CephSource(CephSettings(host="admin1", ssh=CephSshSettings(ssh_config=[str(cfg)])))
    with pytest.raises(CephError, match="ssh to admin1"):
        asyncio.run(source.collect())


def test_ssh_failing_says_so(tmp_path: Path) -> None:
    fail = tmp_path / "ssh"
    fail.write_text("#!/bin/sh\necho 'Host key verification failed.' >&2\nexit 255\n")
    fail.chmod(0o755)
    source = CephSource(CephSettings(host="admin1", ssh=CephSshSettings(ssh_config=[], program=str(fail))))
    with pytest.raises(CephError, match=r"ceph status on admin1: exit 255 \(ssh could not connect or log in\): "
                                        r"Host key verification failed\."):
        asyncio.run(source.collect())
