"""The SSH farm's server process: one asyncssh server listening on N loopback addresses.

    python farm_server.py SPEC.json      (farm.py writes the spec and starts this; not for hand use)

Every address is one node (its name from the spec, found by the address the client dialled). A session's
exec request is answered by what it asks for:

- the hpctui probe (``exec sh -c '# hpctui node probe ...'``): the node's recorded probe records
  (``*.stream``: the real loop's output, recorded against the node shims), one per the probe's own
  interval (its ``IV_MS``), renumbered from 1 and stamped with the current time (the only edits); after
  the last record of the recording the cycle starts over. ``MAXREC`` (a one-shot probe) is honoured.
- a plain command (``hostname``, ``uptime``, ``nvidia-smi -L``...): a canned answer, see ``CANNED``;
  anything else exits 127 with a shell's "not found" on stderr.

Nothing is run: no shell, no fork per session, so 1,024 nodes cost one process. The spec names the
host key and the authorized client keys (files in the farm's temporary directory). When every address
listens, the port is written to the spec's ``ready`` file; SIGTERM stops the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[1] / "fixtures" / "probes"

_BEGIN = "@@hpctui begin "
_PROBE_MARK = "# hpctui node probe"
_IV = re.compile(r"\bIV_MS=(\d+)")
_MAXREC = re.compile(r"\bMAXREC=(\d+)")


class Recording:
    """The records of one ``.stream`` file, each split into (protocol field, body between begin and end)."""

    def __init__(self, path: Path) -> None:
        self.name = path.stem
        text = path.read_text()
        self.records: list[tuple[str, bytes]] = []
        for chunk in re.split(r"(?m)^(?=@@hpctui begin )", text):
            if not chunk.startswith(_BEGIN):
                continue
            head, _, rest = chunk.partition("\n")
            body, sep, _tail = rest.rpartition("@@hpctui end ")
            if not sep:
                continue
            fields = head.split()
            protocol = fields[4] if len(fields) > 4 else "1"
            self.records.append((protocol, body.encode()))
        if not self.records:
            raise ValueError(f"{path}: no probe records")

    def record(self, seq: int) -> bytes:
        """Record ``seq`` (1-based) as the loop would print it now."""
        protocol, body = self.records[(seq - 1) % len(self.records)]
        head = f"{_BEGIN}{seq} {time.time_ns()} {protocol}\n".encode()
        return head + body + f"@@hpctui end {seq}\n".encode()


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def _uptime(_node: str) -> str:
    return time.strftime(" %H:%M:%S") + " up 41 days,  3:07,  0 users,  load average: 0.52, 0.58, 0.59\n"


# command line (as sent) -> answer for the node; the nvidia-smi answers are the recorded fixtures
CANNED: dict[str, Callable[[str], str]] = {
    "hostname": lambda node: node + "\n",
    "hostname -s": lambda node: node + "\n",
    "uptime": _uptime,
    "cat /proc/loadavg": lambda _n: "0.52 0.58 0.59 2/611 48213\n",
    "true": lambda _n: "",
    "nvidia-smi -L": lambda _n: _fixture("nvidia-smi_L_h100-mig-enabled_drv590.48.01.txt"),
    "nvidia-smi nvlink -s": lambda _n: _fixture("nvidia-smi_nvlink-s_h100-80gb-hbm3_drv590.48.01.txt"),
    "nvidia-smi -q": lambda _n: _fixture("nvidia-smi_q_h100-80gb-hbm3_drv590.48.01_load.txt"),
}
_QUERY_GPU = "nvidia-smi_query-gpu_allfields_h100-80gb-hbm3_drv590.48.01_load.csv"


def canned(command: str, node: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a plain command on ``node``."""
    command = command.strip()
    answer = CANNED.get(command)
    if answer is not None:
        return 0, answer(node), ""
    try:
        words = shlex.split(command)
    except ValueError:
        return 2, "", "sh: 1: Syntax error: Unterminated quoted string\n"
    if words and words[0] == "echo":
        return 0, " ".join(words[1:]) + "\n", ""
    if words[:1] == ["nvidia-smi"] and any(w.startswith("--query-gpu") for w in words):
        return 0, _fixture(_QUERY_GPU), ""
    first = words[0] if words else command
    return 127, "", f"sh: 1: {first}: not found\n"


class Farm:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.names: dict[str, str] = dict(zip(spec["addresses"], spec["names"], strict=True))
        streams = {p.stem: Recording(p) for p in map(Path, spec["streams"])}
        self.recording: dict[str, Recording] = {
            addr: streams[kind] for addr, kind in zip(spec["addresses"], spec["kinds"], strict=True)}
        self.sessions = 0
        self.records_sent = 0

    def node_of(self, process: asyncssh.SSHServerProcess[bytes]) -> str:
        sock = process.get_extra_info("sockname") or ("?",)
        return str(sock[0])

    async def handle(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        self.sessions += 1
        addr = self.node_of(process)
        command = process.command or ""
        try:
            if _PROBE_MARK in command:
                await self.stream(process, self.recording[addr], command)
                process.exit(0)
            else:
                status, out, err = canned(command, self.names.get(addr, addr))
                if out:
                    process.stdout.write(out.encode())
                if err:
                    process.stderr.write(err.encode())
                process.exit(status)
        except (BrokenPipeError, ConnectionError, asyncssh.Error):
            process.close()

    async def stream(self, process: asyncssh.SSHServerProcess[bytes], rec: Recording, command: str) -> None:
        iv = _IV.search(command)
        mx = _MAXREC.search(command)
        interval = int(iv.group(1)) / 1000 if iv else 2.0
        max_records = int(mx.group(1)) if mx else 0
        loop = asyncio.get_running_loop()
        due = loop.time()
        seq = 0
        while True:
            seq += 1
            process.stdout.write(rec.record(seq))
            self.records_sent += 1
            await process.stdout.drain()
            if max_records and seq >= max_records:
                return
            due += interval
            await asyncio.sleep(max(0.0, due - loop.time()))
            if process.channel.is_closing():
                return


class _Server(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return True  # public key only, against the farm's authorized keys

    def password_auth_supported(self) -> bool:
        return False


def _write_ready(path: Path, port: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"port": port, "pid": os.getpid()}))
    tmp.replace(path)  # whole or absent


async def serve(spec: dict[str, Any]) -> None:
    farm = Farm(spec)
    addresses: list[str] = spec["addresses"]
    # built once: keys read once, not once per address
    options = asyncssh.SSHServerConnectionOptions(
        server_host_keys=[asyncssh.read_private_key(spec["host_key"])],
        authorized_client_keys=asyncssh.read_authorized_keys(spec["authorized_keys"]),
        server_factory=_Server, process_factory=farm.handle, encoding=None, allow_scp=False,
        agent_forwarding=False, x11_forwarding=False, keepalive_interval=0, login_timeout=60)
    port = int(spec.get("port", 0))
    servers: list[asyncssh.SSHAcceptor] = []
    first = await asyncssh.listen(addresses[0], port, backlog=1024, options=options)
    servers.append(first)
    port = first.get_port()
    for addr in addresses[1:]:
        servers.append(await asyncssh.listen(addr, port, backlog=1024, options=options))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    _write_ready(Path(spec["ready"]), port)
    await stop.wait()
    for s in servers:
        s.close()
    await asyncio.gather(*(s.wait_closed() for s in servers), return_exceptions=True)


def main() -> int:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 20, hard))
        except (ValueError, OSError):
            pass
    asyncio.run(serve(json.loads(Path(sys.argv[1]).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
