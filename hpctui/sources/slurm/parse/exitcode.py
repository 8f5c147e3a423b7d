"""Exit codes: raw wait statuses (22.05 JSON), ``X:Y`` text and v0.0.40+ objects.

22.05's squeue/REST JSON reports the raw ``wait()`` status (SLURM.md §7: ``exit 3`` →
768, SIGTERM → 15). The model keeps (exit code, signal) with the other one None, as
pyslurm does: a job that was killed has no exit code, a job that exited has no signal.
"""

from __future__ import annotations

import msgspec

from hpctui.sources.slurm.parse.values import IntLike, Num, num, to_int


def decode_exit_code(raw: int | None) -> tuple[int | None, int | None]:
    """Raw wait status → (exit code, signal), POSIX WIFEXITED/WIFSIGNALED semantics.

    256 → (1, None); 768 → (3, None); 9 → (None, 9); 0 → (0, None); None/NO_VAL → (None, None).
    """
    if raw is None or raw < 0 or raw >= 0xFFFFFFFE:
        return None, None
    sig = raw & 0x7F
    if sig == 0:  # WIFEXITED
        return (raw >> 8) & 0xFF, None
    if sig == 0x7F:  # WIFSTOPPED: not a termination
        return None, None
    return None, sig  # WIFSIGNALED (core-dump bit 0x80 ignored)


def decode_exit_pair(value: str | None) -> tuple[int | None, int | None]:
    """scontrol/sacct ``ExitCode=3:0`` → (3, None); ``0:9`` → (None, 9)."""
    if not value or ":" not in value:
        return None, None
    code_s, _, sig_s = value.partition(":")
    code, sig = to_int(code_s), to_int(sig_s)
    if sig:
        return None, sig
    return code, None


class SignalObj(msgspec.Struct, kw_only=True):
    id: IntLike = None
    name: str | None = None


class ExitCodeObj(msgspec.Struct, kw_only=True):
    """v0.0.39+ ``{"status": ["EXITED"], "return_code": {...}, "signal": {...}}``."""

    status: list[str] | str | None = None
    return_code: IntLike = None
    signal: SignalObj | None = None


def decode_exit_obj(obj: int | Num | ExitCodeObj | None) -> tuple[int | None, int | None]:
    """Any JSON exit_code shape → (exit code, signal)."""
    if obj is None:
        return None, None
    if isinstance(obj, (int, Num)):
        return decode_exit_code(num(obj) if isinstance(obj, Num) else obj)
    status = [obj.status] if isinstance(obj.status, str) else list(obj.status or [])
    status = [s.upper() for s in status]
    sig = num(obj.signal.id) if obj.signal is not None else None
    if "SIGNALED" in status or (sig and "EXITED" not in status):
        return None, sig
    if "PENDING" in status or "INVALID" in status:
        return None, None  # the job has not finished: nothing to report yet
    return num(obj.return_code), None
