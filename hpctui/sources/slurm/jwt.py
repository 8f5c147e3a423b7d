"""Where a slurmrestd JWT comes from, and whether it is already expired.

22.05's slurmrestd answers a bad or expired token with HTTP 500 "Unspecified error" (the
controller rejects it), not 401, so we read the token's own ``exp`` claim first and say
"JWT expired" plainly instead of passing Slurm's vague text on.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import time

from hpctui.sources.base import SourceError
from hpctui.sources.slurm.runner import CommandError, Runner


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim (epoch s), or None if the token has none. Raises ValueError if not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a JWT (expected 3 dot-separated parts)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not a JWT ({exc})") from exc
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) else None


class JwtProvider:
    """Token from the settings, else $SLURM_JWT, else ``scontrol token`` (renewed before expiry)."""

    def __init__(self, *, token: str | None, from_scontrol: bool, lifespan_s: int, runner: Runner) -> None:
        self.static = token or os.environ.get("SLURM_JWT") or None
        self.from_scontrol = from_scontrol
        self.lifespan_s = lifespan_s
        self.runner = runner
        self._token: str | None = None
        self._exp: float | None = None

    @property
    def configured(self) -> bool:
        return bool(self.static) or self.from_scontrol

    async def token(self) -> str:
        now = time.time()
        if self.static and not self.from_scontrol:
            self._check(self.static, now)
            return self.static
        if self._token is None or (self._exp is not None and self._exp - 60 < now):
            self._token = await self._from_scontrol()
            try:
                self._exp = jwt_expiry(self._token)
            except ValueError:
                self._exp = None
        return self._token

    @staticmethod
    def _check(token: str, now: float) -> None:
        try:
            exp = jwt_expiry(token)
        except ValueError as exc:
            raise SourceError(f"JWT expired or invalid: {exc}") from exc
        if exp is not None and exp <= now:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(exp))
            raise SourceError(f"JWT expired or invalid: token expired at {stamp}")

    async def _from_scontrol(self) -> str:
        try:
            res = await self.runner.run(["scontrol", "token", f"lifespan={int(self.lifespan_s)}"])
        except CommandError as exc:
            raise SourceError(f"cannot get a JWT from scontrol token: {exc}") from exc
        out = res.stdout.decode(errors="replace").strip()
        if not res.ok or not out.startswith("SLURM_JWT="):
            # stdout may hold a token: only stderr (or the exit status) ever goes into the error
            why = " ".join(res.stderr.split())[:300] or (
                f"exit status {res.rc}" if not res.ok else "output not in the SLURM_JWT=... form (not shown)")
            raise SourceError(f"cannot get a JWT from scontrol token: {why}")
        return out.removeprefix("SLURM_JWT=").strip()
