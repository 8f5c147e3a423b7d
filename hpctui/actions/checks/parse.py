"""Reading what the check tools print: ``dcgmi diag -j``, nccl-tests' ``all_reduce_perf``, ``nhc``.

Formats are taken from real recorded outputs (tests/fixtures/checks, origins in its README):

- ``dcgmi diag -r N -j``: DCGM 3.x nests tests under ``"DCGM GPU Diagnostic"`` → ``test_categories``
  with ``gpu_ids`` per result; DCGM 4.x under ``"DCGM Diagnostic"`` with ``entity_group``/``entity_id``
  per result and a ``test_summary``; a banner line may come before the document; statuses are
  ``PASS``/``Pass``/``pass``, ``Fail``, ``Warn``, ``Skip``, ``Not Run``; ``runtime_error`` when it could
  not start. A status word never seen is not a pass.
- ``all_reduce_perf``: the ``# Avg bus bandwidth    : 448.212`` line, the ``# Out of bounds values : 0 OK``
  line and the per-size rows (``#wrong`` columns); ``[1,0]<stdout>:`` prefixes of mpirun are allowed.
- ``nhc``: silent with exit 0 when healthy; ``ERROR:  nhc:  Health check failed:  check_x:  why`` and
  exit 1 when not.

Every text that reaches a result is sanitised; a check whose output cannot be read is an ERROR
(it proves nothing), never a pass.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.checks import CheckDetail, CheckStatus

MAX_DETAILS = 64  # per node: a DCGM r3 on 8 GPUs has ~80 results; failures and warnings are kept first
MESSAGE_CHARS = 300


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """A tool's output read: the node's status, the one-line summary, what failed or warned."""

    status: CheckStatus
    summary: str
    details: tuple[CheckDetail, ...] = ()
    busbw_gbs: float | None = None


def _text(value: object, limit: int = MESSAGE_CHARS) -> str:
    return clean_text(str(value))[:limit]


# -- DCGM -----------------------------------------------------------------------------------------

_DCGM_STATUS = {"pass": CheckStatus.PASSED, "passed": CheckStatus.PASSED,
                "fail": CheckStatus.FAILED, "failed": CheckStatus.FAILED,
                "warn": CheckStatus.WARNING, "warning": CheckStatus.WARNING}
_DCGM_NEUTRAL = frozenset({"skip", "skipped", "not run", "notrun", "n/a", "not applicable"})


def _dcgm_status(raw: object) -> CheckStatus | None:
    """PASSED/FAILED/WARNING for the words DCGM uses, None for skip/not run, ERROR for an unknown word."""
    word = " ".join(str(raw).split()).lower()
    if word in _DCGM_NEUTRAL:
        return None
    return _DCGM_STATUS.get(word, CheckStatus.ERROR)


def _json_document(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``: dcgmi may print a banner line before it."""
    start = text.find("{")
    while start != -1:
        try:
            doc, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return doc if isinstance(doc, dict) else None
    return None


def _warnings_of(result: dict[str, Any]) -> str:
    """The words of a result's warnings (3.x: strings or objects; 4.x: ``{"warning": ...}``) or infos."""
    out: list[str] = []
    for w in result.get("warnings") or ():
        if isinstance(w, dict):
            w = w.get("warning") or w.get("message") or ""
        if w:
            out.append(_text(w))
    return "; ".join(out)[:MESSAGE_CHARS]


def _gpu_of(result: dict[str, Any]) -> int | None:
    """The GPU a result is about (4.x ``entity_id`` of a GPU entity; 3.x one ``gpu_ids`` value), or None
    for a result about several GPUs (the 3.x deployment tests' ``"0,1,2,3"``)."""
    if "entity_id" in result:
        group = str(result.get("entity_group", "GPU")).upper()
        value = result.get("entity_id")
        return value if group == "GPU" and isinstance(value, int) and not isinstance(value, bool) else None
    value = result.get("gpu_ids", result.get("gpu_id"))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def parse_dcgm(text: str, rc: int | None, level: int) -> Verdict:
    """One node's ``dcgmi diag -r LEVEL -j`` output: failed if any test failed on any GPU, warning if
    one warned, passed if at least one test passed and none failed; error when nothing was judged."""
    name = f"diag r{level}"
    doc = _json_document(text)
    if doc is None:
        first = _text(text.strip().splitlines()[0] if text.strip() else f"no output (exit {rc})")
        return Verdict(status=CheckStatus.ERROR, summary=f"{name}: no result document: {first}")
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") or doc
    if not isinstance(root, dict):
        root = doc
    problem = next((root.get(k) or doc.get(k) for k in ("runtime_error", "error")
                    if root.get(k) or doc.get(k)), None)
    categories = root.get("test_categories") or []
    tests: list[dict[str, Any]] = [t for c in categories if isinstance(c, dict)
                                   for t in (c.get("tests") or ()) if isinstance(t, dict)]
    tests += [t for t in (root.get("tests") or ()) if isinstance(t, dict)]
    details: list[CheckDetail] = []
    judged: list[CheckStatus] = []
    for test in tests:
        test_name = _text(test.get("name") or "?", 64)
        for result in test.get("results") or ():
            if not isinstance(result, dict):
                continue
            status = _dcgm_status(result.get("status", ""))
            if status is None:
                continue
            judged.append(status)
            if status is not CheckStatus.PASSED:
                words = _warnings_of(result) or (f"status {_text(result.get('status'), 32)!r}"
                                                 if status is CheckStatus.ERROR else "")
                details.append(CheckDetail(test=test_name, status=status, gpu=_gpu_of(result), message=words))
    details.sort(key=lambda d: (d.status is not CheckStatus.FAILED, d.status is not CheckStatus.ERROR))
    kept = tuple(details[:MAX_DETAILS])
    if problem and not judged:
        return Verdict(status=CheckStatus.ERROR, summary=f"{name} could not run: {_text(problem)}", details=kept)
    if not judged:
        return Verdict(status=CheckStatus.ERROR, summary=f"{name}: no test was run (exit {rc})", details=kept)
    failed = [d for d in details if d.status is CheckStatus.FAILED]
    if failed:
        worst = failed[0]
        where = f" GPU {worst.gpu}" if worst.gpu is not None else ""
        return Verdict(status=CheckStatus.FAILED, details=kept,
                       summary=f"{name} failed: {worst.test}{where}" + (f" (+{len(failed) - 1} more)" if len(failed) > 1
                                                                        else ""))
    if CheckStatus.ERROR in judged:
        return Verdict(status=CheckStatus.ERROR, summary=f"{name}: unknown result status", details=kept)
    if CheckStatus.WARNING in judged or problem:
        return Verdict(status=CheckStatus.WARNING, summary=f"{name} passed with warnings", details=kept)
    if rc not in (0, None):
        return Verdict(status=CheckStatus.ERROR, summary=f"{name}: every test passed but dcgmi exited {rc}",
                       details=kept)
    return Verdict(status=CheckStatus.PASSED, summary=f"{name} passed ({len(tests)} tests)", details=kept)


# -- NCCL all_reduce_perf ------------------------------------------------------------------------

_MPI_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+(?:[eE][+-]?\d+)?)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+-?\d+\s+")


def _nccl_lines(text: str) -> list[str]:
    return [_MPI_PREFIX.sub("", line).strip() for line in text.splitlines()]


def parse_nccl(text: str, rc: int | None, expected_gbs: float | None) -> Verdict:
    """``all_reduce_perf`` output: failed on wrong values, a non-zero exit, or an average bus
    bandwidth under ``expected_gbs``; error when no average was printed (it did not finish)."""
    avg: float | None = None
    out_of_bounds: int | None = None
    wrong = 0
    peak = 0.0
    for line in _nccl_lines(text):
        m = _AVG.match(line)
        if m:
            avg = float(m.group(1))
            continue
        m = _OOB.match(line)
        if m:
            out_of_bounds = int(m.group(1))
            continue
        if _ROW.match(line):
            cols = line.split()
            if len(cols) >= 13:  # out-of-place time algbw busbw #wrong, in-place the same
                for i in (8, 12):
                    if cols[i].isdigit():
                        wrong += int(cols[i])
                for i in (7, 11):
                    try:
                        peak = max(peak, float(cols[i]))
                    except ValueError:
                        pass
    if avg is None:
        last = next((x for x in reversed(_nccl_lines(text)) if x), f"no output (exit {rc})")
        return Verdict(status=CheckStatus.ERROR, summary=f"NCCL: no bandwidth result: {_text(last, 160)}")
    shown = f"NCCL {avg:.0f} GB/s"
    expect = f" (expected ≥ {expected_gbs:g})" if expected_gbs is not None else ""
    details: list[CheckDetail] = []
    if wrong or (out_of_bounds or 0) > 0:
        n = max(wrong, out_of_bounds or 0)
        details.append(CheckDetail(test="all_reduce", status=CheckStatus.FAILED, message=f"{n} wrong values"))
        return Verdict(status=CheckStatus.FAILED, summary=f"{shown}: {n} wrong values", details=tuple(details),
                       busbw_gbs=avg)
    if expected_gbs is not None and avg < expected_gbs:
        details.append(CheckDetail(test="bus bandwidth", status=CheckStatus.FAILED,
                                   message=f"{avg:g} GB/s < {expected_gbs:g} GB/s" + (f", peak {peak:g}" if peak else "")))
        return Verdict(status=CheckStatus.FAILED, summary=f"{shown}{expect}: too slow", details=tuple(details),
                       busbw_gbs=avg)
    if rc not in (0, None):
        return Verdict(status=CheckStatus.FAILED, summary=f"{shown}, but all_reduce_perf exited {rc}", busbw_gbs=avg)
    return Verdict(status=CheckStatus.PASSED, summary=f"{shown}{expect}", busbw_gbs=avg)


# -- NHC ------------------------------------------------------------------------------------------

_NHC_FAIL = re.compile(r"ERROR:\s+\S+:\s+Health check failed:\s+(.*)")


def parse_nhc(text: str, rc: int | None) -> Verdict:
    """``nhc``: the exit status decides; its ``Health check failed:`` lines say what and why."""
    failures: list[CheckDetail] = []
    for line in text.splitlines():
        m = _NHC_FAIL.search(line)
        if m:
            check, sep, why = m.group(1).partition(":")
            test, message = (check.strip(), why.strip()) if sep and " " not in check.strip() else ("nhc", m.group(1))
            failures.append(CheckDetail(test=_text(test, 64), status=CheckStatus.FAILED, message=_text(message)))
    if rc == 0 and not failures:
        return Verdict(status=CheckStatus.PASSED, summary="NHC passed")
    if failures:
        first = failures[0]
        return Verdict(status=CheckStatus.FAILED, details=tuple(failures[:MAX_DETAILS]),
                       summary=f"NHC failed: {first.test}: {first.message}"[:MESSAGE_CHARS])
    last = next((x.strip() for x in reversed(text.splitlines()) if x.strip()), "")
    return Verdict(status=CheckStatus.FAILED if rc else CheckStatus.ERROR,
                   summary=f"NHC exited {rc}" + (f": {_text(last, 200)}" if last else ""))


# -- a site's own check ---------------------------------------------------------------------------

def parse_custom(name: str, text: str, rc: int | None, *, pass_pattern: str | None,
                 fail_pattern: str | None) -> Verdict:
    """A configured check: failed when ``fail_pattern`` matches or the exit status is not 0; when a
    ``pass_pattern`` is set it must match too. The summary quotes the matching (or last) line."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    last = _text(lines[-1], 200) if lines else ""
    if fail_pattern:
        hit = next((x for x in lines if re.search(fail_pattern, x)), None)
        if hit is not None:
            return Verdict(status=CheckStatus.FAILED, summary=f"{name} failed: {_text(hit, 200)}",
                           details=(CheckDetail(test=name, status=CheckStatus.FAILED, message=_text(hit)),))
    if rc not in (0, None):
        return Verdict(status=CheckStatus.FAILED, summary=f"{name} failed (exit {rc})" + (f": {last}" if last else ""))
    if pass_pattern and not any(re.search(pass_pattern, x) for x in lines):
        return Verdict(status=CheckStatus.ERROR, summary=f"{name}: exit 0 but no line matches {pass_pattern!r}")
    return Verdict(status=CheckStatus.PASSED, summary=f"{name} passed" + (f": {last}" if last else ""))
