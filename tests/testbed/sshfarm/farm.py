"""An SSH node farm on loopback: N node addresses (127.B.x.y) served by ONE asyncssh process.

The real-sshd bed (tests/testbed/ssh) proves compatibility but costs a forked sshd session and a shell
loop per node; this farm proves scale: 1,024 nodes cost one Python process on the server side, so what
a benchmark measures is the client (hpctui, pdsh, clush). The server (farm_server.py) answers the hpctui
probe with recorded probe records at the probe's interval and plain commands (``hostname``, ``uptime``,
``nvidia-smi -L``...) with canned answers.

Everything lives in a temporary directory of the farm's own: the host key, the client key (the only
authorized key), ``known_hosts`` with one line per address, an OpenSSH ``ssh_config`` with one ``Host``
block per node (for ``ssh -F``, pdsh and clush) and a hosts file (``pdsh -w ^FILE``). No user file
(``~/.ssh``) is read or written. The server runs in its own session and is stopped by pid.

    farm = SshFarm(n_nodes=16); farm.start(); ...; farm.stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE / "farm_server.py"
STREAM_DIRS = (HERE / "streams", HERE.parents[1] / "fixtures" / "probes" / "loop")
DEFAULT_MIX = ("h100-busy",)


def streams() -> dict[str, Path]:
    """Recorded probe streams by name: this farm's own (streams/) and the parser fixtures (loop/)."""
    out: dict[str, Path] = {}
    for d in STREAM_DIRS:
        for p in sorted(d.glob("*.stream")):
            out.setdefault(p.stem, p)
    return out


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (and its waited-for children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class SshFarm:
    n_nodes: int = 16
    mix: tuple[str, ...] = DEFAULT_MIX  # stream names, given to the nodes in turn
    prefix: str = "node"
    python: str = sys.executable
    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="hpctui-sshfarm-")))
    names: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    port: int = 0
    user: str = ""
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        import pwd

        if not 1 <= self.n_nodes <= 60000:
            raise ValueError("n_nodes must be 1..60000")
        known = streams()
        missing = [m for m in self.mix if m not in known]
        if missing or not self.mix:
            raise ValueError(f"unknown probe stream(s) {missing}; known: {sorted(known)}")
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.names = [f"{self.prefix}{i + 1:04d}" for i in range(self.n_nodes)]

    # -- files ------------------------------------------------------------------------------------

    @property
    def client_key(self) -> Path:
        return self.dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def hosts_file(self) -> Path:
        return self.dir / "hosts"

    @property
    def hostlist(self) -> str:
        return f"{self.prefix}[0001-{self.n_nodes:04d}]"

    def kind_of(self, index: int) -> str:
        return self.mix[index % len(self.mix)]

    def _keys(self) -> None:
        import asyncssh

        host = asyncssh.generate_private_key("ssh-ed25519")
        client = asyncssh.generate_private_key("ssh-ed25519", comment="hpctui-sshfarm")
        host.write_private_key(str(self.dir / "host_ed25519"))
        host.write_public_key(str(self.dir / "host_ed25519.pub"))
        client.write_private_key(str(self.client_key))
        client.write_public_key(str(self.client_key) + ".pub")
        shutil.copy(str(self.client_key) + ".pub", self.dir / "authorized_keys")
        for p in (self.dir / "host_ed25519", self.client_key):
            p.chmod(0o600)  # OpenSSH refuses a readable private key

    def _write_client_files(self) -> None:
        key = " ".join((self.dir / "host_ed25519.pub").read_text().split()[:2])
        self.known_hosts.write_text("".join(f"[{a}]:{self.port} {key}\n" for a in self.addresses))
        blocks = [f"Host {n}\n  HostName {a}\n" for n, a in zip(self.names, self.addresses, strict=True)]
        blocks.append(
            f"Host *\n  Port {self.port}\n  User {self.user}\n  IdentityFile {self.client_key}\n"
            "  IdentitiesOnly yes\n  IdentityAgent none\n"
            f"  UserKnownHostsFile {self.known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  ControlMaster no\n  ControlPath none\n"
            "  ConnectTimeout 30\n  LogLevel ERROR\n")
        self.ssh_config.write_text("".join(blocks))
        self.hosts_file.write_text("".join(n + "\n" for n in self.names))

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._keys()
        known = streams()
        last = ""
        for _attempt in range(4):  # a random /16 of loopback; another on a clash
            second = random.randint(20, 63)  # tests/testbed/ssh uses 64..250
            self.addresses = [f"127.{second}.{i // 250}.{i % 250 + 1}" for i in range(self.n_nodes)]
            ready = self.dir / "ready"
            ready.unlink(missing_ok=True)
            spec = {"addresses": self.addresses, "names": self.names,
                    "kinds": [self.kind_of(i) for i in range(self.n_nodes)],
                    "streams": sorted({str(known[k]) for k in self.mix}),
                    "host_key": str(self.dir / "host_ed25519"), "authorized_keys": str(self.dir / "authorized_keys"),
                    "ready": str(ready), "port": 0}
            (self.dir / "spec.json").write_text(json.dumps(spec))
            log = (self.dir / "server.log").open("ab")
            self.proc = subprocess.Popen([self.python, str(SERVER), str(self.dir / "spec.json")],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)  # setsid: its own session, stopped by pid
            log.close()
            deadline = time.monotonic() + timeout
            while not ready.exists() and self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if ready.exists():
                self.port = int(json.loads(ready.read_text())["port"])
                self._write_client_files()
                return
            last = (self.dir / "server.log").read_text()[-600:]
            self._kill()
        self.stop()
        raise RuntimeError(f"SSH farm did not start: {last}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_s(self) -> float:
        return proc_cpu_s(self.pid)

    def rss_mib(self) -> float:
        return proc_rss_mib(self.pid)

    def session_pids(self) -> list[int]:
        """Live processes in the server's session (the server itself: it forks nothing)."""
        if self.proc is None:
            return []
        out = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":
                out.append(int(d.name))
        return out

    def _kill(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)

    def stop(self) -> None:
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SshFarm:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
