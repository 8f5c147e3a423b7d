"""The layers are enforced, not a convention: import-linter's contracts in pyproject.toml hold, they break on a
planted wrong-way import, every package sits in a layer, and the data layer imports without Textual at run time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
        "--no-cache"]


def _contracts() -> dict[str, dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _layer_packages() -> list[str]:
    layers = _contracts()["layers"]["layers"]
    assert isinstance(layers, list)
    return [name.strip() for layer in layers for name in layer.replace("|", ":").split(":")]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(LINT, cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root)})


def test_the_contracts_hold() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_every_package_sits_in_a_layer() -> None:
    packages = {f"hpctui.{p.name}" for p in (ROOT / "hpctui").iterdir() if (p / "__init__.py").is_file()}
    modules = {f"hpctui.{p.stem}" for p in (ROOT / "hpctui").glob("*.py")} - {"hpctui.__init__", "hpctui.__main__"}
    assert not modules, f"top-level modules outside every layer (put them in a package): {sorted(modules)}"
    assert packages == set(_layer_packages()), "a package is missing from [tool.importlinter] layers, or one is gone"


@pytest.fixture(scope="module")
def planted_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("planted")
    shutil.copytree(ROOT / "hpctui", tree / "hpctui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


@pytest.mark.parametrize(("module", "line", "contract", "expected"), [
    ("model/common.py", "from hpctui.ui import app as _planted", "Layers", "hpctui.model.common -> hpctui.ui.app"),
    ("sources/base.py", "from hpctui.actions import executor as _planted", "Layers",
     "hpctui.sources.base -> hpctui.actions.executor"),
    ("core/store.py", "import textual as _planted", "never imports Textual", "hpctui.core.store -> textual"),
    ("ui/widgets/spark.py", "from hpctui.core import store as _planted", "never a source",
     "hpctui.ui.widgets.spark -> hpctui.core.store"),
])
def test_a_planted_wrong_way_import_breaks_the_contract(planted_tree: Path, module: str, line: str, contract: str,
                                                       expected: str) -> None:
    path = planted_tree / "hpctui" / module
    original = path.read_text()
    path.write_text(original + f"\n{line}  # planted by the test\n")
    try:
        result = _lint(planted_tree)
    finally:
        path.write_text(original)
    assert result.returncode != 0, result.stdout[-3000:]
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and expected in broken, broken[-3000:]


def test_the_data_layer_imports_without_textual() -> None:
    """Run time too (lazy imports inside functions are not all visible to a static check)."""
    data = _contracts()["ui-free"]["source_modules"]
    assert isinstance(data, list)
    modules = []
    for package in data:
        base = ROOT / Path(*package.split("."))
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert "hpctui.core.runtime" in modules and "hpctui.actions.executor" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
