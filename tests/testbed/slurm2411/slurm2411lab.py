"""The same test cluster as ``../slurm/cluster.sh``, run by Slurm 24.11 (Debian 13's packages).

The daemons run in a debootstrap'd Debian 13 chroot (``build.sh``, cached outside the checkout)
that shares the host's network (loopback) and pid namespace, inside a private *mount* namespace:

* a holder process (``unshare --mount`` → ``chroot ROOT sleep infinity``) owns the namespace, in
  which ``/proc``, ``/dev``, ``/sys`` (rbind: slurmd 24.11 needs the cgroup tree), a fresh tmpfs
  ``/run`` and ``/tmp`` are mounted, and the bed's directory is bind-mounted at its host path, so a
  path (slurm.conf, the REST socket, pid files) means the same file inside and outside;
* ``cluster.sh`` itself runs inside (``nsenter -t HOLDER -m -r -w``), unchanged but for the
  version-dependent slurmrestd plugins; the client commands (``squeue`` …) are wrappers in
  ``$LAB/bin``, first on ``PATH``, that ``nsenter`` the same way.

No accounting: Debian 13's slurmdbd 24.11.5 dies at start against its own MariaDB 11.8
(``_check_mysql_concat_is_sane: null result from query `select @var := concat('');``, client
error 5027), so this bed runs with ``SLURMLAB_ACCOUNTING=0`` and the accounting tests are 22.05's.

Nothing is mounted on the host: when the holder and the daemons are gone, so are the mounts.
Stopping is by pid (cluster.sh stop, then the holder, then any process still in the namespace).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "slurm"))

from slurmlab import SCRIPT, SlurmLab  # noqa: E402

BUILD = HERE / "build.sh"
CACHE = Path(os.environ.get("HPCTUI_SLURM2411", str(Path.home() / ".cache" / "hpctui-slurm2411")))
ROOT = CACHE / "root"
TESTBED_IN_ROOT = "/srv/hpctui-testbed"  # ../slurm, bind-mounted read-only inside
CLIENTS = ("squeue", "sinfo", "scontrol", "sdiag", "sacct", "sacctmgr", "sshare", "sprio", "sbatch",
           "scancel", "srun", "sreport", "salloc", "sstat", "scrontab")


def slurm2411_installed() -> str | None:
    """None if the 24.11 bed can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "Slurm 24.11 test bed needs root (mount namespace, chroot)"
    missing = [b for b in ("unshare", "nsenter", "chroot") if shutil.which(b, path="/usr/bin:/usr/sbin:/bin:/sbin") is None]
    if missing:
        return f"Slurm 24.11 test bed needs {', '.join(missing)}"
    if not (ROOT / ".hpctui-ready").is_file():
        return f"Slurm 24.11 chroot not built at {ROOT} (run .ci/slurm2411-deps.sh)"
    return None


def _holder_script(root: Path, lab: Path) -> str:
    """Shell run by the holder: mounts (private namespace only), then ``chroot ROOT sleep``."""
    r, d = str(root), str(lab)
    return "\n".join([
        "set -e",
        f"R='{r}'",
        'mount -t proc proc "$R/proc"',
        'mount --rbind /dev "$R/dev"',
        'mount --rbind /sys "$R/sys"',
        'mount -t tmpfs -o mode=0755 tmpfs "$R/run"',
        'mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"',
        f"mkdir -p \"$R{d}\" \"$R{TESTBED_IN_ROOT}\"",
        f"mount --bind '{d}' \"$R{d}\"",
        f"mount --bind '{SCRIPT.parent}' \"$R{TESTBED_IN_ROOT}\"",
        f"mount -o remount,bind,ro \"$R{TESTBED_IN_ROOT}\"",
        # the host's name must resolve inside too (mariadb-install-db, slurmctld): the host's hosts file
        '[ -e "$R/etc/hosts" ] || : > "$R/etc/hosts"',
        'mount --bind /etc/hosts "$R/etc/hosts"',
        'exec chroot "$R" /bin/sleep infinity',
    ])


class Slurm2411Lab(SlurmLab):
    """:class:`SlurmLab` for the chroot'd 24.11 daemons (same nodes, partitions, ports scheme)."""

    version = "24.11"
    rest_version = "v0.0.42"  # openapi/slurmctld serves v0.0.40, v0.0.41, v0.0.42
    no_accounting = ("accounting is proven on 22.05 only: Debian 13's slurmdbd 24.11.5 cannot start "
                     "against its MariaDB 11.8 (tests/testbed/slurm2411/slurm2411lab.py)")

    def __init__(self, lab_dir: str | None = None) -> None:
        super().__init__(lab_dir)
        self.root = ROOT
        self.bin_dir = self.dir / "bin"
        self.holder: subprocess.Popen[bytes] | None = None
        self.env["PATH"] = f"{self.bin_dir}:{self.env['PATH']}"
        self.env["SLURMLAB_ACCOUNTING"] = "0"  # see the module docstring

    # -- the namespace ----------------------------------------------------------
    def _enter(self) -> list[str]:
        assert self.holder is not None
        return ["nsenter", "-t", str(self.holder.pid), "-m", "-r", "-w", "--"]

    def _start_holder(self) -> None:
        if self.holder is not None and self.holder.poll() is None:
            return
        (self.dir / "jobs").mkdir(parents=True, exist_ok=True)
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", _holder_script(self.root, self.dir)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 10
        marker = str(self.root)
        while time.monotonic() < deadline:  # up once the holder has chroot'ed (its root is ROOT)
            if self.holder.poll() is not None:
                err = self.holder.stderr.read().decode(errors="replace") if self.holder.stderr else ""
                raise RuntimeError(f"Slurm 24.11 namespace holder failed: {err.strip()}")
            try:
                if str(Path(f"/proc/{self.holder.pid}/root").readlink()) == marker:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        else:
            raise RuntimeError("Slurm 24.11 namespace holder did not chroot in 10 s")
        self._write_wrappers()

    def _write_wrappers(self) -> None:
        """``$LAB/bin/<tool>``: run the chroot's tool in the bed's namespace, same env and args."""
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        enter = " ".join(self._enter())
        for tool in CLIENTS:
            f = self.bin_dir / tool
            f.write_text(f'#!/bin/sh\nexec {enter} /usr/bin/{tool} "$@"\n')
            f.chmod(0o755)

    def _namespace_pids(self) -> list[int]:
        """Every process (but the holder) in the holder's mount namespace."""
        if self.holder is None:
            return []
        try:
            ns = Path(f"/proc/{self.holder.pid}/ns/mnt").readlink()
        except OSError:
            return []
        out = []
        for p in Path("/proc").iterdir():
            if p.name.isdigit() and int(p.name) != self.holder.pid:
                try:
                    if (p / "ns" / "mnt").readlink() == ns:
                        out.append(int(p.name))
                except OSError:
                    continue
        return out

    def uid_of(self, user: str) -> int:
        """The chroot's passwd names the users the daemons see (the host's uids may differ)."""
        for line in (self.root / "etc" / "passwd").read_text().splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[0] == user:
                return int(fields[2])
        raise KeyError(f"no user {user!r} in the chroot's passwd")

    def as_user(self, user: str, gid: int, argv: list[bytes]) -> list[bytes]:
        """Enter the namespace as root, then drop to ``user`` inside (nsenter needs root)."""
        return [*(a.encode() for a in self._enter()), *super().as_user(user, gid, [b"/usr/bin/" + argv[0], *argv[1:]])]

    # -- lifecycle (overrides) ------------------------------------------------------
    def script(self, action: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        self._start_holder()
        return subprocess.run([*self._enter(), "bash", f"{TESTBED_IN_ROOT}/{SCRIPT.name}", action], env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> None:
        self.started = True
        try:
            self._start_holder()
        except BaseException:
            self._stop_holder()
            raise
        super().start()

    def stop(self) -> None:
        if not self.started:
            return
        t0 = time.monotonic()
        ok = self.holder is not None and self.holder.poll() is None and self.script("stop").returncode == 0
        self._stop_holder()
        self.stop_s = time.monotonic() - t0
        self.started = False
        if ok and self.own_dir and not os.environ.get("HPCTUI_KEEP_SLURMLAB"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def _stop_holder(self) -> None:
        """Kill, by pid, whatever still runs in the namespace, then the holder (the mounts go with it)."""
        if self.holder is None:
            return
        for pid in self._namespace_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait(timeout=10)
        if self.holder.stderr:
            self.holder.stderr.close()
        self.holder = None
