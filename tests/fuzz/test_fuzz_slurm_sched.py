"""Issue #24's Slurm parsers under mutation: reservations (scontrol -o text, scontrol --json, REST), sprio and
squeue --start formats, sdiag text and JSON with their RPC tables. SlurmParseError or clean models."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fuzzkit import assert_clean, check, clean_message, dump_json, mutated_bytes, mutated_json, mutated_text, seed_bytes
from hypothesis import given
from hypothesis import strategies as st

from hpctui.base.sanitize import decode_output
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.parse.priority import parse_sprio, parse_squeue_start
from hpctui.sources.slurm.parse.reservations import parse_reservations_json, parse_scontrol_reservations

TEXT_RESV = [decode_output(seed_bytes(f"slurm/{n}")) for n in (
    "cli_scontrol_show_reservation_oneliner.txt", "cli_25.11_scontrol_show_reservation_oneliner.txt")]
PRIO = [decode_output(seed_bytes(f"slurm/{n}")) for n in (
    "cli_sprio_j_parsable.txt", "cli_squeue_start_parsable.txt", "cli_25.11_squeue_start_parsable.txt")]
SDIAG = [decode_output(seed_bytes(f"slurm/{n}")) for n in ("cli_sdiag_hammer.txt", "cli_25.11_sdiag.txt")]
JSON = ["slurm/rest_v0.0.38_reservations.json", "slurm/cli_25.11_scontrol_show_reservation.json",
        "slurm/rest_25.11_v0.0.44_reservations.json", "slurm/rest_v0.0.38_diag_hammer.json",
        "slurm/cli_25.11_sdiag.json", "slurm/rest_25.11_v0.0.44_diag.json"]
BYTES = [seed_bytes(f) for f in JSON]


def _try(fn: Callable[[], Any]) -> None:
    try:
        check(fn, raises=())
    except parse.SlurmParseError as exc:
        clean_message(exc)


@given(mutated_text(TEXT_RESV))
def test_reservation_text(text: str) -> None:
    _try(lambda: parse_scontrol_reservations(text))
    dropped: list[str] = []
    _try(lambda: parse_scontrol_reservations(text, on_invalid=dropped.append))
    assert_clean(dropped)


@given(st.one_of(mutated_text(PRIO), mutated_text(SDIAG)))
def test_sprio_start_and_sdiag_text(text: str) -> None:
    for fn in (parse_sprio, parse_squeue_start, parse.parse_sdiag_text):
        _try(lambda fn=fn: fn(text))


@given(st.one_of(mutated_bytes(BYTES),
                 st.tuples(mutated_json([json.loads(b) for b in BYTES]),
                           st.sampled_from((2, None))).map(lambda d: dump_json(*d))))
def test_reservation_and_diag_json(data: bytes) -> None:
    _try(lambda: parse_reservations_json(data))
    dropped: list[str] = []
    _try(lambda: parse_reservations_json(data, on_invalid=dropped.append))
    assert_clean(dropped)
    _try(lambda: parse.parse_diag_json(data))
