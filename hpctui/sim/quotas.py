"""The demo's file system quotas: what the SSH source's quota sweep would report for the users with running
jobs (``lfs quota -u`` on /lustre/scratch, ``beegfs-ctl --getquota`` on /mnt/beegfs). Deterministic per seed;
one user — the one with most running jobs when the demo starts, besides the RPC hammer — is over their Lustre soft limit with the
grace timer running (lfs's ``*``), so the problem list has a "user over quota with running jobs" to show."""

from __future__ import annotations

import random
from collections.abc import Iterable

from hpctui.model.mount import QuotaUsage

TIB = 1024.0**4
SOFT_TIB, HARD_TIB = 45.0, 50.0  # /lustre/scratch per user
FILES_SOFT, FILES_HARD = 9_000_000, 10_000_000
BEEGFS_HARD_TIB = 5.0


def demo_quotas(users: Iterable[str], over_user: str | None, seed: int) -> tuple[QuotaUsage, ...]:
    """One Lustre and one BeeGFS usage per user (sorted by name); ``over_user`` at 103 % of the soft limit."""
    out: list[QuotaUsage] = []
    for user in sorted(set(users)):
        rng = random.Random(f"{seed}:quota:{user}")
        if user == over_user:
            used, files, over, grace = 1.03 * SOFT_TIB * TIB, 7_412_094, True, "2d13h21m5s"
        else:
            used, files, over, grace = rng.uniform(0.05, 0.8) * SOFT_TIB * TIB, rng.randrange(40_000, 4_000_000), False, None
        out.append(QuotaUsage(user=user, filesystem="/lustre/scratch", used_bytes=round(used / 1024) * 1024.0,
                              soft_bytes=SOFT_TIB * TIB, hard_bytes=HARD_TIB * TIB, files=files,
                              files_soft=FILES_SOFT, files_hard=FILES_HARD, over=over, grace=grace))
        out.append(QuotaUsage(user=user, filesystem="/mnt/beegfs (pool Default)",
                              used_bytes=round(rng.uniform(0.01, 0.6) * BEEGFS_HARD_TIB * TIB),
                              hard_bytes=BEEGFS_HARD_TIB * TIB, files=rng.randrange(1_000, 900_000)))
    return tuple(out)
