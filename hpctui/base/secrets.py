"""Which configured strings are secrets (tokens, passwords, key paths): what reports and logs must redact."""

from __future__ import annotations

import re
from typing import Any

import msgspec

_SECRET_KEY = re.compile(r"(token|password|passwd|secret|jwt|credential|api_?key|private_?key|key_?(file|path)|"
                         r"identity|client_?key|cert_?key|bearer)", re.IGNORECASE)


def secrets_of(config: object) -> tuple[str, ...]:
    """Every string value under a secret-looking key (token, password, key path, ...) in ``config``."""
    found: list[str] = []

    def walk(obj: Any, secret: bool) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, secret or bool(_SECRET_KEY.search(str(k))))
        elif isinstance(obj, list | tuple):
            for v in obj:
                walk(v, secret)
        elif isinstance(obj, str) and secret and len(obj) >= 4:
            found.append(obj)

    walk(msgspec.to_builtins(config), False)
    return tuple(sorted(set(found), key=len, reverse=True))
