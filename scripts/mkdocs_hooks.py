"""mkdocs hooks (``hooks:`` in mkdocs.yml): the generated pages must be current, and the screenshots and benchmark
logs are served from where they live (``screenshots/``, ``bench/results/``) instead of being copied into docs/."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
SHARED = (("screenshots", "*.svg"), ("screenshots", "*.png"), ("bench/results", "*.md"))
log = logging.getLogger("mkdocs.hooks.hpctui")  # under "mkdocs": a warning fails a --strict build


def on_pre_build(config: Any) -> None:
    """Warn (so --strict fails) when a page scripts/gen_docs.py writes differs from what the code gives now."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for name in gen_docs.stale_pages(Path(config["docs_dir"])):
        log.warning("docs/%s is stale: run python scripts/gen_docs.py", name)


def on_files(files: Files, config: Any) -> Files:
    """Add screenshots/ and bench/results/ at the same paths under the site root."""
    for folder, pattern in SHARED:
        for path in sorted((ROOT / folder).glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            if files.get_file_from_path(rel) is None:
                files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files
