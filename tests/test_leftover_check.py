"""The session-end leftover check (tests/conftest.py) really fails a run that leaves a process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

LEAKY = '''
import subprocess, pathlib

def test_leaks_a_daemon(tmp_path):
    p = subprocess.Popen(["sleep", "600"], start_new_session=True)  # detached, like slurmstepd
    pathlib.Path(__file__).with_name("leaked.pid").write_text(str(p.pid))
'''


def test_a_run_that_leaves_a_process_fails_and_the_process_is_killed(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    env = dict(os.environ, HPCTUI_LEFTOVER_GRACE_S="0.5")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "left 1 process(es) behind" in res.stdout and "sleep 600" in res.stdout
    pid = int((tmp_path / "leaked.pid").read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
