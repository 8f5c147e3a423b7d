"""Accounting as Slurm keeps it: fair-share rows, QoS limits, associations, and the on-demand view that joins them."""

from __future__ import annotations

import msgspec


class FairShare(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One sshare row; ``user`` None for account rows; ``depth`` is the tree level."""

    account: str
    user: str | None = None
    raw_shares: int | None = None
    norm_shares: float | None = None
    raw_usage: int | None = None
    effective_usage: float | None = None
    fairshare: float | None = None
    depth: int = 0
    norm_usage: float | None = None  # ``-l`` only
    level_fs: float | None = None  # ``-l`` only; ``inf`` (no usage yet) → math.inf


class QosLimits(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A QoS and the limits that produce QOS* pending reasons (None = no limit)."""

    name: str
    priority: int | None = None
    max_wall_min: int | None = None
    max_jobs_per_user: int | None = None
    max_submit_per_user: int | None = None
    max_tres_per_user: str | None = None
    max_gpus_per_user: int | None = None
    max_tres_per_job: str | None = None
    grp_tres: str | None = None
    max_jobs_per_account: int | None = None


class Association(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One ``sacctmgr show assoc`` row: where a user (or account) sits and its own limits."""

    account: str
    user: str | None = None  # None: the account's own association
    cluster: str | None = None
    partition: str | None = None
    share: str | None = None  # raw Fairshare: a number or "parent"
    qos: tuple[str, ...] = ()
    default_qos: str | None = None
    max_jobs: int | None = None
    max_submit: int | None = None
    max_tres: str | None = None
    grp_tres: str | None = None
    grp_jobs: int | None = None
    max_wall_min: int | None = None


class AccountingInfo(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Fair-share rows, QoS limits and associations for one user and/or account."""

    available: bool
    user: str | None = None
    account: str | None = None
    fairshare: list[FairShare] = msgspec.field(default_factory=list)  # sshare tree order
    qos: list[QosLimits] = msgspec.field(default_factory=list)  # every QoS of the cluster
    associations: list[Association] = msgspec.field(default_factory=list)  # only with user/account
    detail: str | None = None  # why unavailable, or what part is missing
    notes: list[str] = msgspec.field(default_factory=list)  # e.g. "read with the CLI (backend is rest)"
    commands: list[str] = msgspec.field(default_factory=list)  # what ran, shell-quoted
    duration_s: float = 0.0

    def qos_named(self, name: str) -> QosLimits | None:
        return next((q for q in self.qos if q.name == name), None)
