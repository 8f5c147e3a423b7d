"""Slurm reservations: ``scontrol -o show reservation`` (every version), ``scontrol --json show
reservation`` (23.02+; 22.05 answers "unrecognized option '--json'") and REST ``GET reservations``.

Up to v0.0.38 times and counts are plain ints; from v0.0.41 (25.11's CLI JSON and slurmrestd) they
are ``{set, infinite, number}`` wrappers and there is no ``state`` field (the text form has
``State=ACTIVE|INACTIVE``): :meth:`Reservation.active` then goes by the times. Every string passes
:func:`values.text` (hpctui.base.sanitize); a record with an unreadable node list keeps its other
fields (``nodes`` None) and is reported once.
"""

from __future__ import annotations

import msgspec

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.scheduler import Reservation
from hpctui.sources.slurm.parse.nodes import decode_document
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError
from hpctui.sources.slurm.parse.scontrol import OnInvalid, _invalid, _lines, _splitter, split_pairs
from hpctui.sources.slurm.parse.values import IntLike, epoch, num, parse_cli_time, split_list, text, to_int

MAX_RESERVATIONS = 10_000  # more is not a real site: the rest are dropped (reported)

_KEYS = [
    "ReservationName", "StartTime", "EndTime", "Duration", "Nodes", "NodeCnt", "CoreCnt", "Features",
    "PartitionName", "Flags", "TRES", "AllowedPartitions", "QOS", "Users", "Groups", "Accounts", "Licenses",
    "State", "BurstBuffer", "Watts", "MaxStartDelay", "Comment", "NodeList", "CoreSpec",
]
_SPLIT = _splitter(_KEYS)


def _nodes_ok(expr: str | None, name: str, on_invalid: OnInvalid | None) -> str | None:
    if expr is None:
        return None
    try:
        expand(expr)
    except HostlistError as exc:
        _invalid(f"reservation {name}: unreadable node list ({exc})", on_invalid)
        return None
    return expr


def parse_scontrol_reservations(text_in: str, *, on_invalid: OnInvalid | None = None) -> tuple[Reservation, ...]:
    """``scontrol -o show reservation`` → reservations ("No reservations in the system" → none)."""
    out: list[Reservation] = []
    for lineno, line in enumerate(_lines(text_in), 1):
        if line.strip().startswith("No reservations in the system"):
            continue
        d = dict(split_pairs(line, _SPLIT))
        name = text(d.get("ReservationName"))
        if not name:
            _invalid(f"scontrol reservations: line {lineno} lacks ReservationName=: {line[:60]!r}", on_invalid)
            continue
        if len(out) >= MAX_RESERVATIONS:
            _invalid(f"more than {MAX_RESERVATIONS} reservations: the rest are not shown", on_invalid)
            break
        out.append(Reservation(
            name=name, start_time=parse_cli_time(d.get("StartTime")), end_time=parse_cli_time(d.get("EndTime")),
            nodes=_nodes_ok(text(d.get("Nodes")), name, on_invalid), node_count=to_int(d.get("NodeCnt")),
            users=split_list(d.get("Users")), accounts=split_list(d.get("Accounts")),
            flags=tuple(f.upper() for f in split_list(d.get("Flags"))), partition=text(d.get("PartitionName")),
            state=(text(d.get("State")) or "").upper() or None, tres=text(d.get("TRES")),
        ))
    return tuple(out)


class _Resv(msgspec.Struct, kw_only=True):
    name: str | None = None
    node_list: str | None = None
    node_count: IntLike = None
    start_time: IntLike = None
    end_time: IntLike = None
    flags: list[str] | None = None
    users: str | None = None
    accounts: str | None = None
    partition: str | None = None
    tres: str | None = None


class _ResvDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    reservations: list[_Resv] = msgspec.field(default_factory=list)


_decoder = msgspec.json.Decoder(_ResvDoc)


def parse_reservations_json(data: bytes | str, version: str | None = None, *,
                            on_invalid: OnInvalid | None = None) -> tuple[Reservation, ...]:
    """REST ``GET /slurm/vX/reservations`` or ``scontrol --json show reservation`` → reservations."""
    doc = decode_document(_decoder, data, version, "slurm reservations JSON")
    out: list[Reservation] = []
    for i, r in enumerate(doc.reservations):
        name = text(r.name)
        if not name:
            _invalid(f"reservations JSON: record {i} has no name", on_invalid)
            continue
        if len(out) >= MAX_RESERVATIONS:
            _invalid(f"more than {MAX_RESERVATIONS} reservations: the rest are not shown", on_invalid)
            break
        out.append(Reservation(
            name=name, start_time=epoch(r.start_time), end_time=epoch(r.end_time),
            nodes=_nodes_ok(text(r.node_list), name, on_invalid), node_count=num(r.node_count),
            users=split_list(r.users), accounts=split_list(r.accounts),
            flags=tuple(f.upper() for f in split_list(r.flags)), partition=text(r.partition), tres=text(r.tres),
        ))
    return tuple(out)
