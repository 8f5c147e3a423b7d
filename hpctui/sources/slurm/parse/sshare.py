"""Fair-share (``sshare``), QoS limits and associations (``sacctmgr -P show qos|assoc``) → Structs.

``sshare -a`` prints fixed-width columns (the dashed ruler gives the column spans);
``sshare -a -P`` / ``-l -P`` print ``|``-separated columns. Both are read by header name,
so extra columns (GrpTRESMins, TRESRunMins, ...) are simply ignored. In the ``-P`` form the
Account column keeps its tree indentation (one leading space per level), like the ruler form.
"""

from __future__ import annotations

from hpctui.base.sanitize import clean_text
from hpctui.model.accounting import Association, FairShare, QosLimits
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.gres import gpus_from_tres_str
from hpctui.sources.slurm.parse.values import parse_duration_min, split_list, text, to_float, to_int


def _table(text_in: str, what: str) -> list[dict[str, str]]:
    lines = [ln for ln in text_in.splitlines() if ln.strip()]
    if not lines:
        return []
    if "|" in lines[0]:
        header = [h.strip() for h in lines[0].split("|")]
        rows = []
        for ln in lines[1:]:
            cols = ln.split("|")
            if len(cols) < len(header):
                raise SlurmParseError(f"{what}: row has {len(cols)} fields, header {len(header)}: {ln[:60]!r}")
            rows.append(dict(zip(header, cols, strict=False)))
        return rows
    if len(lines) < 2 or set(lines[1].strip()) - {"-", " "}:
        raise SlurmParseError(f"{what}: expected a header and a '----' ruler line")
    spans: list[tuple[int, int]] = []
    pos = 0
    for chunk in lines[1].split(" "):
        if chunk:
            spans.append((pos, pos + len(chunk)))
        pos += len(chunk) + 1
    header = [lines[0][a:b].strip() for a, b in spans]
    return [{h: ln[a:b] for h, (a, b) in zip(header, spans, strict=True)} for ln in lines[2:]]


def parse_sshare_text(text_in: str) -> list[FairShare]:
    """``sshare -a`` / ``sshare -a -P`` / ``-l`` → FairShare rows in tree order."""
    out = []
    for row in _table(text_in, "sshare"):
        raw_account = row.get("Account", "")
        account = raw_account.strip()
        if not account:
            raise SlurmParseError(f"sshare: row without Account: {row!r}")
        out.append(
            FairShare(
                account=clean_text(account),
                user=text(row.get("User")),
                raw_shares=to_int(row.get("RawShares")),
                norm_shares=to_float(row.get("NormShares")),
                raw_usage=to_int(row.get("RawUsage")),
                effective_usage=to_float(row.get("EffectvUsage")),
                fairshare=to_float(row.get("FairShare")),
                depth=len(raw_account) - len(raw_account.lstrip(" ")),
                norm_usage=to_float(row.get("NormUsage")),
                level_fs=to_float(row.get("LevelFS")),
            )
        )
    return out


def parse_sacctmgr_qos_text(text_in: str) -> list[QosLimits]:
    """``sacctmgr -P show qos [format=...]`` → QosLimits (columns matched by header)."""
    out = []
    for row in _table(text_in, "sacctmgr qos"):
        name = text(row.get("Name"))
        if name is None:
            raise SlurmParseError(f"sacctmgr qos: row without Name: {row!r}")
        tres_pu = text(row.get("MaxTRESPU"))
        out.append(
            QosLimits(
                name=name,
                priority=to_int(row.get("Priority")),
                max_wall_min=parse_duration_min(row.get("MaxWall")),
                max_jobs_per_user=to_int(row.get("MaxJobsPU")),
                max_submit_per_user=to_int(row.get("MaxSubmitPU")),
                max_tres_per_user=tres_pu,
                max_gpus_per_user=gpus_from_tres_str(tres_pu),
                max_tres_per_job=text(row.get("MaxTRES")),
                grp_tres=text(row.get("GrpTRES")),
                max_jobs_per_account=to_int(row.get("MaxJobsPA")),
            )
        )
    return out


def parse_sacctmgr_assoc_text(text_in: str) -> list[Association]:
    """``sacctmgr -P show assoc [where ...] format=...`` (with its header) → Associations."""
    out = []
    for row in _table(text_in, "sacctmgr assoc"):
        account = text(row.get("Account"))
        if account is None:
            raise SlurmParseError(f"sacctmgr assoc: row without Account: {row!r}")
        out.append(
            Association(
                account=account,
                user=text(row.get("User")),
                cluster=text(row.get("Cluster")),
                partition=text(row.get("Partition")),
                share=text(row.get("Share")),
                qos=split_list(row.get("QOS")),
                default_qos=text(row.get("Def QOS")),
                max_jobs=to_int(row.get("MaxJobs")),
                max_submit=to_int(row.get("MaxSubmit")),
                max_tres=text(row.get("MaxTRES")),
                grp_tres=text(row.get("GrpTRES")),
                grp_jobs=to_int(row.get("GrpJobs")),
                max_wall_min=parse_duration_min(row.get("MaxWall")),
            )
        )
    return out
