"""On-demand accounting view: fair-share (``sshare``), QoS limits and associations (``sacctmgr``).

Not part of the periodic refresh: the UI asks for it when a user or account is selected.
Always read with the CLI (whatever the refresh backend is), three calls run concurrently:

* ``sshare -P -l -a [-u USER] [-A ACCOUNT]`` - answered by slurmctld from its association cache;
* ``sacctmgr -P show qos format=...`` - answered by slurmdbd;
* ``sacctmgr -P show assoc where user=USER account=ACCOUNT format=...`` - slurmdbd, only when a
  user or an account is given (all associations of a big site is not "cheap").

Without accounting (``AccountingStorageType`` not slurmdbd) sacctmgr refuses ("You are not running
a supported accounting_storage plugin") and sshare prints only its header: the result is
``available=False`` with a ``detail`` saying why - never an exception. Names are validated before
they go into an argv: :func:`check_name` raises ``ValueError`` for anything odd.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable
from typing import TypeVar

from hpctui.model.accounting import AccountingInfo, Association, FairShare, QosLimits
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.backend import looks_unreachable
from hpctui.sources.slurm.runner import CommandError, Runner, RunResult

R = TypeVar("R")

QOS_FORMAT = "Name,Priority,MaxWall,MaxJobsPU,MaxSubmitPU,MaxTRESPU,MaxTRES,GrpTRES,MaxJobsPA"
ASSOC_FORMAT = "Cluster,Account,User,Partition,Share,QOS,DefaultQOS,MaxJobs,MaxSubmit,MaxTRES,GrpTRES,GrpJobs,MaxWall"

# POSIX-ish user names (plus '@' for directory users) and Slurm account names. The first
# character may not be '-' (it would read as an option); no ',' (a list), '=' or spaces
# (sacctmgr "where" syntax), no shell or glob characters.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")

_NOT_SLURMDBD = "not running a supported accounting_storage plugin"
_DB_DOWN = ("problem talking to the database", "unable to connect to database", "persistinit", "timed out")

ABSENT = "accounting is not enabled on this cluster (AccountingStorageType is not accounting_storage/slurmdbd)"


def check_name(value: str | None, what: str) -> str | None:
    """``value`` if it is a plausible Slurm user/account name (or None); else ``ValueError``."""
    if value is None:
        return None
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"invalid {what} name {value!r}: letters, digits, '_', '.', '-', '@' only, "
                         "not starting with '-', at most 64 characters")
    return value


def argvs(user: str | None, account: str | None) -> dict[str, list[str]]:
    """The commands one query runs (names must already be checked)."""
    share = ["sshare", "-P", "-l", "-a"]
    if user:
        share += ["-u", user]
    if account:
        share += ["-A", account]
    out = {"sshare": share, "qos": ["sacctmgr", "-P", "show", "qos", f"format={QOS_FORMAT}"]}
    if user or account:
        where = [f"user={user}"] * bool(user) + [f"account={account}"] * bool(account)
        out["assoc"] = ["sacctmgr", "-P", "show", "assoc", "where", *where, f"format={ASSOC_FORMAT}"]
    return out


async def _run(runner: Runner, argv: list[str]) -> RunResult | str:
    try:
        return await runner.run(argv)
    except CommandError as exc:
        return str(exc)


def _failure(res: RunResult | str) -> str | None:
    """None if the command succeeded, else one line of why."""
    if isinstance(res, str):
        return res
    if res.ok:
        return None
    return res.message or f"{res.argv[0]} exit status {res.rc}"


def _explain(tool: str, why: str) -> str:
    """sshare talks to slurmctld, sacctmgr to slurmdbd: name the daemon that did not answer."""
    low = why.lower()
    if tool.startswith("sacctmgr") and (looks_unreachable(why) or any(m in low for m in _DB_DOWN)):
        return f"slurmdbd unreachable ({tool}): {why}"
    if looks_unreachable(why):
        return f"slurmctld unreachable ({tool}): {why}"
    return f"{tool} failed: {why}"


async def query_accounting(runner: Runner, user: str | None = None, account: str | None = None,
                           *, notes: list[str] | None = None) -> AccountingInfo:
    """Run the accounting commands and map every failure to ``available=False`` / ``detail``."""
    user = check_name(user, "user")
    account = check_name(account, "account")
    cmds = argvs(user, account)
    loop = asyncio.get_running_loop()
    started = loop.time()
    keys = list(cmds)
    results = dict(zip(keys, await asyncio.gather(*(_run(runner, cmds[k]) for k in keys)), strict=True))
    took = loop.time() - started

    def result(available: bool, detail: str | None, fairshare: list[FairShare] | None = None,
               qos: list[QosLimits] | None = None, associations: list[Association] | None = None) -> AccountingInfo:
        return AccountingInfo(available=available, user=user, account=account, fairshare=fairshare or [],
                              qos=qos or [], associations=associations or [], detail=detail,
                              notes=list(notes or []), commands=[shlex.join(a) for a in cmds.values()],
                              duration_s=took)

    qos_fail = _failure(results["qos"])
    if qos_fail is not None and _NOT_SLURMDBD in qos_fail.lower():
        return result(False, ABSENT)

    problems: list[str] = []
    fairshare, share_fail = _parsed(results["sshare"], parse.parse_sshare_text, "sshare", "sshare", problems)
    qos, qos_fail = _parsed(results["qos"], parse.parse_sacctmgr_qos_text, "sacctmgr show qos", "sacctmgr qos",
                            problems)
    associations: list[Association] = []
    if "assoc" in results:
        assoc_problems: list[str] = []
        associations, assoc_fail = _parsed(results["assoc"], parse.parse_sacctmgr_assoc_text, "sacctmgr show assoc",
                                           "sacctmgr assoc", assoc_problems)
        if assoc_fail is None or qos_fail is None or assoc_fail != qos_fail:  # one line per slurmdbd outage
            problems.extend(assoc_problems)

    if share_fail is not None and qos_fail is not None:
        return result(False, "; ".join(problems))
    if share_fail is None and not fairshare and qos_fail is not None:
        # header-only sshare + no slurmdbd answer: nothing to show (accounting absent or down)
        return result(False, "; ".join(problems) or ABSENT)
    if (user or account) and share_fail is None and not any(
            (user is None or r.user == user) and (account is None or r.account == account) for r in fairshare):
        who = " in ".join(x for x in (f"user {user}" if user else "", f"account {account}" if account else "") if x)
        problems.append(f"no fair-share row for {who} (no such association?)")
    return result(True, "; ".join(problems) or None, fairshare, qos, associations)


def _parsed(res: RunResult | str, parser: Callable[[str], list[R]], tool: str, label: str,
            problems: list[str]) -> tuple[list[R], str | None]:
    """Rows of one command and why it failed (None if it worked); each failure adds one line."""
    fail = _failure(res)
    if fail is not None:
        problems.append(_explain(tool, fail))
        return [], fail
    try:
        return parser(_stdout(res)), None
    except parse.SlurmParseError as exc:
        problems.append(f"{label} output unreadable: {exc}")
        return [], str(exc)


def _stdout(res: RunResult | str) -> str:
    assert not isinstance(res, str)
    return res.stdout.decode(errors="replace")
