"""Python handle on the real Slurm test cluster started by ``cluster.sh`` (same directory).

Used by tests/slurm/conftest.py: one cluster per pytest session, ``reset()`` between tests,
and the helpers tests need to make real jobs (``sbatch``) and break the controller on purpose.
Everything is stopped by pid (cluster.sh stop), never by process name.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "cluster.sh"
NODES = ("gpu01", "gpu02", "gpu03", "gpu04", "cpu01", "cpu02")
PARTITIONS = ("cpu", "gpu", "debug")


def slurm_installed() -> str | None:
    """None if the bed can run here, else the reason it cannot."""
    missing = [b for b in ("slurmctld", "slurmd", "slurmrestd", "munged", "sbatch", "curl")
               if shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None]
    if missing:
        return f"Slurm test bed needs {', '.join(missing)} (install with .ci/slurm-deps.sh)"
    if os.geteuid() != 0:
        return "Slurm test bed needs root (mknod, setsid daemons, munge key)"
    return None


def accounting_installed() -> bool:
    """cluster.sh turns accounting on (SLURMLAB_ACCOUNTING=auto) exactly when this holds."""
    return os.access("/usr/sbin/slurmdbd", os.X_OK) and os.access("/usr/sbin/mariadbd", os.X_OK)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_port_offset() -> int:
    """A port offset (multiple of 100) under which every port of the bed is free."""
    base = (16817, 16818, 16819, 17001, 17002, 17003, 17004, 17011, 17012, 6820, 13306)
    for off in range(0, 3000, 100):
        if all(_port_free(p + off) for p in base):
            return off
    raise RuntimeError("no free port range for the Slurm test bed")


class SlurmLab:
    version = "22.05"  # Debian 12's slurm-wlm on the host; see ../slurm2411 for 24.11
    rest_version = "v0.0.38"  # the newest data_parser its slurmrestd serves (what hpctui picks)
    no_accounting: str | None = None  # why this Slurm version's bed never has accounting

    def __init__(self, lab_dir: str | None = None) -> None:
        self.own_dir = lab_dir is None
        self.dir = Path(lab_dir or tempfile.mkdtemp(prefix="hpctui-slurmlab-"))
        self.offset = pick_port_offset()
        self.env = dict(os.environ, SLURMLAB=str(self.dir), SLURMLAB_PORT_OFFSET=str(self.offset))
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"
        self.env["SLURM_CONF"] = str(self.dir / "etc" / "slurm.conf")
        self.slurm_conf = self.env["SLURM_CONF"]
        self.rest_socket = str(self.dir / "run" / "slurmrestd.sock")
        self.rest_port = 6820 + self.offset
        self.started = False
        self.start_s: float | None = None
        self.stop_s: float | None = None

    # -- lifecycle --------------------------------------------------------------
    def script(self, action: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SCRIPT), action], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def start(self) -> None:
        t0 = time.monotonic()
        self.started = True  # even a half-started bed must be stopped
        res = self.script("start")
        if res.returncode != 0:
            raise RuntimeError(f"cluster.sh start failed ({res.returncode}):\n{res.stderr[-3000:]}")
        self.start_s = time.monotonic() - t0

    def stop(self) -> None:
        if not self.started:
            return
        t0 = time.monotonic()
        res = self.script("stop")
        self.stop_s = time.monotonic() - t0
        self.started = False
        if res.returncode == 0 and self.own_dir and not os.environ.get("HPCTUI_KEEP_SLURMLAB"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def reset(self) -> None:
        if not self.pid_alive("slurmctld"):
            self.start()  # a test that killed the controller and failed before restarting it
        res = self.script("reset")
        if res.returncode != 0:
            raise RuntimeError(f"cluster.sh reset failed:\n{res.stderr[-2000:]}")

    @property
    def accounting(self) -> bool:
        """The running bed has slurmdbd accounting (read from its slurm.conf)."""
        try:
            conf = Path(self.slurm_conf).read_text()
        except OSError:
            return False
        return "AccountingStorageType=accounting_storage/slurmdbd" in conf

    # -- daemons ------------------------------------------------------------------
    def pid(self, daemon: str) -> int | None:
        f = self.dir / "run" / f"{daemon}.fg.pid"
        try:
            return int(f.read_text().strip())
        except (OSError, ValueError):
            return None

    def pid_alive(self, daemon: str) -> bool:
        pid = self.pid(daemon)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill_ctld(self) -> None:
        """SIGKILL slurmctld by its recorded pid (a crash, not a clean shutdown)."""
        self.kill_daemon("slurmctld")

    def kill_daemon(self, daemon: str) -> None:
        """SIGKILL one daemon of this bed (slurmctld, slurmdbd, ...) by its recorded pid;
        ``start()`` brings the missing ones back, keeping config, state and accounting data."""
        pid = self.pid(daemon)
        assert pid is not None, f"no {daemon} pid"
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not self.pid_alive(daemon):
                return
            time.sleep(0.05)

    def restart_ctld(self) -> None:
        """Start the missing slurmctld again, keeping its saved state (cluster.sh start)."""
        self.start()

    # -- clients --------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def sbatch(self, *args: str, wrap: str = "sleep 300") -> str:
        """Submit a batch job; returns its id (or 'id' of an array job)."""
        out = self.run("sbatch", "--parsable", "-D", str(self.dir / "jobs"), "-o", "/dev/null", *args,
                       "--wrap", wrap).stdout
        return out.strip().split(";")[0]

    def state(self, job: str) -> str:
        return self.run("squeue", "-h", "-t", "all", "-j", job, "-o", "%T", check=False).stdout.strip().split("\n")[0]

    def wait_state(self, job: str, state: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.state(job)
            if seen == state:
                return
            time.sleep(0.1)
        raise AssertionError(f"job {job} never reached {state} (last: {seen!r})")

    def wait_settled(self, partition: str, timeout: float = 20) -> None:
        """Wait until no node of ``partition`` is COMPLETING, plus a second for slurmd's cleanup.
        Restarting a requeued job at once races the kill of its previous run on the same node
        (seen here: the new run FAILED with its batch step CANCELLED) — Slurm's requeue delay
        exists for this; tests that force StartTime=now must let the node settle first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.run("sinfo", "-h", "-p", partition, "-o", "%T", check=False).stdout.lower()
            if "completing" not in states:
                time.sleep(1.0)
                return
            time.sleep(0.1)
        raise AssertionError(f"partition {partition} still completing after {timeout} s")

    def wait_reason(self, job: str, timeout: float = 20) -> str:
        """Wait until the scheduler has given a pending job a reason (multifactor priority
        leaves it at "None" until the next scheduling pass)."""
        deadline = time.monotonic() + timeout
        reason = ""
        while time.monotonic() < deadline:
            reason = self.run("squeue", "-h", "-j", job, "-o", "%r", check=False).stdout.strip()
            if reason and reason != "None":
                return reason
            time.sleep(0.2)
        raise AssertionError(f"job {job} got no pending reason (last: {reason!r})")

    def uid_of(self, user: str) -> int:
        """The uid Slurm's daemons know ``user`` by (the bed's passwd: here the host's)."""
        return pwd.getpwnam(user).pw_uid

    def as_user(self, user: str, gid: int, argv: list[bytes]) -> list[bytes]:
        """``argv`` (a Slurm client command) run as ``user``/``gid`` without privileges."""
        return [b"setpriv", f"--reuid={user}".encode(), f"--regid={gid}".encode(), b"--clear-groups", *argv]

    def token(self, lifespan: int = 600, user: str = "root") -> str:
        out = self.run("scontrol", "token", f"username={user}", f"lifespan={lifespan}").stdout.strip()
        return out.removeprefix("SLURM_JWT=")

    @property
    def rest_url_unix(self) -> str:
        return f"unix://{self.rest_socket}"

    @property
    def rest_url_tcp(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"


def scenario(lab: SlurmLab) -> dict[str, str]:
    """A small mix of real jobs: running GPU job, array, pending (Resources), held. Returns ids."""
    ids = {
        "gpu": lab.sbatch("-p", "gpu", "-w", "gpu01", "--gres=gpu:h100:2", "-J", "train-llm"),
        "array": lab.sbatch("-p", "cpu", "-n", "1", "--array=0-3%2", "-J", "sweep"),
        "held": lab.sbatch("-p", "cpu", "-n", "1", "--hold", "-J", "held-job"),
    }
    # 2 nodes x 8 H100: gpu01 already has 2 in use -> pending with reason Resources
    ids["big"] = lab.sbatch("-p", "gpu", "-N", "2", "--gres=gpu:h100:8", "-J", "needs-16-h100")
    lab.wait_state(ids["gpu"], "RUNNING")
    lab.wait_state(f"{ids['array']}_0", "RUNNING")
    lab.wait_reason(ids["big"])
    return ids
