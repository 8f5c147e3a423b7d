"""The live Ceph test bed for pytest: a real one-node Ceph 16.2 (mon, mgr, memstore OSD, radosgw) on loopback,
made and driven by ``bed.sh`` in a tmp dir; every daemon stopped by its pid (``bed.sh stop``), nothing left.

``stop_osd`` / ``start_osd`` break and mend it (SIGTERM to the OSD's pid: the mon marks it down at once).
``s3_user`` is the radosgw user bed.sh creates (keys written to files the S3 source reads)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BED = HERE / "bed.sh"
PORTS = {"CEPHLAB_MON_PORT": 23300, "CEPHLAB_MON_V1_PORT": 23789, "CEPHLAB_RGW_PORT": 27480,
         "CEPHLAB_PROM_PORT": 29283}
MS_RANGE = (26800, 26899)
S3_ACCESS = "LABACCESSKEY000000001"  # bed.sh's radosgw user "lab"
S3_SECRET = "labsecretkey0000000000000000000000000001"


def ceph_installed() -> str | None:
    """None when the bed can run here, else why not."""
    for tool in ("ceph-mon", "ceph-mgr", "ceph-osd", "radosgw", "ceph", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install ceph-mon ceph-mgr ceph-osd radosgw ceph-common; .ci/ceph-deps.sh)"
    if os.geteuid() != 0:
        return "the Ceph bed runs its daemons in their own UTS namespace (unshare --uts): needs root"
    return None


def _port_free(port: int) -> bool:
    """Nobody listens on it. SO_REUSEADDR, as Ceph's messenger binds: connections of the last bed still in
    TIME-WAIT (a second run within a minute) do not make a port busy."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class CephLab:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hpctui-ceph-"))
        busy = [p for p in (*PORTS.values(), *MS_RANGE) if not _port_free(p)]
        if busy:
            raise RuntimeError(f"Ceph bed ports in use: {busy} (another bed running? bed.sh stop)")
        self.env = dict(os.environ, CEPHLAB_DIR=str(self.dir), CEPHLAB_MS_PORT_MIN=str(MS_RANGE[0]),
                        CEPHLAB_MS_PORT_MAX=str(MS_RANGE[1]), **{k: str(v) for k, v in PORTS.items()})
        self.conf = str(self.dir / "ceph.conf")
        self.s3_endpoint = f"http://127.0.0.1:{PORTS['CEPHLAB_RGW_PORT']}"
        self.metrics_url = f"http://127.0.0.1:{PORTS['CEPHLAB_PROM_PORT']}/metrics"  # the mgr's prometheus module
        self.start_s: float | None = None

    def bed(self, *args: str, timeout: float = 300) -> str:
        r = subprocess.run(["bash", str(BED), *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"bed.sh {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
        return r.stderr

    def start(self) -> None:
        t = time.monotonic()
        self.bed("start")
        self.start_s = time.monotonic() - t

    def stop(self) -> None:
        if self.dir.exists():
            self.bed("stop", timeout=200)
            shutil.rmtree(self.dir, ignore_errors=True)

    def pid(self, daemon: str) -> int | None:
        p = self.dir / "run" / f"{daemon}.pid"
        try:
            return int(p.read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> dict[str, int]:
        return {d: pid for d in ("mon", "mgr", "osd", "rgw") if (pid := self.pid(d)) is not None}

    def stop_osd(self) -> None:
        """SIGTERM to the OSD's pid and wait for it to exit (it tells the mon on the way out)."""
        pid = self.pid("osd")
        assert pid is not None, "no OSD running"
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        (self.dir / "run" / "osd.pid").unlink(missing_ok=True)

    def start_osd(self) -> None:
        """Start what is not running (the OSD) and wait for HEALTH_OK with every PG active+clean."""
        self.bed("start")

    def ceph(self, *args: str, timeout: float = 30) -> str:
        r = subprocess.run(["ceph", "-c", self.conf, "--connect-timeout", "10", *args], capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"ceph {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def write_keys(self, into: Path, access: str = S3_ACCESS, secret: str = S3_SECRET) -> tuple[Path, Path]:
        """The S3 user's keys in two private files (what the s3 source's *_file settings read)."""
        into.mkdir(parents=True, exist_ok=True)
        a, s = into / "access_key", into / "secret_key"
        for path, value in ((a, access), (s, secret)):
            path.write_text(value + "\n")
            path.chmod(0o600)
        return a, s
