"""Incident reports under hostile cluster strings and a shared machine (issue #19 §7):
the Markdown renders every cluster string literally (no link, image or HTML from cluster data), and
every file is written 0600 inside 0700 directories."""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from test_report import incident

from hpctui.report.incident import SECTIONS, md_code_block, md_escape, render_markdown, write_report

# Markdown (CommonMark + GFM + markdown-it's linkify) injection strings, as a reason, a job name,
# a node name, a pod name or a kernel message could carry them.
MARKDOWN_CORPUS = [
    "[md](javascript:alert(1))",
    "![i](http://evil.example/p.png)",
    "[a](<javascript:x>) [b]( http://evil.example \"t\") [c][ref] [ref]",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<!-- hidden --> <?php x ?> <![CDATA[x]]> <a href='http://evil.example'>",
    "<http://evil.example> <evil@evil.example>",
    "see http://evil.example/x or https://evil.example/?q=1",
    "www.evil.example and evil.com and ops@evil.com and mailto:ops@evil.com",
    "xn--80ak6aa92e.com пример.рф",
    "&lt;script&gt; &#60;img src=x&#62; &amp;",
    "`code` ``double`` ```fence```",
    "a | b | c",
    "x\\| [y](http://evil.example) \\",
    "**bold** __b__ *em* _em_ ~~strike~~ ~sub~ ^sup^ $x$",
    "one\n<div>html</div>\n# heading\n[ref]: http://evil.example\n---",
    "trailing hashes ##",
    "{onclick=alert(1)} [x]{.c} [^1]",
    "\\[md\\](javascript:alert(1)) \\\\[md](javascript:alert(1))",
]
FORBIDDEN = {"link_open", "image", "html_inline", "html_block"}
PARSERS = {
    "commonmark": MarkdownIt("commonmark"),
    "gfm-like": MarkdownIt("gfm-like"),  # tables, strikethrough, raw HTML and linkify
}
for _md in PARSERS.values():  # a renderer that trusts every URL: markdown-it itself drops javascript: links
    _md.validateLink = lambda url: True  # type: ignore[method-assign]


def _hostile(obj: Any, payload: str) -> Any:
    """``obj`` with every string (and every key of a free-form counter map) replaced by ``payload``."""
    if isinstance(obj, str):
        return payload
    if isinstance(obj, list):
        return [_hostile(v, payload) for v in obj]
    if isinstance(obj, dict):
        return {k: _hostile(v, payload) for k, v in obj.items()}
    return obj


def hostile_doc(base: dict[str, Any], payload: str) -> dict[str, Any]:
    doc: dict[str, Any] = _hostile(copy.deepcopy(base), payload)
    doc["pods"] = [{"namespace": payload, "name": payload, "node": payload, "phase": payload, "reason": payload,
                    "gpus_requested": 1}]
    for row in doc["ib_ports"]:
        row["counters"] = {payload: 7, "symbol_error": 1}
        row["deltas"] = {payload: 3}
    for section in doc.values():
        for row in section if isinstance(section, list) else ():
            if isinstance(row, dict) and isinstance(row.get("findings"), list):
                row["findings"] = [{"severity": payload, "object": payload, "code": payload, "message": payload}]
    return doc


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for tok in tokens:
        yield tok
        yield from _walk(tok.children or [])


def _inline_text(tok: Token) -> str:
    return "".join(" " if c.type in ("softbreak", "hardbreak") else c.content for c in tok.children or [])


@pytest.fixture(scope="module")
def base_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import asyncio

    _, _, doc = asyncio.run(incident(tmp_path_factory.mktemp("incident")))
    assert doc["charts"] and all(doc[key] for _, key, _ in SECTIONS if key != "pods"), "every section has rows"
    return doc


@pytest.mark.parametrize("payload", MARKDOWN_CORPUS)
@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_markdown_renders_cluster_strings_literally(base_doc: dict[str, Any], payload: str, parser: str) -> None:
    doc = hostile_doc(base_doc, payload)
    md = render_markdown(doc)
    tokens = PARSERS[parser].parse(md)
    bad = [(t.type, t.attrs, t.content[:60]) for t in _walk(tokens) if t.type in FORBIDDEN]
    assert not bad, bad
    flat = payload.replace("\n", " ")
    inlines = [_inline_text(t) for t in tokens if t.type == "inline"]
    rows = sum(len(doc[key]) for _, key, _ in SECTIONS)
    assert inlines[0] == flat  # the title, shown as the exact text
    assert " ".join(inlines).count(flat) >= rows  # every row shows it literally (at least once)
    if parser == "gfm-like":  # with tables: every row has a cell that is the payload alone, exactly
        assert inlines.count(flat) >= rows, (inlines.count(flat), rows)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == sum(len(c) for c in doc["charts"].values())  # every text chart in a fence that holds


def test_markdown_helpers() -> None:
    assert md_escape("12:00:00 1.5 GiB") == "12:00:00 1.5 GiB"  # numbers and times stay readable
    assert md_escape("http://x.org") == "http\\://x\\.org"
    assert md_escape("a|b\nc") == "a\\|b c"
    assert md_code_block("x\n````\ny") == ["`````", "x\n````\ny", "`````"]
    assert md_code_block("plain") == ["```", "plain", "```"]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_report_files_are_private(tmp_path: Path) -> None:
    _, _, doc = await incident(tmp_path)
    old = os.umask(0o022)  # a usual umask: what it lets through is not what a report may have
    try:
        out = tmp_path / "deep" / "er" / "out"
        paths = write_report(doc, out)
        assert {_mode(p) for p in paths} == {0o600}
        assert [_mode(d) for d in (tmp_path / "deep", tmp_path / "deep" / "er", out)] == [0o700] * 3
        # a report written again over files left 0644 by an older version: replaced, 0600
        for p in paths:
            p.chmod(0o644)
        again = write_report(doc, out)
        assert {_mode(p) for p in again} == {0o600}
        assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    finally:
        os.umask(old)
