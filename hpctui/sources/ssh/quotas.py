"""File system quotas of the users with running jobs, asked over SSH on a slow cadence.

Every ``quotas.interval_s`` the SSH source asks, for each owner of a running Slurm job,
``lfs quota -u USER MNT`` (Lustre) and ``beegfs-ctl --getquota --uid USER --mount=MNT`` (BeeGFS)
on one node: ``quotas.host`` when set (a login node), else a reachable node of one of the user's
running jobs that mounts the file system. One SSH command per node asks for all its users, each
answer framed by marker lines carrying a random nonce (a user or mount name cannot fake one).

Promises:

- :func:`plan_sweep` is pure: which node asks for which users on which file systems, from one
  snapshot. User names that are not plain account names are skipped and said (they come from
  Slurm: hostile until checked); at most ``max_users`` users a sweep (the most running jobs first).
- :func:`parse_sweep` turns one node's output into quotas and warnings; a (user, file system) whose
  command failed or printed no quota costs that pair only. Quotas carry the asked mount point as
  their ``filesystem`` (Lustre prints the same; BeeGFS prints a storage pool, kept after the mount).
- :class:`QuotaSweeper` runs a sweep in the background (``collect`` never waits for it) and keeps
  the last complete answer; a sweep that fails on one node keeps that node's previous quotas.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hpctui.base.sanitize import clean_text
from hpctui.findings.pfs import RUNNING_STATES, running_jobs_by_user
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.mount import QuotaUsage
from hpctui.sources.ssh.probe.parse_pfs import parse_beegfs_quota, parse_lfs_quota

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.model.output import NodeOutput
    from hpctui.sources.ssh.settings import QuotaSettings

# account names as sites spell them (POSIX portable names, plus '@' of AD/SSSD domains); anything else
# (spaces, quotes, control characters, a leading '-') is not asked for
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")
PFS_TYPES = {"lustre": "lustre", "beegfs": "beegfs"}  # Mount.fstype -> the tool family that asks
MAX_OUTPUT = 1 << 20  # one node's answer for all its users


@dataclass(frozen=True, slots=True)
class HostAsk:
    """One node's share of a sweep: these users, on these (kind, mount point) file systems."""

    host: str
    users: tuple[str, ...]
    filesystems: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class SweepPlan:
    asks: list[HostAsk] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def running_owners(snapshot: ClusterSnapshot) -> dict[str, list[str]]:
    """User -> the nodes of their running jobs (cluster order), most running jobs first."""
    jobs = running_jobs_by_user(snapshot)  # the users the quota finding counts: asked, and only they
    nodes: dict[str, list[str]] = {}
    for j in snapshot.jobs:
        if not j.user or j.state not in RUNNING_STATES:
            continue
        where = nodes.setdefault(j.user, [])
        try:
            names = expand(j.nodes) if j.nodes else []
        except HostlistError:
            names = []
        where.extend(n for n in names if n not in where)
    return {u: nodes[u] for u in sorted(jobs, key=lambda u: (-jobs[u], u))}


def _pfs_mounts(snapshot: ClusterSnapshot, node: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in snapshot.mounts.get(node, ()):
        kind = PFS_TYPES.get(m.fstype.lower())
        if kind and m.target.startswith("/") and (kind, m.target) not in out:
            out.append((kind, m.target))
    return out


def _reachable(snapshot: ClusterSnapshot, node: str) -> bool:
    p = snapshot.probes.get(node)
    return p is None or p.reachable


def plan_sweep(snapshot: ClusterSnapshot, settings: QuotaSettings) -> SweepPlan:
    """Who is asked where: every owner of a running job (at most ``max_users``), grouped by node."""
    plan = SweepPlan()
    owners = running_owners(snapshot)
    bad = [u for u in owners if not _USER.match(u)]
    if bad:
        plan.warnings.append(f"quotas: {len(bad)} user name(s) not asked (not an account name): "
                             + ", ".join(repr(clean_text(u))[:40] for u in bad[:3]))
    users = [u for u in owners if _USER.match(u)]
    if len(users) > settings.max_users:
        plan.warnings.append(f"quotas: {len(users) - settings.max_users} of {len(users)} users not asked "
                             f"(max_users = {settings.max_users}; the ones with most running jobs are)")
        users = users[:settings.max_users]
    wanted = set(settings.filesystems) if settings.filesystems else None
    by_host: dict[str, list[str]] = {}
    mounts_of: dict[str, list[tuple[str, str]]] = {}
    if settings.host:
        fs: list[tuple[str, str]] = []
        for node in snapshot.mounts:
            fs.extend(x for x in _pfs_mounts(snapshot, node) if x not in fs)
        if settings.filesystems:  # a login node the probes do not see: the configured mounts, as Lustre
            known = {m for _, m in fs}
            fs.extend(("lustre", m) for m in settings.filesystems if m not in known)
        mounts_of[settings.host] = fs
        if users:
            by_host[settings.host] = users
    else:
        for user in users:
            host = next((n for n in owners[user] if _pfs_mounts(snapshot, n) and _reachable(snapshot, n)), None)
            if host is not None:
                by_host.setdefault(host, []).append(user)
                mounts_of.setdefault(host, _pfs_mounts(snapshot, host))
    for host, host_users in by_host.items():
        fs = [x for x in mounts_of[host] if wanted is None or x[1] in wanted]
        if fs:
            plan.asks.append(HostAsk(host=host, users=tuple(host_users), filesystems=tuple(fs)))
    return plan


def _pairs(ask: HostAsk) -> list[tuple[str, str, str]]:
    """(user, kind, mount point) in the order the script asks them."""
    return [(user, kind, mount) for user in ask.users for kind, mount in ask.filesystems]


def sweep_script(ask: HostAsk, nonce: str) -> str:
    """The remote ``sh`` script of one node: per (user, file system) a marker line with its index, the
    tool's output (stderr too) and its exit status; every name is one quoted word."""
    lines = []
    for i, (user, kind, mount) in enumerate(_pairs(ask)):
        q_user, q_mount = shlex.quote(user), shlex.quote(mount)
        lines.append(f"echo '@@{nonce} q {i}'")
        if kind == "lustre":
            lines.append(f"lfs quota -u {q_user} {q_mount} 2>&1")
        else:
            lines.append(f"beegfs-ctl --getquota --uid {q_user} --mount={q_mount} 2>&1")
        lines.append(f"echo '@@{nonce} rc' $?")
    return "\n".join(lines) + "\n"


def parse_sweep(ask: HostAsk, output: NodeOutput, nonce: str) -> tuple[list[QuotaUsage] | None, list[str]]:
    """One node's answer → (its quotas, or None when the node could not be asked at all; warnings).
    A pair whose tool printed quota rows counts whatever its exit status (lfs exits non-zero when a
    target did not answer, and still prints the others); one that printed none is said."""
    if output.error is not None and not output.output:
        return None, [f"quotas on {ask.host}: {clean_text(output.error)[:200]}"]
    pairs = _pairs(ask)
    quotas: list[QuotaUsage] = []
    failed: list[str] = []
    marker = f"@@{nonce} "
    current: int | None = None
    body: list[str] = []
    for line in output.output.splitlines():
        if not line.startswith(marker):
            body.append(line)
            continue
        head = line[len(marker):].split()
        if len(head) == 2 and head[0] == "q" and head[1].isdigit() and int(head[1]) < len(pairs):
            current, body = int(head[1]), []
        elif len(head) == 2 and head[0] == "rc" and current is not None:
            user, kind, mount = pairs[current]
            found = _quota_section(kind, user, mount, "\n".join(body))
            quotas.extend(found)
            if not found:
                first = next((b.strip() for b in body if b.strip()), "no quota printed")
                failed.append(f"{user} on {mount} (exit {clean_text(head[1])[:8]}: {clean_text(first)[:120]})")
            current, body = None, []
    warnings = []
    if failed:
        warnings.append(f"quotas on {ask.host}: {len(failed)} unreadable: " + "; ".join(failed[:3]))
    if output.error is not None:
        warnings.append(f"quotas on {ask.host}: incomplete ({clean_text(output.error)[:120]})")
    return quotas, warnings


def _quota_section(kind: str, user: str, mount: str, text: str) -> list[QuotaUsage]:
    if kind == "lustre":  # the asked mount names the row (lfs prints the same path)
        return [_named(q, user, mount) for q in parse_lfs_quota(text)]
    # BeeGFS prints one row per storage pool: "<mount> (pool <name>)"; rows of other users are not ours
    return [_named(q, user, f"{mount} (pool {q.filesystem.removeprefix('beegfs pool ')})")
            for q in parse_beegfs_quota(text) if q.user == user]


def _named(q: QuotaUsage, user: str, filesystem: str) -> QuotaUsage:
    import msgspec

    return msgspec.structs.replace(q, user=clean_text(user), filesystem=clean_text(filesystem)[:200])


SweepRunner = Callable[[list[HostAsk], str], Awaitable[list["NodeOutput"]]]
"""Runs each node's :func:`sweep_script` (the asks, the nonce) and returns one output per ask, in order."""


class QuotaSweeper:
    """The background sweep of one SSH source: started by ``collect`` when due, never awaited by it."""

    def __init__(self, settings: QuotaSettings, run: SweepRunner, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._run = run
        self.clock = clock
        self.last_start: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.quotas: dict[str, tuple[QuotaUsage, ...]] = {}  # host -> its last answer
        self.warnings: list[str] = []
        self.done_at: float | None = None  # when the last sweep finished (None: no answer yet)
        self._result: tuple[QuotaUsage, ...] | None = None

    def due(self, now: float) -> bool:
        if self.settings.interval_s <= 0 or (self.task is not None and not self.task.done()):
            return False
        return self.last_start is None or now - self.last_start >= self.settings.interval_s

    def maybe_start(self, snapshot: ClusterSnapshot | None) -> None:
        """Start a sweep when one is due and the snapshot has running jobs to ask about."""
        now = self.clock()
        if snapshot is None or not self.due(now):
            return
        plan = plan_sweep(snapshot, self.settings)
        self.last_start = now
        if not plan.asks:  # nobody to ask (no running jobs, or no Lustre/BeeGFS mount where they run)
            self.warnings = plan.warnings
            if self.done_at is not None:  # quotas were reported before: now there are none to report
                self.quotas, self.done_at, self._result = {}, now, None
            return  # never asked: the part stays unreported (a cluster without a parallel file system)
        self.task = asyncio.ensure_future(self._sweep(plan))

    async def _sweep(self, plan: SweepPlan) -> None:
        nonce = secrets.token_hex(8)
        outputs = await self._run(plan.asks, nonce)
        warnings = list(plan.warnings)
        quotas: dict[str, tuple[QuotaUsage, ...]] = {}
        for ask, out in zip(plan.asks, outputs, strict=True):
            got, said = parse_sweep(ask, out, nonce)
            warnings.extend(said)
            if got is not None:
                quotas[ask.host] = tuple(got)
            elif ask.host in self.quotas:
                quotas[ask.host] = self.quotas[ask.host]  # unreachable this time: its last answer stays
        self.quotas, self.warnings, self.done_at = quotas, warnings, self.clock()
        self._result = None

    def result(self) -> tuple[QuotaUsage, ...] | None:
        """Every user's quotas of the last sweep (None before the first one finished); the same tuple
        until the next sweep ends (readers compare by identity)."""
        if self.done_at is None:
            return None
        if self._result is None:
            self._result = tuple(q for qs in self.quotas.values() for q in qs)
        return self._result

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait({self.task}, timeout=5.0)
