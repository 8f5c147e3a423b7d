"""One pending job's priority factors (``sprio``) and expected start (``squeue --start``).

``sprio`` has no ``--json`` in any version (22.05 and 25.11 answer "unrecognized option '--json'"),
so it is read with an explicit format whose columns are the same in both (recorded on the beds):
:data:`SPRIO_FORMAT`. ``squeue --start`` likewise with :data:`START_FORMAT`; "N/A" means the
scheduler has no estimate yet.
"""

from __future__ import annotations

from hpctui.model.scheduler import ExpectedStart, PriorityFactors
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.scontrol import _lines
from hpctui.sources.slurm.parse.values import parse_cli_time, text, to_int

# job id | user | priority | age | fairshare | jobsize | partition | qos | nice | tres | site (weighted)
SPRIO_FORMAT = "%i|%u|%Y|%A|%F|%J|%P|%Q|%N|%T|%S"
# job id | user | expected start | scheduled nodes | reason
START_FORMAT = "%i|%u|%S|%Y|%r"


def parse_sprio(text_in: str) -> list[PriorityFactors]:
    """``sprio -h -o SPRIO_FORMAT`` → one row per pending job (a short line is an error)."""
    out = []
    for line in _lines(text_in):
        cols = line.strip().split("|")
        if len(cols) != 11:
            raise SlurmParseError(f"sprio: expected 11 columns, got {len(cols)}: {line[:60]!r}")
        job_id = text(cols[0])
        if not job_id:
            raise SlurmParseError(f"sprio: no job id: {line[:60]!r}")
        out.append(PriorityFactors(
            job_id=job_id, user=text(cols[1]), priority=to_int(cols[2]), age=to_int(cols[3]),
            fairshare=to_int(cols[4]), jobsize=to_int(cols[5]), partition=to_int(cols[6]), qos=to_int(cols[7]),
            nice=to_int(cols[8]), tres=text(cols[9]), site=to_int(cols[10]),
        ))
    return out


def parse_squeue_start(text_in: str) -> list[ExpectedStart]:
    """``squeue --start -h -o START_FORMAT`` → one row per pending job."""
    out = []
    for line in _lines(text_in):
        cols = line.strip().split("|")
        if len(cols) != 5:
            raise SlurmParseError(f"squeue --start: expected 5 columns, got {len(cols)}: {line[:60]!r}")
        job_id = text(cols[0])
        if not job_id:
            raise SlurmParseError(f"squeue --start: no job id: {line[:60]!r}")
        out.append(ExpectedStart(job_id=job_id, user=text(cols[1]), start_time=parse_cli_time(cols[2]),
                                 sched_nodes=text(cols[3]), reason=text(cols[4])))
    return out
