"""Parallel file systems as a client sees them: ``lfs df``, ``lfs quota``, ``beegfs-ctl --listtargets --state``
and ``beegfs-ctl --getquota`` (formats: FACTS §13; real recorded outputs in tests/fixtures/lustre and
tests/fixtures/beegfs). Pure functions of the text: every string from the node is sanitised, and a line
that does not parse costs that line only."""

from __future__ import annotations

import re

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.model.mount import FsTarget, QuotaUsage, TargetState

MAX_TARGETS = 4096  # targets kept per record (a big site has ~1000 OSTs; more is not a client's view)

# "snx11035-OST0006_UUID 90767651352 74730308892 15098973004  83% /scratch2[OST:6] [D]"
_DF_LINE = re.compile(r"^(?P<uuid>\S+?)_UUID\s+(?P<size>\d+)\s+(?P<used>\d+)\s+(?P<avail>\d+)\s+"
                      r"(?P<pct>\d{1,3})%\s+(?P<mnt>\S+?)\[(?P<kind>MDT|OST):(?P<idx>\d+)\](?:\s+(?P<flags>[A-Za-z]+))?\s*$")
# "snx11035-OST0003_UUID: inactive device" / "...: Resource temporarily unavailable" (lfs.c showdf)
_DF_ERR = re.compile(r"^(?P<uuid>\S+?)_UUID\s*:?\s+(?P<err>[A-Za-z].*)$")
_TARGET_NAME = re.compile(r"^(?P<fs>[A-Za-z0-9_.-]{1,64}?)-(?P<kind>MDT|OST)[0-9a-fA-F]{4,8}$")
_ERROR_FLAGS = frozenset("DRNSI")  # degraded, read-only, no-create, out of space, out of inodes


def parse_lfs_df(text: str) -> dict[str, list[FsTarget]]:
    """``lfs df`` → the targets of each mount point (the ``Mounted on`` column without ``[OST:n]``).

    A target line with usage is ACTIVE (DEGRADED with an error flag: D/R/N/S/I); ``<uuid>: inactive device``
    is INACTIVE; any other ``<uuid>: <error>`` is ERROR (the client could not reach it). Error lines carry no
    mount point: they belong to the mount of the block they appear in (the last one seen, else "")."""
    out: dict[str, list[FsTarget]] = {}
    mnt = ""
    pending: list[FsTarget] = []  # error lines seen before any target line of their block
    count = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(("UUID", "filesystem")):
            if line.startswith("filesystem"):  # "filesystem summary:" ends a block
                mnt = ""
            continue
        if count >= MAX_TARGETS:
            break
        m = _DF_LINE.match(line)
        if m:
            mnt = clean_text(m["mnt"])
            flags = m["flags"] or ""
            bad = "".join(f for f in flags if f in _ERROR_FLAGS)
            name = clean_text(m["uuid"])
            target = FsTarget(fs=_fsname(name), name=name, kind=m["kind"],
                              state=TargetState.DEGRADED if bad else TargetState.ACTIVE,
                              used_pct=float(min(int(m["pct"]), 100)), size_kib=int(m["size"]),
                              detail=f"flags {bad}" if bad else None)
            out.setdefault(mnt, []).extend(pending)
            pending = []
            out[mnt].append(target)
            count += 1
            continue
        e = _DF_ERR.match(line)
        if e:
            name = clean_text(e["uuid"])
            kind = _kind(name)
            if kind is None:
                continue
            err = clean_text(e["err"].strip())[:200]
            state = TargetState.INACTIVE if err.lower().startswith("inactive") else TargetState.ERROR
            target = FsTarget(fs=_fsname(name), name=name, kind=kind, state=state, detail=err)
            if mnt:
                out[mnt].append(target)
            else:
                pending.append(target)
            count += 1
    if pending:
        out.setdefault("", []).extend(pending)
    return out


def _kind(name: str) -> str | None:
    m = _TARGET_NAME.match(name)
    return m["kind"] if m else None


def _fsname(name: str) -> str:
    m = _TARGET_NAME.match(name)
    return m["fs"] if m else name.split("-", 1)[0]


_BEE_REACH = {"online": TargetState.ACTIVE, "offline": TargetState.OFFLINE, "probably-offline": TargetState.OFFLINE}


def parse_beegfs_targets(text: str, kind: str = "storage") -> list[FsTarget]:
    """``beegfs-ctl --listtargets --nodetype=<kind> --state`` → targets (``TargetID Reachability Consistency
    NodeID``). Offline / Probably-offline → OFFLINE; Online but Needs-resync / Bad → DEGRADED."""
    out: list[FsTarget] = []
    for raw in text.splitlines():
        parts = raw.split()
        if len(parts) < 4 or not is_uint(parts[0]) or len(out) >= MAX_TARGETS:
            continue
        tid, reach, consistency, node = parts[0], parts[1], parts[2], " ".join(parts[3:])
        state = _BEE_REACH.get(reach.lower())
        if state is None:
            continue
        if state is TargetState.ACTIVE and consistency.lower() != "good":
            state = TargetState.DEGRADED
        out.append(FsTarget(fs="beegfs", name=f"{kind}:{tid}", kind=kind, state=state,
                            detail=clean_text(f"{reach} {consistency} on node {node}")[:200]))
    return out


# ---------------------------------------------------------------- quotas

_UNITS = {"": 1024.0, "k": 1024.0, "m": 1024.0**2, "g": 1024.0**3, "t": 1024.0**4, "p": 1024.0**5, "e": 1024.0**6}
_QUOTA_TITLE = re.compile(r"^Disk quotas for usr (?P<user>\S+) \(uid [^)]*\):")
_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>[kKmMgGtTpPeE]?)$")


def _lfs_size(tok: str) -> tuple[float | None, bool]:
    """An ``lfs quota`` size (KiB by default, ``-h`` units k/M/G/T/P/E): (bytes or None, starred)."""
    star = tok.endswith("*")
    tok = tok.rstrip("*")
    if tok.startswith("[") and tok.endswith("]"):
        return None, star  # not valid: a target did not report
    m = _SIZE.match(tok)
    if not m:
        return None, star
    return float(m["n"]) * _UNITS[m["u"].lower()], star


def _lfs_count(tok: str) -> tuple[int | None, bool]:
    star = tok.endswith("*")
    tok = tok.rstrip("*")
    if tok.endswith("k") and tok[:-1].isdigit():  # -h prints file counts like 352k
        return int(tok[:-1]) * 1000, star
    return (int(tok), star) if is_uint(tok) else (None, star)


def parse_lfs_quota(text: str) -> list[QuotaUsage]:
    """``lfs quota -u USER [-h] MNT`` → one usage per ``Disk quotas for usr`` block (columns: Filesystem
    used/kbytes quota limit grace files quota limit grace; 2.17 names them bquota/blimit/...). The mount
    point may be alone on a line when it is long (the numbers follow on the next line)."""
    out: list[QuotaUsage] = []
    user: str | None = None
    carry: list[str] = []
    for raw in text.splitlines():
        t = _QUOTA_TITLE.match(raw.strip())
        if t:
            user, carry = clean_text(t["user"]), []
            continue
        parts = raw.split()
        if user is None or not parts or parts[0] in ("Filesystem", "uid", "gid", "prj"):
            continue
        parts = carry + parts
        if len(parts) == 1:
            carry = parts  # a long mount point alone on its line
            continue
        carry = []
        q = _quota_row(user, parts)
        if q is not None:
            out.append(q)
    return out


def _quota_row(user: str, parts: list[str]) -> QuotaUsage | None:
    if len(parts) < 8:
        return None
    used, s1 = _lfs_size(parts[1])
    soft, _ = _lfs_size(parts[2])
    hard, _ = _lfs_size(parts[3])
    grace = parts[4]
    files, s2 = _lfs_count(parts[5])
    fsoft, _ = _lfs_count(parts[6])
    fhard, _ = _lfs_count(parts[7])
    over = s1 or s2 or (used is not None and bool(hard) and used >= (hard or 0))
    return QuotaUsage(user=user, filesystem=clean_text(parts[0])[:200], used_bytes=used, soft_bytes=soft,
                      hard_bytes=hard, files=files, files_soft=fsoft, files_hard=fhard, over=over,
                      grace=None if grace == "-" else clean_text(grace)[:40])


_BEE_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[KMGTPE]i?B|B|Byte)?$")
_BEE_UNITS = {"B": 1.0, "Byte": 1.0, "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3, "TiB": 1024.0**4,
              "PiB": 1024.0**5, "EiB": 1024.0**6}
_BEE_POOL = re.compile(r"^Quota information for storage pool (?P<pool>.+?) \(ID: \d+\):")


def _bee_size(tok: str) -> float | None:
    m = _BEE_SIZE.match(tok.strip())
    if not m:
        return None
    return float(m["n"]) * _BEE_UNITS.get(m["u"] or "B", 1.0)


def parse_beegfs_quota(text: str) -> list[QuotaUsage]:
    """``beegfs-ctl --getquota --uid USER`` → one usage per user row and storage pool (columns
    ``name|id||used|hard||files used|files hard``; ``unlimited`` = no limit)."""
    out: list[QuotaUsage] = []
    pool = "default"
    for raw in text.splitlines():
        p = _BEE_POOL.match(raw.strip())
        if p:
            pool = clean_text(p["pool"])[:80]
            continue
        if "||" not in raw or raw.strip().startswith(("user/group", "name")):
            continue
        cells = [c.strip() for c in raw.replace("||", "|").split("|")]
        if len(cells) < 6 or not is_uint(cells[1]):
            continue
        used, hard = _bee_size(cells[2]), _bee_size(cells[3])
        files = int(cells[4]) if is_uint(cells[4]) else None
        fhard = int(cells[5]) if is_uint(cells[5]) else None
        over = (used is not None and bool(hard) and used >= (hard or 0)) or \
            (files is not None and bool(fhard) and files >= (fhard or 0))
        out.append(QuotaUsage(user=clean_text(cells[0])[:64], filesystem=f"beegfs pool {pool}", used_bytes=used,
                              hard_bytes=hard, files=files, files_hard=fhard, over=over))
    return out


# ``lctl get_param osc.*.ost_server_uuid mdc.*.mds_server_uuid``: one line per import of this client,
# "<device>.<param>=<target>_UUID\t<STATE>[\tDEACTIVATED]" (lustre/obdclass/lprocfs_status.c
# lprocfs_server_uuid_seq_show; lctl's "name=value" in lustre/utils/lustre_param.c print_param_internal).
# The device is "<fs>-OST0003-osc-ffff88090509f000" (one per mount instance: a file system mounted twice has
# two imports of each target, and the worse one counts).
_IMPORT_LINE = re.compile(r"^(?:osc|mdc)\.(?P<dev>[^=\s]{1,160})\.(?:ost|mds)_server_uuid="
                          r"(?P<uuid>[^\s]{1,120}?)_UUID\s+(?P<state>[A-Z_<>]{1,16})(?P<flags>(?:\s+[A-Z]{1,16})*)\s*$")
# The import states (lustre/include/lustre_import.h ptlrpc_import_state_name), as what a client can do: FULL
# and IDLE (idle-disconnected on purpose, reconnects on the next RPC) serve I/O; the REPLAY*/RECOVER states are
# the server in recovery after a restart (I/O waits until it ends); the others cannot reach the target.
_IMPORT_STATE = {"FULL": TargetState.ACTIVE, "IDLE": TargetState.ACTIVE,
                 "REPLAY": TargetState.DEGRADED, "REPLAY_LOCKS": TargetState.DEGRADED,
                 "REPLAY_WAIT": TargetState.DEGRADED, "RECOVER": TargetState.DEGRADED,
                 "DISCONN": TargetState.ERROR, "CONNECTING": TargetState.ERROR, "EVICTED": TargetState.ERROR,
                 "CLOSED": TargetState.ERROR, "NEW": TargetState.ERROR}
_STATE_RANK = {TargetState.ACTIVE: 0, TargetState.DEGRADED: 1, TargetState.INACTIVE: 2, TargetState.ERROR: 3,
               TargetState.OFFLINE: 3}


def parse_lctl_imports(text: str) -> dict[tuple[str, str], tuple[TargetState, str]]:
    """``lctl get_param osc.*.ost_server_uuid mdc.*.mds_server_uuid`` → (fs, target) → (state, detail) for
    every import this client holds. ``DEACTIVATED`` (``lctl --device … deactivate``, or a target marked
    inactive by the MGS) is INACTIVE whatever the connection state; an unknown state word is ERROR with the
    word in the detail. Of two imports of one target (a file system mounted twice) the worse is kept. A line
    that does not parse costs that line; at most MAX_TARGETS imports are kept."""
    out: dict[tuple[str, str], tuple[TargetState, str]] = {}
    for raw in text.splitlines():
        m = _IMPORT_LINE.match(raw.strip())
        if m is None:
            continue
        name = clean_text(m["uuid"])
        kind = _kind(name)
        if kind is None:
            continue
        word = m["state"]
        state = _IMPORT_STATE.get(word, TargetState.ERROR)
        detail = f"import {clean_text(word)}"
        if "DEACTIVATED" in m["flags"].split():
            state, detail = TargetState.INACTIVE, f"import {clean_text(word)}, deactivated"
        elif state is TargetState.DEGRADED:
            detail += ": the server is in recovery"
        key = (_fsname(name), name)
        old = out.get(key)
        if old is None and len(out) >= MAX_TARGETS:
            break
        if old is None or _STATE_RANK[state] > _STATE_RANK[old[0]]:
            out[key] = (state, detail)
    return out


def lustre_fsname(source: str) -> str | None:
    """The file system name of a Lustre mount's source (``10.1.0.1@o2ib:10.1.0.2@o2ib:/scratch`` → ``scratch``;
    ``mgs@tcp:/scratch/sub`` — a subdirectory mount — → ``scratch``), None if it has none."""
    if ":/" not in source:
        return None
    name = source.rsplit(":/", 1)[1].split("/", 1)[0]
    return name if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) else None


def with_imports(targets: tuple[FsTarget, ...], fs: str | None,
                 imports: dict[tuple[str, str], tuple[TargetState, str]]) -> tuple[FsTarget, ...]:
    """``targets`` (``lfs df`` of one Lustre mount) with this client's import states over them: an import that
    is not serving I/O makes its target that state (the worse of the two wins; usage is kept). Targets of
    ``fs`` that only the imports know (``lfs df`` not read yet, or hung on that very target — lctl reads
    procfs and never blocks) are added without usage. The very same tuple when nothing changes."""
    if not imports or fs is None:
        return targets
    out = list(targets)
    changed = False
    known = set()
    for i, t in enumerate(targets):
        known.add(t.name)
        imp = imports.get((t.fs, t.name)) if t.fs == fs else None
        if imp is not None and _STATE_RANK[imp[0]] > _STATE_RANK[t.state]:
            out[i] = FsTarget(fs=t.fs, name=t.name, kind=t.kind, state=imp[0], used_pct=t.used_pct,
                              size_kib=t.size_kib, detail=imp[1])
            changed = True
    for (ifs, name), (state, detail) in sorted(imports.items()):
        if ifs == fs and name not in known and len(out) < MAX_TARGETS:
            out.append(FsTarget(fs=ifs, name=name, kind=_kind(name) or "OST", state=state,
                                detail=detail if state is not TargetState.ACTIVE else None))
            changed = True
    return tuple(out) if changed else targets
