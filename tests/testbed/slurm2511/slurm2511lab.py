"""The same test cluster as ``../slurm/cluster.sh``, run by Slurm 25.11 built from SchedMD's source.

``build.sh`` (same directory) builds Slurm from the pinned release tag into a prefix under
``$HPCTUI_SLURM2511/<tag>`` (default ``~/.cache/hpctui-slurm2511``, outside the checkout), and a
real pyslurm compiled against it into ``<tag>/pyslurm-pyX.Y`` (not into the test venv). This bed
runs ``cluster.sh`` on the host, unchanged but for its Slurm-location switches: the daemons are
the prefix's (``SLURMLAB_SBIN``), its client tools come first on ``PATH``, and

* slurmrestd 25.11 refuses root and ``SLURMRESTD_SECURITY=disable_user_check`` in release builds,
  so the unix-socket slurmrestd runs as the unprivileged user ``slurm`` (socket in
  ``run/rest/``): reads work, admin writes over that socket are refused by slurmctld ("Invalid
  user id": the RPCs carry slurm's uid). Admin over REST is the JWT listener with a root token.
* the plugins are copied (hard links where possible) into the bed's directory, its PluginDir: the
  unprivileged slurmrestd loads them after dropping root, and the default cache under ``/root``
  is not traversable by other users.
* the build has no cgroup/v2 plugin (no dbus headers): ``cgroup.conf`` says ``CgroupPlugin=disabled``.
* accounting (Debian 12's MariaDB + the prefix's slurmdbd) is on: ``AccountingStorageTRES=gres/gpu``
  is what makes slurmctld report a node's allocated GPUs in its TRES (pyslurm's ``allocated_gres``),
  and 25.11 refuses that setting without slurmdbd.

Every daemon is started and stopped by ``cluster.sh`` by pid, as for the 22.05 bed.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "slurm"))

from slurmlab import SlurmLab  # noqa: E402

BUILD = HERE / "build.sh"
TAG = os.environ.get("HPCTUI_SLURM2511_TAG", "slurm-25-11-7-1")
CACHE = Path(os.environ.get("HPCTUI_SLURM2511", str(Path.home() / ".cache" / "hpctui-slurm2511")))
BUILD_DIR = CACHE / TAG
PREFIX = BUILD_DIR / "inst"
PYSLURM_SITE = BUILD_DIR / f"pyslurm-py{sys.version_info[0]}.{sys.version_info[1]}"


def slurm2511_installed() -> str | None:
    """None if the 25.11 bed can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "Slurm 25.11 test bed needs root (mknod, setsid daemons, munge key)"
    if not (BUILD_DIR / ".hpctui-ready").is_file() or not (PREFIX / "sbin" / "slurmctld").is_file():
        return f"Slurm 25.11 not built at {BUILD_DIR} (run .ci/slurm2511-deps.sh)"
    if not (PYSLURM_SITE / "pyslurm").is_dir():
        return f"pyslurm for Python {sys.version_info[0]}.{sys.version_info[1]} not built at {PYSLURM_SITE}"
    missing = [b for b in ("/usr/sbin/munged", "/usr/sbin/mariadbd", "/usr/bin/curl") if not os.access(b, os.X_OK)]
    if missing or shutil.which("munge") is None:
        return f"Slurm 25.11 test bed needs {', '.join(missing) or 'munge'} (Debian's munge, mariadb-server, curl)"
    return None


class Slurm2511Lab(SlurmLab):
    """:class:`SlurmLab` for the source-built 25.11 daemons (same nodes, partitions, port scheme)."""

    version = "25.11"
    rest_version = "v0.0.44"  # openapi/slurmctld serves v0.0.41 .. v0.0.44
    rest_user = "slurm"  # the unprivileged user both slurmrestd listeners run as

    def __init__(self, lab_dir: str | None = None) -> None:
        super().__init__(lab_dir)
        self.prefix = PREFIX
        self.bin_dir = PREFIX / "bin"
        self.pyslurm_site = PYSLURM_SITE
        self.env["PATH"] = f"{PREFIX / 'bin'}:{PREFIX / 'sbin'}:{self.env['PATH']}"
        self.plugin_dir = self.dir / "plugins"
        self.env.update(
            SLURMLAB_SBIN=str(PREFIX / "sbin"), SLURMLAB_PLUGDIR=str(self.plugin_dir),
            SLURMLAB_REST_PING_V=self.rest_version, SLURMLAB_RESTD_USER=self.rest_user,
            SLURMLAB_CGROUP_CONF="CgroupPlugin=disabled", SLURMLAB_ACCOUNTING="1",
        )
        self.rest_socket = str(self.dir / "run" / "rest" / "slurmrestd.sock")

    def start(self) -> None:
        if not self.plugin_dir.is_dir():
            _copy_tree(PREFIX / "lib" / "slurm", self.plugin_dir)
        super().start()


def _copy_tree(src: Path, dst: Path) -> None:
    """``src`` → ``dst`` (hard links, or copies across file systems), then readable by all."""
    def link_or_copy(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    tmp = dst.with_name(dst.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True, copy_function=link_or_copy)
    tmp.chmod(0o755)
    tmp.rename(dst)
