"""A real OpenSSH test bed on loopback: N node addresses (distinct 127.B.x.y), one bastion.

- sshd accepts at most 16 ``ListenAddress`` sockets, so the bed runs one ``sshd -D`` per
  16 node addresses (all on one free port), each bound to its own loopback addresses only.
- A second sshd on 127.0.0.1 is the bastion (ProxyJump): it allows TCP forwarding.
- Daemons run under ``setsid``; they are stopped by pid (their process group), never by name.
- The server knows which node was dialled from ``$SSH_CONNECTION`` (its 3rd field);
  ``SetEnv`` gives every session the bed's directory, shims path and faults file.

Transport faults made here, by node:
  ``unreachable``  no listener on its address (connection refused)
  ``silent``       a socket that listens but never speaks (handshake timeout)
  ``auth``         sshd refuses its key (``Match LocalAddress`` → no authorized keys)
  ``hostkey_unknown`` / ``hostkey_changed``  missing / wrong key in the client's known_hosts
Node-side faults (``hang``, ``garbage``, ``cut``, ``dies``, ``hung_mount``...) are only written to
``faults`` (``address fault`` per line) for the node shims to act on.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TRANSPORT_FAULTS = frozenset({"unreachable", "silent", "auth", "hostkey_unknown", "hostkey_changed"})
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
SSH_KEYGEN = shutil.which("ssh-keygen")


def sshd_missing() -> str | None:
    if SSHD is None:
        return "OpenSSH sshd is not installed (bash .ci/ssh-deps.sh)"
    if SSH_KEYGEN is None:
        return "ssh-keygen is not installed (bash .ci/ssh-deps.sh)"
    return None


@dataclass
class BedNode:
    name: str
    address: str
    fault: str | None = None


@dataclass
class SshBed:
    n_nodes: int = 64
    faults: dict[str, str] = field(default_factory=dict)  # node name -> fault
    env: dict[str, str] = field(default_factory=dict)  # extra SetEnv for every session
    prefix: str = "node"
    nodes: list[BedNode] = field(default_factory=list)
    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="hpctui-sshbed-")))
    port: int = 0
    bastion_port: int = 0
    user: str = ""
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _silent: list[socket.socket] = field(default_factory=list)

    # -- layout ---------------------------------------------------------------------------------

    def __post_init__(self) -> None:
        import pwd

        self.user = pwd.getpwuid(os.getuid()).pw_name
        second = random.randint(64, 250)  # one /16 of loopback per bed, random against parallel beds
        for i in range(self.n_nodes):
            name = f"{self.prefix}{i + 1:04d}"
            addr = f"127.{second}.{(i + 1) // 250}.{(i + 1) % 250 + 1}"
            self.nodes.append(BedNode(name, addr, self.faults.get(name)))

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
    def faults_file(self) -> Path:
        return self.dir / "faults"

    def node(self, name: str) -> BedNode:
        return next(n for n in self.nodes if n.name == name)

    def _keygen(self, path: Path) -> None:
        subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)  # type: ignore[list-item]

    def _free_port(self, addrs: list[str]) -> int:
        for _ in range(50):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            ok = True
            for a in addrs:
                with socket.socket() as t:
                    try:
                        t.bind((a, port))
                    except OSError:
                        ok = False
                        break
            if ok:
                return port
        raise RuntimeError("no free port for the SSH bed")

    def _sshd_config(self, index: int, addrs: list[str], port: int, *, bastion: bool = False) -> Path:
        lines = [f"Port {port}"] + [f"ListenAddress {a}" for a in addrs] + [
            f"HostKey {self.dir / 'host_ed25519'}",
            f"PidFile {self.dir / f'sshd-{index}.pid'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            "UsePAM no", "StrictModes no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
            "MaxStartups 4000:30:8000", "MaxSessions 100", "UseDNS no", "LogLevel ERROR",
            "PrintMotd no", "PrintLastLog no", f"AllowTcpForwarding {'yes' if bastion else 'no'}",
            "X11Forwarding no", "PermitTTY no",
        ]
        # HOME: the bed's own (empty) home, so a remote shell reads no profile of the real user's
        env = {"HOME": str(self.dir / "home"), "HPCTUI_BED_DIR": str(self.dir),
               "HPCTUI_BED_FAULTS": str(self.faults_file), **self.env}
        lines.append("SetEnv " + " ".join(f'{k}="{v}"' for k, v in env.items()))
        refused = [n.address for n in self.nodes if n.fault == "auth" and n.address in addrs]
        if refused and not bastion:
            lines += [f"Match LocalAddress {','.join(refused)}", "    AuthorizedKeysFile /dev/null"]
        path = self.dir / f"sshd-{index}.conf"
        path.write_text("\n".join(lines) + "\n")
        return path

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation dir
        (self.dir / "home").mkdir(exist_ok=True)
        self._keygen(self.dir / "host_ed25519")
        self._keygen(self.dir / "other_ed25519")  # the "changed" host key
        self._keygen(self.client_key)
        shutil.copy(self.client_key.with_suffix(".pub"), self.dir / "authorized_keys")
        self.faults_file.write_text("".join(f"{n.address} {n.fault}\n" for n in self.nodes if n.fault))
        served = [n for n in self.nodes if n.fault not in ("unreachable", "silent")]
        self.port = self._free_port([n.address for n in self.nodes])
        groups = [served[i:i + 16] for i in range(0, len(served), 16)]
        for gi, group in enumerate(groups):
            self._spawn(self._sshd_config(gi, [n.address for n in group], self.port), f"sshd-{gi}")
        self.bastion_port = self._free_port(["127.0.0.1"])
        self._spawn(self._sshd_config(len(groups), ["127.0.0.1"], self.bastion_port, bastion=True), "bastion")
        for n in self.nodes:
            if n.fault == "silent":
                s = socket.socket()
                s.bind((n.address, self.port))
                s.listen(64)  # the kernel completes the TCP handshake; nobody ever speaks SSH
                self._silent.append(s)
        self._wait_ready([(n.address, self.port) for n in served] + [("127.0.0.1", self.bastion_port)])
        self.write_known_hosts()
        self.write_ssh_config()

    def _spawn(self, config: Path, tag: str) -> None:
        log = self.dir / f"{tag}.log"
        proc = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)],  # type: ignore[list-item]
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # setsid: its own process group, stopped by pid
        self._procs.append(proc)

    def _wait_ready(self, endpoints: list[tuple[str, int]], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        pending = list(endpoints)
        while pending:
            for p in self._procs:
                if p.poll() is not None:
                    logs = " ".join(f.read_text()[-300:] for f in self.dir.glob("*.log"))
                    raise RuntimeError(f"sshd exited with {p.returncode}: {logs}")
            addr, port = pending[0]
            try:
                with socket.create_connection((addr, port), timeout=1) as s:
                    s.settimeout(2)
                    if s.recv(8).startswith(b"SSH-"):
                        pending.pop(0)
                        continue
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd not ready on {addr}:{port} after {timeout:g} s")
            time.sleep(0.05)

    def write_known_hosts(self) -> None:
        good = (self.dir / "host_ed25519.pub").read_text().split()[:2]
        other = (self.dir / "other_ed25519.pub").read_text().split()[:2]
        lines = [f"[127.0.0.1]:{self.bastion_port} {' '.join(good)}"]
        for n in self.nodes:
            if n.fault == "hostkey_unknown":
                continue
            key = other if n.fault == "hostkey_changed" else good
            lines.append(f"[{n.address}]:{self.port} {' '.join(key)}")
        self.known_hosts.write_text("\n".join(lines) + "\n")

    def write_ssh_config(self, *, proxy_jump: bool = False, path: Path | None = None) -> Path:
        """A per-node ``Host`` block (HostName, Port, User, IdentityFile), optionally via the bastion."""
        blocks = []
        if proxy_jump:
            blocks.append(f"Host bastion\n  HostName 127.0.0.1\n  Port {self.bastion_port}\n  User {self.user}\n"
                          f"  IdentityFile {self.client_key}\n")
        for n in self.nodes:
            block = (f"Host {n.name}\n  HostName {n.address}\n  Port {self.port}\n  User {self.user}\n"
                     f"  IdentityFile {self.client_key}\n")
            if proxy_jump:
                block += "  ProxyJump bastion\n"
            blocks.append(block)
        blocks.append(f"Host *\n  UserKnownHostsFile {self.known_hosts}\n  BatchMode yes\n")
        out = path or self.ssh_config
        out.write_text("\n".join(blocks))
        return out

    def bed_pids(self) -> set[int]:
        """Every live process of this bed: the listeners, their descendants (sshd gives each
        connection its own session, so a process group is not enough) and any process whose
        environment carries this bed's directory (a remote command orphaned by its sshd)."""
        parent: dict[int, int] = {}
        marked: set[int] = set()
        marker = f"HPCTUI_BED_DIR={self.dir}".encode()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                if marker in (d / "environ").read_bytes():
                    marked.add(int(d.name))
            except (OSError, ValueError, IndexError):
                continue
        found = {p.pid for p in self._procs if p.poll() is None} | marked
        grew = True
        while grew:
            more = {pid for pid, pp in parent.items() if pp in found and pid not in found}
            found |= more
            grew = bool(more)
        return found

    def stop(self) -> None:
        for s in self._silent:
            s.close()
        self._silent.clear()
        for pid in self.bed_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        self._procs.clear()
        for pid in self.bed_pids():  # stragglers that ignored SIGTERM
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def shim_probe_table(shim_root: Path, table: str) -> str:
    """The TOML ``probe`` sub-table that points the probe loop at a node-shim tree."""
    return f'[{table}.probe]\nshim_root = "{shim_root}"\n'
