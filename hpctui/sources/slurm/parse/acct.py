"""slurmdbd's records as text: ``sacctmgr -P show event``, ``sacct -P`` and ``sreport -P`` → Structs.

Real captures (tests/fixtures/slurm, 22.05.8 and 25.11) show why the formats put the one free-text
field last: a reason or a job name may hold ``|`` (``Reason=ECC|uncorrectable`` prints as two
fields), so every field after the fixed ones is joined back into it. ``State`` alone cannot tell a
drained node from a down+drained one (both print ``DRAIN``): ``StateRaw`` (``513`` = DOWN|DRAIN,
``514`` = IDLE|DRAIN, ``2049`` = DOWN|NO_RESPOND) decides. ``User`` is ``root(0)``: the name is kept.
One bad row costs that row (``on_invalid`` hears why), never the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hpctui.base.sanitize import clean_text
from hpctui.model.nodehistory import DOWN, DRAIN, ORIGIN_SLURMDBD, AcctJob, GpuUsage, NodeEvent
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.exitcode import decode_exit_pair
from hpctui.sources.slurm.parse.gres import gpus_from_tres_str
from hpctui.sources.slurm.parse.values import parse_cli_time, text, to_float

OnInvalid = Callable[[str], None]

EVENT_FORMAT = "Cluster,NodeName,Start,End,State,StateRaw,User,Event,Reason"
EVENT_HEADER = ("Cluster", "NodeName", "TimeStart", "TimeEnd", "State", "StateRaw", "User", "Event", "Reason")
SACCT_FORMAT = "JobID,User,Account,Partition,State,ExitCode,Start,End,Elapsed,NodeList,AllocTRES,Reason,JobName"
SACCT_HEADER = tuple(SACCT_FORMAT.split(","))
SREPORT_HEADER = ("Cluster", "Account", "Login", "Proper Name", "TRES Name", "Used")

# slurm.h node state: the base state is the low 4 bits, flags above (stable from 20.11 to 25.11).
_BASE_MASK = 0x0F
_BASE_DOWN, _BASE_UNKNOWN = 1, 0
_FLAG_DRAIN = 0x0200
_FLAG_FAIL = 0x2000
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+):(\d\d):(\d\d)$")


def _rows(text_in: str, header: tuple[str, ...], what: str, on_invalid: OnInvalid | None) -> list[list[str]]:
    """The data rows of a ``-P`` table whose header must be ``header`` (a ``-n`` answer has none:
    every line is data). Extra ``|`` fields are joined into the last column; short rows are dropped."""
    lines = [ln for ln in text_in.splitlines() if ln.strip()]
    if lines and "|" in lines[0] and lines[0].split("|")[0] == header[0]:
        got = tuple(h.strip() for h in lines[0].split("|"))
        if got != header:
            raise SlurmParseError(f"{what}: unexpected columns {'|'.join(got)[:120]!r}")
        lines = lines[1:]
    n = len(header)
    out = []
    for ln in lines:
        cols = ln.split("|")
        if len(cols) < n:
            if on_invalid is not None:
                on_invalid(f"{what}: row with {len(cols)} of {n} fields skipped: {clean_text(ln)[:60]!r}")
            continue
        out.append([*cols[:n - 1], "|".join(cols[n - 1:])])
    return out


def _user(value: str) -> str | None:
    """``root(0)`` → ``root``; an unknown uid prints as ``(4711)``: kept as it is."""
    v = text(value)
    if v is None:
        return None
    name = v.split("(", 1)[0].strip()
    return clean_text(name or v)


def event_kind(state_raw: int | None, state: str) -> str | None:
    """``down`` / ``drain`` for a node event, None for the rest (the ``UNK`` "cold-start" events
    slurmctld records when it registers nodes at start)."""
    if state_raw is None:
        upper = state.upper()
        return DOWN if upper.startswith("DOWN") else DRAIN if "DRAIN" in upper or "FAIL" in upper else None
    if state_raw & _BASE_MASK == _BASE_DOWN:
        return DOWN
    if state_raw & (_FLAG_DRAIN | _FLAG_FAIL):
        return DRAIN
    return None


def parse_events_text(text_in: str, *, on_invalid: OnInvalid | None = None) -> list[NodeEvent]:
    """``sacctmgr -P show event event=node format=`` :data:`EVENT_FORMAT` → node events (down,
    drain), in the order printed. Cluster events (no node name) and cold-start events are left out."""
    out: list[NodeEvent] = []
    for cols in _rows(text_in, EVENT_HEADER, "sacctmgr show event", on_invalid):
        _cluster, node, start_s, end_s, state, raw_s, user, event, reason = cols
        node_name = text(node)
        start = parse_cli_time(start_s)
        if not node_name or event.strip().lower() != "node":
            continue
        if start is None:
            if on_invalid is not None:
                on_invalid(f"sacctmgr show event: {clean_text(node_name)}: unreadable start {clean_text(start_s)[:30]!r}")
            continue
        raw = int(raw_s) if raw_s.strip().isdigit() else None
        kind = event_kind(raw, state)
        if kind is None:
            continue
        out.append(NodeEvent(node=clean_text(node_name), kind=kind, time=start, end=parse_cli_time(end_s),
                             reason=clean_text(reason) if text(reason) else None, user=_user(user),
                             state=clean_text(state.strip()) or None, origin=ORIGIN_SLURMDBD))
    return out


def elapsed_s(value: str) -> int | None:
    """sacct ``Elapsed`` (``00:01:16``, ``1-02:03:04``) → seconds."""
    m = _DURATION.match(value.strip())
    if not m:
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def parse_sacct_text(text_in: str, *, on_invalid: OnInvalid | None = None) -> list[AcctJob]:
    """``sacct -P -X --format=`` :data:`SACCT_FORMAT` → jobs. ``ExitCode`` ``3:0`` → exit code 3,
    ``0:9`` → signal 9 (as the live queue decodes it); ``CANCELLED by 0`` → ``CANCELLED``."""
    out: list[AcctJob] = []
    for cols in _rows(text_in, SACCT_HEADER, "sacct", on_invalid):
        job_id, user, account, partition, state, exit_s, start_s, end_s, elapsed, nodes, tres, reason, name = cols
        if not job_id.strip():
            continue
        code, sig = decode_exit_pair(exit_s.strip())
        out.append(AcctJob(
            job_id=clean_text(job_id.strip()), state=clean_text(state.split(" ", 1)[0].strip()) or "?",
            name=clean_text(name) if text(name) else None, user=_opt(user), account=_opt(account),
            partition=_opt(partition), nodes=None if nodes.strip() in ("", "None assigned") else clean_text(nodes.strip()),
            start=parse_cli_time(start_s), end=parse_cli_time(end_s), elapsed_s=elapsed_s(elapsed),
            exit_code=code, signal=sig, gpus=gpus_from_tres_str(tres) if tres.strip() else None,
            reason=_opt(reason)))
    return out


def _opt(value: str) -> str | None:
    v = text(value)
    return clean_text(v) if v is not None else None


def parse_sreport_gpu_text(text_in: str, *, on_invalid: OnInvalid | None = None) -> list[GpuUsage]:
    """``sreport -P -T gres/gpu -t Minutes cluster AccountUtilizationByUser`` → GPU-hours per
    account (``Login`` empty) and per user in an account. The banner lines above the header
    (``Usage reported in TRES Minutes``) are skipped; rows of another TRES are left out."""
    lines = text_in.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Cluster|")), None)
    if start is None and any("|" in ln for ln in lines) and any(ln.startswith("Cluster/") for ln in lines):
        raise SlurmParseError("sreport: no column header")
    body = "\n".join(lines[start:] if start is not None else lines)
    out: list[GpuUsage] = []
    for cols in _rows(body, SREPORT_HEADER, "sreport", on_invalid):
        cluster, account, login, _proper, tres, used = cols
        minutes = to_float(used.strip())
        if tres.strip() != "gres/gpu" or minutes is None or not account.strip():
            continue
        out.append(GpuUsage(account=clean_text(account.strip()), user=_opt(login), gpu_hours=minutes / 60.0,
                            cluster=_opt(cluster)))
    return out

