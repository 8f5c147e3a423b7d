"""Suite-wide (1) guard: a test that starts a real service must say so with ``@pytest.mark.live``.

``pytest -m 'not live'`` then runs every unit test and starts no daemon (as root or not).
A test bed's fixture is known by its name: list it in ``LIVE_FIXTURES`` (or name it ``*_lab`` /
``*_bed``); a module named ``test_live_*.py`` is live by its name. Collection fails when such a
test lacks the marker, so an unmarked daemon can never slip into the unit run.

(2) The run must end with no process of its own left (issue #6 §3).

Every process the suite starts (test beds: slurmctld/slurmd/slurmstepd/slurm_script, sshd,
prometheus, etcd, kube-apiserver, fake tools and shims; hpctui itself) inherits the marker
``HPCTUI_TEST_RUN=<token>`` set here, before any test runs. At the end of the session every
process whose environment carries this run's token (other than pytest itself) is a leftover:
it is named, killed by pid, and the run fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from pathlib import Path

import pytest

LIVE_FIXTURES = frozenset({"slurm_lab"})


def _starts_a_service(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if names & LIVE_FIXTURES or any(n.endswith(("_lab", "_bed")) for n in names):
        return True
    return Path(str(item.path)).name.startswith("test_live_")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items if _starts_a_service(item) and item.get_closest_marker("live") is None]
    if unmarked:
        raise pytest.UsageError("tests that start a real service must be marked @pytest.mark.live:\n  "
                                + "\n  ".join(unmarked))


pytest_plugins = ["pytester"]  # tests/test_markers.py checks the guard above in a throw-away session


MARKER = "HPCTUI_TEST_RUN"
TOKEN = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
os.environ[MARKER] = TOKEN  # inherited by every child (daemons keep the env they were started with)
LEFTOVER_GRACE_S = float(os.environ.get("HPCTUI_LEFTOVER_GRACE_S", "10"))  # stopping daemons may still exit


def _marked_processes(token: str = TOKEN) -> dict[int, str]:
    """pid -> command line of every live process carrying ``token`` (pytest itself excluded)."""
    needle = f"{MARKER}={token}".encode()
    me = os.getpid()
    out: dict[int, str] = {}
    for path in Path("/proc").iterdir():
        if not path.name.isdigit() or int(path.name) == me:
            continue
        try:
            if (path / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue  # a zombie holds nothing; its parent will reap it
            if needle not in (path / "environ").read_bytes().split(b"\0"):
                continue
            cmd = (path / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        out[int(path.name)] = cmd or f"[pid {path.name}]"
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get(MARKER) != TOKEN or not Path("/proc/self/environ").exists():
        return
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    left = _marked_processes()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _marked_processes()
    if not left:
        return
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    lines = "\n".join(f"  pid {pid}: {cmd[:200]}" for pid, cmd in sorted(left.items()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"the test run left {len(left)} process(es) behind (now killed):\n{lines}"
    if reporter is not None:
        reporter.write_sep("=", "leftover processes", red=True)
        reporter.write_line(message)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- (3) No test writes into the real user's hpctui dirs (issue #19 §7) -------------------------------
# Before any test runs, every test and child gets a per-session HOME and XDG_{CONFIG,STATE,CACHE,DATA}_HOME.
# Test beds' caches outside the checkout stay where they are: their defaults are resolved first
# (tests/testbed/k8s: $HPCTUI_K8SLAB, default ~/.cache/hpctui-k8slab; tests/testbed/slurm2411: $HPCTUI_SLURM2411). At the end the real
# ~/.local/state/hpctui and ~/.config/hpctui (and the $XDG_* ones) must list as before (paths, sizes,
# mtimes), else the run fails and says what changed.
os.environ.setdefault("HPCTUI_K8SLAB", str(Path.home() / ".cache" / "hpctui-k8slab"))
os.environ.setdefault("HPCTUI_SLURM2411", str(Path.home() / ".cache" / "hpctui-slurm2411"))  # tests/testbed/slurm2411
REAL_HPCTUI_DIRS = tuple(dict.fromkeys(Path(base) / "hpctui" for base in (
    os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state", Path.home() / ".local" / "state",
    os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config", Path.home() / ".config")))
TEST_HOME = Path(tempfile.mkdtemp(prefix="hpctui-test-home-"))
os.environ["HOME"] = str(TEST_HOME)
for _var, _sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state"),
                   ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share")):
    os.environ[_var] = str(TEST_HOME / _sub)


def dir_listing(dirs: tuple[Path, ...]) -> dict[str, tuple[int, int, int]]:
    """path -> (mode, size, mtime_ns) of each of ``dirs`` and everything below (symlinks not followed)."""
    out: dict[str, tuple[int, int, int]] = {}
    for top in dirs:
        for path in [top, *(top.rglob("*") if top.is_dir() and not top.is_symlink() else ())]:
            try:
                st = path.lstat()
            except OSError:
                continue
            out[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


REAL_LISTING = dir_listing(REAL_HPCTUI_DIRS)


class _RealHomeGuard:
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        now = dir_listing(REAL_HPCTUI_DIRS)
        changed = sorted(p for p in REAL_LISTING.keys() | now.keys() if REAL_LISTING.get(p) != now.get(p))
        if not os.environ.get("HPCTUI_KEEP_TEST_HOME"):
            shutil.rmtree(TEST_HOME, ignore_errors=True)
        if not changed:
            return
        lines = "\n".join(f"  {'added' if p not in REAL_LISTING else 'removed' if p not in now else 'changed'}: {p}"
                          for p in changed[:20])
        message = (f"the test run changed the real user's hpctui dirs ({len(changed)} path(s); a test must use "
                   f"tmp_path, or an hpctui of the user's ran meanwhile):\n{lines}")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "real home touched", red=True)
            reporter.write_line(message)
        else:
            print(message)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_RealHomeGuard(), "hpctui-real-home-guard")
