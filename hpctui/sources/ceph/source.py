"""The Ceph source: one cluster's health every ``interval_s`` through the ``ceph`` CLI (here, or on an admin
host over SSH: :mod:`hpctui.sources.ceph.remote`), or from the mgr's Prometheus module
(:mod:`hpctui.sources.ceph.metrics`, one bounded GET of ``metrics_url``).

Each CLI read runs ``ceph status``, ``ceph health detail``, ``ceph osd tree`` and ``ceph df detail`` (all ``-f json``,
at once, each under ``timeout_s`` and killed with its process group when late: with the mons unreachable or
an OSD down, ceph calls hang rather than fail) through :class:`hpctui.sources.slurm.runner.Runner` (argv only,
never a shell). ``ceph versions`` and ``ceph mon dump`` (the mons' addresses, which tie CephFS mounts to this
cluster) are read once, retried on later reads until they answer. The read fails (the source goes stale, its last health stays
shown with the error) only when neither ``status`` nor ``health detail`` answered; a failed ``osd tree`` or
``df`` costs those parts, named in :attr:`~hpctui.model.storage.CephHealth.parts_missing` and in the
source's warnings.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from hpctui.base.sanitize import clean_text
from hpctui.model import SourceResult
from hpctui.model.storage import CephCheck, CephHealth, CephOsd, CephPool
from hpctui.sources.base import SourceError
from hpctui.sources.ceph.parse import (
    CephParseError,
    parse_df,
    parse_health_detail,
    parse_mon_dump,
    parse_osd_tree,
    parse_status,
    parse_versions,
)
from hpctui.sources.ceph.settings import CephSettings
from hpctui.sources.slurm.runner import CommandError, Runner

T = TypeVar("T")

COMMANDS: dict[str, tuple[str, ...]] = {
    "status": ("status",),
    "health detail": ("health", "detail"),
    "osd tree": ("osd", "tree"),
    "df": ("df", "detail"),
}
ONCE: dict[str, tuple[str, ...]] = {"versions": ("versions",), "mon dump": ("mon", "dump")}  # read until answered


class CephError(SourceError):
    """The cluster's health could not be read (the mons unreachable, no permission, a wrong answer)."""


class CephSource:
    """A Source for one Ceph cluster (``kind = "ceph"``)."""

    kind = "ceph"

    def __init__(self, settings: CephSettings, runner: Runner | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.clock = clock
        self.runner = runner or Runner(timeout_s=settings.timeout_s)
        self.version: str | None = None  # read once (ceph versions)
        self.mon_addrs: tuple[str, ...] | None = None  # read once (ceph mon dump)
        self.last: CephHealth | None = None
        self.via = "metrics" if settings.metrics_url else "ssh" if settings.host else "cli"
        self._prefix: tuple[str, ...] | None = None  # ssh ... -- host (settings.host), resolved once
        self._metrics: object | None = None  # the MetricsReader (settings.metrics_url), made on first use

    def argv(self, *words: str) -> list[str]:
        """The exact ``ceph`` command line of one call (shown in the docs and tests): run as this argv here, or
        with ``host`` as the one quoted string of :func:`~hpctui.sources.ceph.remote.remote_argv`."""
        s = self.settings
        out = list(s.command)
        if s.conf:
            out += ["--conf", s.conf]
        if s.keyring:
            out += ["--keyring", s.keyring]
        if s.client:
            out += ["--name", s.client]
        out += ["--connect-timeout", f"{max(1, int(s.timeout_s))}", *words, "-f", "json"]
        return out

    async def command_line(self, *words: str) -> list[str]:
        """The argv run for one call: :meth:`argv`, or with ``host`` the ``ssh`` that runs it there (ssh_config is
        read once, in a worker thread)."""
        argv = self.argv(*words)
        host = self.settings.host
        if host is None:
            return argv
        from hpctui.sources.ceph.remote import remote_argv, ssh_prefix

        if self._prefix is None:
            try:
                self._prefix = await asyncio.to_thread(ssh_prefix, host, self.settings.ssh)
            except ValueError as exc:
                raise CephError(f"ssh to {host}: {clean_text(str(exc))}") from None
        return remote_argv(self._prefix, argv)

    async def close(self) -> None:
        return None

    async def _call(self, words: tuple[str, ...]) -> bytes:
        what = " ".join(words)
        where = f" on {self.settings.host}" if self.settings.host else ""
        argv = await self.command_line(*words)
        try:
            r = await self.runner.run(argv, timeout_s=self.settings.timeout_s + 5)
        except CommandError as exc:
            raise CephError(f"ceph {what}{where}: {clean_text(str(exc))}") from None
        if not r.ok:
            ssh = " (ssh could not connect or log in)" if where and r.rc == 255 else ""
            raise CephError(f"ceph {what}{where}: exit {r.rc}{ssh}: {r.message or 'no output'}")
        if len(r.stdout) > self.settings.max_answer_mib << 20:
            raise CephError(f"ceph {what}: answer over {self.settings.max_answer_mib} MiB, refused")
        return r.stdout

    async def collect(self) -> SourceResult:
        t = self.clock()
        if self.settings.metrics_url:
            health = await self._read_metrics()
            self.last = health
            return SourceResult(source=self.name, time=t, ceph={self.name: health})
        names = list(COMMANDS)
        if self.version is None:
            names.append("versions")
        if self.mon_addrs is None:
            names.append("mon dump")
        calls = [self._call(COMMANDS.get(n) or ONCE[n]) for n in names]
        answers = await asyncio.gather(*calls, return_exceptions=True)
        got: dict[str, bytes] = {}
        failed: dict[str, str] = {}
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, CephError):
                    raise answer
                failed[name] = str(answer)
            else:
                got[name] = answer
        health = self._build(got, failed)
        self.last = health
        warnings = tuple(failed[n] for n in COMMANDS if n in failed)
        return SourceResult(source=self.name, time=t, ceph={self.name: health}, warnings=warnings)

    def _build(self, got: dict[str, bytes], failed: dict[str, str]) -> CephHealth:
        checks: tuple[CephCheck, ...] | None = None
        overall: str | None = None
        osds: tuple[CephOsd, ...] = ()
        pools: tuple[CephPool, ...] = ()
        raw_total = raw_used = None

        def read(name: str, parse: Callable[[bytes], T]) -> T | None:
            data = got.get(name)
            if data is None:
                return None
            try:
                return parse(data)
            except CephParseError as exc:
                failed[name] = str(exc)
                return None

        status = read("status", parse_status)
        detail = read("health detail", parse_health_detail)
        if detail is not None:
            overall, checks = detail
        tree = read("osd tree", parse_osd_tree)
        if tree is not None:
            osds = tree
        df = read("df", parse_df)
        if df is not None:
            pools, raw_total, raw_used = df
        if "versions" in got:
            self.version = read("versions", parse_versions) or ""
        if "mon dump" in got:
            self.mon_addrs = read("mon dump", parse_mon_dump)
        if status is None and checks is None:
            why = failed.get("status") or failed.get("health detail") or "no answer"
            raise CephError(why)
        if checks is None:  # health detail failed: the checks of status, without their detail lines
            assert status is not None
            checks, overall = status.checks, status.status
        missing = tuple(f"{n}: {failed[n]}" for n in COMMANDS if n in failed)
        return CephHealth(
            name=self.name, status=overall or (status.status if status else "HEALTH_UNKNOWN"),
            fsid=status.fsid if status else None, version=self.version or None, checks=checks,
            osds_total=status.osds_total if status else None, osds_up=status.osds_up if status else None,
            osds_in=status.osds_in if status else None, osds=osds,
            pgs_total=status.pgs_total if status else None, pg_states=status.pg_states if status else (),
            degraded_objects=status.degraded_objects if status else None,
            bytes_total=(status.bytes_total if status else None) or raw_total,
            bytes_used=(status.bytes_used if status else None) or raw_used,
            pools=pools, pool_warn_pct=self.settings.pool_warn_pct, parts_missing=missing,
            mon_addrs=self.mon_addrs or (), via=self.via)

    async def _read_metrics(self) -> CephHealth:
        from hpctui.sources.ceph.metrics import MetricsReader

        if self._metrics is None:
            self._metrics = MetricsReader(self.settings)
        reader = self._metrics
        assert isinstance(reader, MetricsReader)
        try:
            return await reader.read(self.name)
        except CephParseError as exc:
            raise CephError(str(exc)) from None


__all__ = ["COMMANDS", "ONCE", "CephError", "CephSource"]
