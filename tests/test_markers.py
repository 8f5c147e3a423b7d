"""The live-marker guard of tests/conftest.py, checked in throw-away pytest sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

GUARD = (Path(__file__).parent / "conftest.py").read_text()


def _session(pytester: pytest.Pytester, tests: str, name: str = "test_x.py") -> pytest.RunResult:
    pytester.makeconftest(GUARD.replace('pytest_plugins = ["pytester"]', ""))
    pytester.makepyfile(**{name.removesuffix(".py"): tests})
    pytester.makeini("[pytest]\nmarkers =\n    live: needs a real service\n")
    return pytester.runpytest_subprocess("-q", "-m", "not live", "-p", "no:cacheprovider")


BED = '''
import pytest

@pytest.fixture(scope="session")
def slurm_lab():
    raise AssertionError("the daemon was started")

@pytest.fixture
def prom_bed():
    raise AssertionError("the daemon was started")
'''


def test_unmarked_test_using_a_bed_fails_collection(pytester: pytest.Pytester) -> None:
    result = _session(pytester, BED + "\ndef test_a(slurm_lab):\n    pass\n\ndef test_b(prom_bed):\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*must be marked @pytest.mark.live*", "*test_x.py::test_a*", "*test_x.py::test_b*"])


def test_unmarked_test_in_a_live_module_fails_collection(pytester: pytest.Pytester) -> None:
    result = _session(pytester, "def test_a():\n    pass\n", name="test_live_thing.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_marked_live_tests_are_deselected_and_start_nothing(pytester: pytest.Pytester) -> None:
    tests = BED + '''
pytestmark = pytest.mark.live

def test_a(slurm_lab):
    pass
'''
    result = _session(pytester, tests)
    result.assert_outcomes()  # nothing ran, nothing failed: the bed fixture never started
    result.stdout.fnmatch_lines(["*1 deselected*"])


def test_unit_tests_still_run(pytester: pytest.Pytester) -> None:
    result = _session(pytester, "def test_a():\n    pass\n\ndef test_b(tmp_path):\n    pass\n")
    result.assert_outcomes(passed=2)
