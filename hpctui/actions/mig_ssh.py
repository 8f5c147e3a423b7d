"""MIG apply on a Slurm/SSH node: nvidia-smi over the SSH source's connection (FACTS §2).

Before changing anything it reads the node's own ``nvidia-smi mig -lgip`` (the profile ids and
counts of *this* GPU; the layout must fit it) and each GPU's MIG mode; then per GPU: mode change
(``-mig 1``/``-mig 0``) with the GPU reset it needs, destroy compute then GPU instances, create
the GPU instances with their default compute instances (``-cgi … -C``). The first failing
command stops that node: "apply failed on GPU N: <command>: <nvidia-smi's words>".
``read_mig`` (the verify step) reads ``--query-gpu=index,mig.mode.current`` and ``mig -lgi``.
The SSH user must be allowed to run these (root on the node).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hpctui.base.sanitize import clean_text
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.model.mig_layouts import (
    TABLES,
    LayoutError,
    apply_commands,
    check_profiles,
    family,
    gpus_from_params,
    layout_from_params,
    parse_lgip,
)

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.ssh.source import SshSource

COMMAND_TIMEOUT_S = 120.0  # a GPU reset takes seconds; a hung nvidia-smi must not hold the wizard forever
MODE_QUERY = "nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader"


def _preamble(source: SshSource) -> str:
    """PATH/shim setup the probe uses too (ProbeOptions.path_prepend / shim_root: containers, test beds)."""
    opts = source.settings.probe
    out = ""
    if opts.shim_root:
        from hpctui.sources.ssh.probe.script import _SHIM

        out += _SHIM.replace("@SHIMROOT@", shlex.quote(opts.shim_root))  # a multi-line sh script
    if opts.path_prepend:
        out += "PATH=" + ":".join(shlex.quote(p) for p in opts.path_prepend) + ":$PATH; export PATH; "
    return out


class MigSshBackend:
    """ActionBackend for MIG_RECONFIGURE over an SSH source's connections."""

    def __init__(self, source: SshSource) -> None:
        self.source = source
        self.name = f"{source.name}-mig"
        self.progress: list[str] = []

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.MIG_RECONFIGURE})

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        layout = layout_from_params(params)
        names: list[str] = []
        errors: list[str] = []
        rejected: list[str] = []
        commands: list[str] = []
        for t in dict.fromkeys(targets):
            gpus = snapshot.gpus.get(t, ())
            if not gpus:
                rejected.append(t)
                errors.append(f"{t}: no GPUs known (no probe reading from this node yet)")
                continue
            fam = family(gpus[0].model)
            if layout.enabled and fam is not None:
                problems = check_profiles(layout.name, layout.profiles, TABLES[fam], fam)
                if problems:
                    rejected.append(t)
                    errors.extend(f"{t}: {p}" for p in problems)
                    continue
            try:
                idx = gpus_from_params(params, len(gpus))
            except LayoutError as exc:
                rejected.append(t)
                errors.append(f"{t}: {exc}")
                continue
            names.append(t)
            change = [g.index for g in gpus if g.index in idx and bool(g.mig_mode_current) != layout.enabled]
            commands.append(f"ssh {t} nvidia-smi mig -lgip   (profile ids of this GPU)")
            commands += [f"ssh {t} {c}" for c in apply_commands(idx, layout.enabled, layout.profiles, change)]
        return ActionPlan(kind=kind, source=self.name, targets=tuple(names), params=params,
                          commands=tuple(commands), errors=tuple(errors), rejected_targets=tuple(rejected),
                          notes=("the GPU's own `nvidia-smi mig -lgip` list is read first; the mode is read again "
                                 "before a reset",))

    # -- running ---------------------------------------------------------------------------------
    async def _connect(self, node: str) -> Any:
        src = self.source
        if src.pool is None:
            from hpctui.sources.ssh.pool import SshPool

            src.pool = SshPool(src.settings, src.resolver)
        target = await asyncio.to_thread(src.resolver.resolve, node)
        return await src.pool.connect(target)

    async def _run(self, conn: Any, command: str) -> tuple[int, str]:
        proc = await asyncio.wait_for(conn.run(_preamble(self.source) + command, check=False),
                                      timeout=COMMAND_TIMEOUT_S)
        text = (str(proc.stdout or "") + str(proc.stderr or "")).strip()
        return int(proc.exit_status if proc.exit_status is not None else 255), text

    async def _modes(self, conn: Any) -> dict[int, bool]:
        rc, text = await self._run(conn, MODE_QUERY)
        out: dict[int, bool] = {}
        if rc != 0:
            return out
        for line in text.splitlines():
            idx, _, mode = line.partition(",")
            if idx.strip().isdigit():
                out[int(idx)] = mode.strip() == "Enabled"
        return out

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        self.progress = []
        results = []
        for node in plan.targets:
            try:
                results.append(await self._apply(plan.params, node))
            except (TimeoutError, OSError) as exc:
                results.append(TargetResult(target=node, ok=False, message=f"apply failed: ssh: {exc or type(exc).__name__}"))
            except Exception as exc:  # asyncssh errors: one line, the node fails, the others go on
                results.append(TargetResult(target=node, ok=False, message=f"apply failed: {type(exc).__name__}: {exc}"))
        return tuple(results)

    async def _apply(self, params: Mapping[str, str], node: str) -> TargetResult:
        layout = layout_from_params(params)
        conn = await self._connect(node)
        try:
            rc, text = await self._run(conn, "nvidia-smi mig -lgip")
            tables = parse_lgip(text) if rc == 0 else {}
            modes = await self._modes(conn)
            gpus = gpus_from_params(params, len(modes) or max(tables, default=-1) + 1)
            done: list[str] = []
            for i in gpus:
                ids: dict[str, int] = {}
                if layout.enabled:
                    table = tables.get(i)
                    if table:
                        problems = check_profiles(layout.name, layout.profiles, table, f"GPU {i}'s -lgip list")
                        if problems:
                            return TargetResult(target=node, ok=False, message=f"apply failed on GPU {i}: "
                                                + "; ".join(problems))
                        ids = {p: v.lgip_id for p, v in table.items() if v.lgip_id is not None}
                change = [i] if modes.get(i, False) != layout.enabled else []
                for cmd in apply_commands([i], layout.enabled, layout.profiles, change, ids):
                    rc, out = await self._run(conn, cmd)
                    self.progress.append(clean_text(f"{node}: $ {cmd} → {rc}"))
                    nothing_there = cmd.endswith(("-dci", "-dgi")) and "Not Found" in out
                    if rc != 0 and not nothing_there:
                        first = clean_text(out.splitlines()[0] if out else f"exit status {rc}")
                        return TargetResult(target=node, ok=False, message=f"apply failed on GPU {i}: {cmd}: {first}")
                done.append(str(i))
            return TargetResult(target=node, ok=True, message=f"GPU(s) {','.join(done)} → {layout.name} "
                                                              f"({layout.summary()})")
        finally:
            conn.close()

    async def read_mig(self, node: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        """What the node says now, per GPU: (MIG on, sorted GPU-instance profiles)."""
        from hpctui.sources.ssh.probe.parse_gpu import parse_mig_lgi

        conn = await self._connect(node)
        try:
            modes = await self._modes(conn)
            rc, text = await self._run(conn, "nvidia-smi mig -lgi")
            rows = parse_mig_lgi(text) if rc == 0 else []
        finally:
            conn.close()
        out: dict[int, tuple[bool, tuple[str, ...]]] = {}
        for i, on in modes.items():
            out[i] = (on, tuple(sorted(r.profile for r in rows if r.gpu == i)) if on else ())
        return out
