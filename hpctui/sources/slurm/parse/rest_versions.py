"""Which slurmrestd / data_parser version a document speaks, and which one to ask for.

22.05 stamps ``meta.plugin.type = "openapi/v0.0.38"``; 23.11+ stamp
``meta.plugin.data_parser = "data_parser/v0.0.40"`` (plugin.type may be empty for the CLI);
23.02's CLI JSON says ``meta.plugins.data_parser = "data_parser/v0.0.39"`` (plural).
A version newer than any known is read with the newest known parser (the fields that match)
and remembered, so that the source can say so once (:func:`newer_versions_seen`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec

SUPPORTED_REST_VERSIONS: tuple[str, ...] = ("v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44")
"""Versions we target when *choosing* (pick_rest_version), oldest first."""

PARSEABLE_REST_VERSIONS: tuple[str, ...] = ("v0.0.36", "v0.0.37", *SUPPORTED_REST_VERSIONS)
"""Versions whose documents we also *read* (22.05 still serves v0.0.36/37)."""

_VERSION = re.compile(r"v0\.0\.(\d+)")


class Plugin(msgspec.Struct, kw_only=True):
    type: str | None = None
    name: str | None = None
    data_parser: str | None = None


class Meta(msgspec.Struct, kw_only=True):
    plugin: Plugin | None = None
    plugins: Plugin | None = None  # 23.02's CLI JSON


class RestError(msgspec.Struct, kw_only=True):
    error: str | None = None
    error_number: int | None = None
    error_code: int | None = None
    description: str | None = None
    source: str | None = None


class _Envelope(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)


def version_from_meta(meta: Meta | None) -> str | None:
    if meta is None:
        return None
    for plugin in (meta.plugin, meta.plugins):
        if plugin is None:
            continue
        for field in (plugin.data_parser, plugin.type, plugin.name):
            if field:
                m = _VERSION.search(field)
                if m:
                    return f"v0.0.{m.group(1)}"
    return None


def detect_rest_version(data: bytes | str | dict[str, Any]) -> str | None:
    """``"v0.0.38"`` from a document's ``meta``; None when the document does not say."""
    if isinstance(data, dict):
        meta = data.get("meta")
        if not isinstance(meta, dict):
            return None
        plugins = {k: meta[k] for k in ("plugin", "plugins") if isinstance(meta.get(k), dict)}
        if not plugins:
            return None
        try:
            return version_from_meta(msgspec.convert(plugins, Meta))
        except msgspec.ValidationError:
            return None
    try:
        env = _envelope_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise from_msgspec("cannot read REST version", exc) from exc
    return version_from_meta(env.meta)


_newer_seen: set[str] = set()


def newer_than_known(version: str) -> bool:
    """``v0.0.N`` with N above the newest version this code knows."""
    return _key(version) > _key(SUPPORTED_REST_VERSIONS[-1])


def newer_versions_seen() -> frozenset[str]:
    """Every too-new version a document has been read in so far (this process)."""
    return frozenset(_newer_seen)


def newer_version_warning(version: str) -> str:
    """What a source says, once, about documents in a version newer than any known."""
    return (f"Slurm data_parser {version} is newer than any this hpctui knows: read as "
            f"{SUPPORTED_REST_VERSIONS[-1]} where the fields match")


def check_version(version: str | None) -> None:
    """Raise if a document (or caller) names a version this parser does not read.

    A version newer than any known is accepted (read with the newest known schema: msgspec
    takes the declared fields that are there) and remembered for :func:`newer_versions_seen`.
    """
    if version is not None and version not in PARSEABLE_REST_VERSIONS:
        if newer_than_known(version):
            _newer_seen.add(version)
            return
        raise SlurmParseError(
            f"unsupported Slurm REST version {version} (readable: {', '.join(PARSEABLE_REST_VERSIONS)})"
        )


def _key(version: str) -> int:
    m = _VERSION.fullmatch(version.strip().removeprefix("openapi/").removeprefix("data_parser/"))
    return int(m.group(1)) if m else -1


def pick_rest_version(served: Iterable[str]) -> str:
    """Newest supported version among those a slurmrestd serves.

    Accepts ``"v0.0.40"``, ``"openapi/v0.0.40"`` or ``"data_parser/v0.0.40"`` spellings;
    ``dbv0.0.38`` (slurmdbd) entries are ignored.
    """
    served_list = list(served)
    candidates = []
    for s in served_list:
        short = s.strip().removeprefix("openapi/").removeprefix("data_parser/")
        if short in SUPPORTED_REST_VERSIONS:
            candidates.append(short)
    if not candidates:
        raise SlurmParseError(
            f"no supported Slurm REST version served (served: {', '.join(served_list) or 'none'}; "
            f"supported: {', '.join(SUPPORTED_REST_VERSIONS)})"
        )
    return max(candidates, key=_key)


def errors_of(errs: list[RestError] | None) -> list[str]:
    out = []
    for e in errs or ():
        parts = [p for p in (e.error, e.description) if p]
        msg = ": ".join(parts) if parts else f"error {e.error_number or e.error_code or '?'}"
        if e.source:
            msg += f" ({e.source})"
        out.append(clean_text(msg))
    return out


def parse_rest_errors(data: bytes | str) -> list[str]:
    """Human messages from a REST body's ``errors[]`` (e.g. an HTTP 500 body).

    ``[{"error": "Invalid job id specified", "description": "Unable to find JobId=99"}]`` →
    ``["Invalid job id specified: Unable to find JobId=99 (slurm_load_job)"]``. A body that
    is not JSON (e.g. 401 "Authentication failure") comes back as one message.
    """
    try:
        env = _envelope_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        body = data.decode(errors="replace") if isinstance(data, bytes) else data
        body = " ".join(body.split())
        return [clean_text(body[:200])] if body else []
    return errors_of(env.errors)
