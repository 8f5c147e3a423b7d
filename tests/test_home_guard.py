"""The real-home guard of tests/conftest.py (issue #19 §7), checked in throw-away pytest sessions:
tests and their children see a per-session HOME and XDG dirs, test-bed caches keep their real
place, and a run that changes the real hpctui state or config dir fails, naming the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GUARD = (Path(__file__).parent / "conftest.py").read_text()


def _session(pytester: pytest.Pytester, tests: str) -> pytest.RunResult:
    pytester.makeconftest(GUARD.replace('pytest_plugins = ["pytester"]', ""))
    pytester.makepyfile(test_x=tests)
    pytester.makeini("[pytest]\nmarkers =\n    live: needs a real service\n")
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")


def test_tests_and_children_get_a_session_home_and_beds_keep_their_cache(pytester: pytest.Pytester) -> None:
    real_home = os.environ["HOME"]  # what the throw-away session starts with: its "real" home
    out = pytester.path / "seen.txt"
    result = _session(pytester, f'''
import os, subprocess, sys
from pathlib import Path

def test_env():
    home = Path.home()
    assert str(home) != {real_home!r} and home.name.startswith("hpctui-test-home-")
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state"),
                     ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share")):
        assert os.environ[var] == str(home / sub)
    assert os.environ["HPCTUI_K8SLAB"] == {os.environ["HPCTUI_K8SLAB"]!r}  # the real build cache
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['HOME'])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert child == str(home)
    from hpctui.core.config import default_state_dir
    assert default_state_dir().is_relative_to(home)
    default_state_dir().mkdir(parents=True)  # the session's own state dir: allowed
    (default_state_dir() / "audit.jsonl").write_text("{{}}\\n")
    Path({str(out)!r}).write_text(str(home))
''')
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert not Path(out.read_text()).exists(), "the session's home is removed at the end"


def test_hpctui_k8slab_defaults_to_the_real_home_cache(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.delenv("HPCTUI_K8SLAB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = _session(pytester, f'''
import os

def test_lab_cache():
    assert os.environ["HPCTUI_K8SLAB"] == {str(tmp_path / ".cache" / "hpctui-k8slab")!r}
''')
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("where", ["XDG_STATE_HOME", "XDG_CONFIG_HOME"])
def test_a_run_that_writes_the_real_hpctui_dirs_fails(pytester: pytest.Pytester, where: str) -> None:
    real = Path(os.environ[where]) / "hpctui"  # the throw-away session's real state / config dir
    target = real / f"written-by-a-test-{where}.jsonl"
    result = _session(pytester, f'''
from pathlib import Path

def test_writes_the_real_dir():
    Path({str(real)!r}).mkdir(parents=True, exist_ok=True)
    Path({str(target)!r}).write_text("oops\\n")
''')
    result.assert_outcomes(passed=1)  # the test itself passed: the guard fails the run
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*real home touched*", "*changed the real user's hpctui dirs*",
                                 f"*added: {target}*"])
    target.unlink()
