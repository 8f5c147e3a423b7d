"""The docs site builds clean (``mkdocs build --strict``), its generated pages match the code, every config key is
documented, and the architecture page's layer diagram matches the import contract and the packages on disk."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


gen_docs = _load("gen_docs")


def test_the_generated_pages_are_up_to_date() -> None:
    stale = gen_docs.stale_pages()
    assert not stale, f"stale generated pages {stale}: run python scripts/gen_docs.py and commit them"


def test_every_config_key_has_a_description() -> None:
    """A settings field without an attribute docstring would be an empty cell in the configuration reference."""
    import msgspec.inspect as mi

    missing = []
    for section in gen_docs.config_sections():
        info = mi.type_info(section.cls)
        assert isinstance(info, mi.StructType)
        docs = gen_docs.attribute_docstrings(section.cls)
        missing += [f"{section.cls.__qualname__}.{f.name}" for f in info.fields if not docs.get(f.name)]
    assert not missing, f"fields without an attribute docstring (a string right after the field): {missing}"


def test_attribute_docstrings_are_read_as_griffe_reads_them() -> None:
    """The string right after a field is its docstring; a comment or a string elsewhere is not."""
    from hpctui.core.config import AppConfig
    from hpctui.sources.slurm.settings import SlurmSettings

    docs = gen_docs.attribute_docstrings(SlurmSettings)
    assert docs["timeout_s"] == "Hard limit of one CLI call / HTTP request."
    assert "max_answer_mib" in docs and "issue #19" not in docs["max_answer_mib"]  # the comment above is not it
    assert set(gen_docs.attribute_docstrings(AppConfig)) <= set(AppConfig.__struct_fields__)


def test_a_stale_page_fails_the_strict_build(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    hooks = _load("mkdocs_hooks")
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs" / "reference", docs / "reference")
    page = docs / "reference" / "config.md"
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        hooks.on_pre_build({"docs_dir": str(docs)})
    assert not caplog.records
    page.write_text(page.read_text().replace("Alert thresholds", "Old thresholds"))
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        hooks.on_pre_build({"docs_dir": str(docs)})
    assert [r.getMessage() for r in caplog.records] == [
        "docs/reference/config.md is stale: run python scripts/gen_docs.py"]
    assert caplog.records[0].name.startswith("mkdocs.")  # mkdocs counts these: --strict aborts


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    for page in ("index.html", "reference/config.html", "reference/keys.html", "architecture.html",
                 "guide/on-call.html", "bench/results/session17.html", "screenshots/dashboard-dark.svg"):
        assert (site / page).is_file(), page
    assert "site/" in (ROOT / ".gitignore").read_text().split()  # the default output dir is not committed


# -- the architecture page's layer diagram ------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _diagram_layers(text: str) -> list[list[str]]:
    """The layers the architecture page draws, top first; packages that share a layer in one list."""
    block = re.search(r"<!-- layers:begin.*?-->\s*```text\n(.*?)```\s*<!-- layers:end -->", text, re.S)
    assert block, "docs/architecture.md: the layers block (<!-- layers:begin --> ... <!-- layers:end -->) is gone"
    layers = []
    for line in block.group(1).splitlines():
        if not line.strip() or set(line.strip()) <= set("│|↓ "):
            continue
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        layers.append([n.strip() for n in names.split("|")])
    return layers


def _contract_layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "layers")["layers"]
    return [[n.strip().removeprefix("hpctui.") for n in re.split(r"[:|]", layer)] for layer in layers]


def _packages() -> set[str]:
    return {p.name for p in (ROOT / "hpctui").iterdir() if (p / "__init__.py").is_file()}


def _diagram_problems(text: str) -> list[str]:
    """What the page's diagram gets wrong against the layers contract and hpctui/'s packages (empty: nothing)."""
    drawn, contract = _diagram_layers(text), _contract_layers()
    problems = []
    if [sorted(x) for x in drawn] != [sorted(x) for x in contract]:
        problems.append(f"the diagram draws {drawn}, pyproject.toml's layers contract says {contract}")
    names = {name for layer in drawn for name in layer}
    if names != _packages():
        problems.append(f"packages under hpctui/ not drawn: {sorted(_packages() - names)}; "
                        f"drawn but gone: {sorted(names - _packages())}")
    table = text.split("## What lives where", 1)[-1]
    problems += [f"no row for hpctui/{p}/ in 'What lives where'" for p in sorted(_packages())
                 if f"`hpctui/{p}/`" not in table]
    return problems


def test_the_layer_diagram_matches_the_contract_and_the_packages() -> None:
    assert _diagram_problems(ARCHITECTURE.read_text()) == []


@pytest.mark.parametrize(("pattern", "new", "expected"), [
    (r"^model(?= )", "findings", "layers contract says"),   # a layer drawn twice, one left out
    (r"^sources \| sim(?= )", "sources      ", "not drawn: ['sim']"),   # a package left out
    (r"^\| `hpctui/base/` \|", "| base |", "no row for hpctui/base/"),
])
def test_the_diagram_check_fails_on_a_wrong_page(pattern: str, new: str, expected: str) -> None:
    text = ARCHITECTURE.read_text()
    planted, n = re.subn(pattern, new, text, count=1, flags=re.M)
    assert n == 1, pattern
    problems = _diagram_problems(planted)
    assert any(expected in p for p in problems), problems


def test_the_readme_links_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert len(links) >= 8, "the README links to the docs pages"
    assert not [link for link in links if not (ROOT / link).is_file()]
