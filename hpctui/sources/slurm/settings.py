"""The TOML section of one Slurm source (``[[clusters.NAME.sources]] kind = "slurm"``).

A typed Struct with ``forbid_unknown_fields`` so a typo in the config is an error at
start-up, not a silently ignored key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

if TYPE_CHECKING:
    from hpctui.sources.slurm.source import SlurmSource

BackendName = Literal["auto", "cli", "rest", "pyslurm"]
QueueRead = Literal["auto", "json", "hybrid"]
HYBRID_MIN_JOBS = 5000  # queue_read = "auto": the hybrid read past this many jobs (see CliBackend.use_hybrid)


class SlurmSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=64)] = "slurm"
    """The source's name, as the status line, ``precedence`` and ``ssh_source`` name it."""
    backend: BackendName = "auto"
    """auto (pyslurm when it matches the running Slurm, else slurmrestd when ``rest_url`` is set, else the CLI),
    cli, rest or pyslurm."""
    # bounds also reject NaN and ±inf: interval ≥ 0.5 s (no busy loop), timeout ≤ 300 s (no hang)
    interval_s: Annotated[float, Meta(ge=0.5, le=3600)] = 5.0
    """Seconds between refreshes."""
    timeout_s: Annotated[float, Meta(gt=0, le=300)] = 10.0
    """Hard limit of one CLI call / HTTP request."""
    slurm_conf: str | None = None
    """Exported as ``SLURM_CONF`` to the CLI tools."""
    bin_dir: str | None = None
    """Put first on ``PATH`` for the CLI tools."""
    rest_url: str | None = None
    """slurmrestd's address: ``unix:///run/slurmrestd.sock`` or ``http://127.0.0.1:6820``."""
    rest_version: str | None = None
    """OpenAPI version, e.g. "v0.0.38"; unset: discovered from ``/openapi/v3``."""
    jwt: str | None = None
    """slurmrestd token; else ``$SLURM_JWT``, else ``scontrol token`` if ``jwt_from_scontrol``."""
    jwt_user: str | None = None
    """``X-SLURM-USER-NAME``; default: the current user."""
    jwt_from_scontrol: bool = False
    """Get a token with ``scontrol token`` (renewed before it expires)."""
    jwt_lifespan_s: Annotated[int, Meta(ge=60, le=86_400 * 365)] = 3600
    """Lifespan asked of ``scontrol token``."""
    verify_tls: bool = True
    """Verify slurmrestd's certificate over ``https://``."""
    # Largest slurmrestd answer read (issue #19 §5). A job record is ~3.5-6 KB of JSON
    # (v0.0.36-v0.0.40 samples), so 256 MiB holds ~45,000 jobs: 4.5x Slurm's default
    # MaxJobCount (10,000). A site with a bigger queue raises it; past it the read stops and
    # the error says so, instead of growing memory with whatever the server sends.
    max_answer_mib: Annotated[int, Meta(ge=1, le=4096)] = 256
    """Largest slurmrestd answer read; past it the read stops with an error saying so."""
    queue_read: QueueRead = "auto"
    """How the CLI backend reads the queue: json (``squeue --json``, every field of every job), hybrid
    (``squeue`` text for the whole queue, ``squeue --json -t RUNNING,...`` for the jobs holding nodes:
    ~8x faster at 100k jobs; pending jobs then lack exit code, restart count, batch/requeue flags and
    GPU counts not asked per node, read on demand by the job detail), or auto: hybrid on the first read and
    while the queue has more than ``hybrid_min_jobs`` jobs, json otherwise. The hybrid costs slurmctld 3 RPCs
    per read instead of 1 (two job-table reads and the partitions). Where ``squeue --json`` ignores ``-t``
    (Slurm before 24.05.1), json."""
    hybrid_min_jobs: Annotated[int, Meta(ge=0, le=10_000_000)] = HYBRID_MIN_JOBS
    """``queue_read = "auto"``: the queue size past which the hybrid read is used."""
    reservations_interval_s: Annotated[float, Meta(ge=0, le=86_400)] = 60.0
    """Seconds between reads of the reservations (``scontrol show reservation`` / REST); 0: every refresh.
    They are read again right after a reservation action."""

    def __post_init__(self) -> None:
        if self.backend == "rest" and not self.rest_url:
            raise ValueError("backend = 'rest' needs rest_url")
        if self.rest_url and not self.rest_url.startswith(("unix://", "http://", "https://")):
            raise ValueError("rest_url must start with unix://, http:// or https://")


def build_slurm_source(settings: SlurmSettings) -> SlurmSource:
    """The one constructor the config loader calls."""
    from hpctui.sources.slurm.source import SlurmSource

    return SlurmSource(settings)
