"""The MIG wizard over real sshd (tests/testbed/ssh) against the node shims' nvidia-smi, which keeps
MIG state (mode, reset, -cgi/-dci/-dgi, -lgi): the wizard reads the node's own `mig -lgip`, applies a
layout to two GPUs, verifies it with `mig -lgi`; an injected `-cgi` failure stops with the GPU named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sshbed import SshBed
from test_ssh_transport_live import settings_for

from hpctui.actions.audit import AuditLog
from hpctui.actions.mig import MigWorkflow, Status
from hpctui.core.runtime import Runtime
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims not present")

pytestmark = pytest.mark.live


async def _runtime(bed: SshBed, tmp_path: Path) -> Runtime:
    a, b = bed.nodes[0], bed.nodes[1]
    root = nodeshims.build_shim_root(tmp_path / "shims", {
        a.address: nodeshims.NodeSpec(variant="h100"),
        b.address: nodeshims.NodeSpec(variant="h100", faults={"mig-fail"})})
    opts = ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2)
    source = SshSource(settings_for(bed, nodes=f"{a.name},{b.name}", interval_s=1.0, stale_after_s=20.0,
                                    probe=opts))
    rt = Runtime("bed", [source], audit_path=tmp_path / "audit.jsonl")
    for _ in range(60):  # bounded rounds, not a timed assertion
        await rt.collect_once()
        gpus = rt.store.snapshot().gpus
        if len(gpus.get(a.name, ())) == 8 and len(gpus.get(b.name, ())) == 8:
            break
        await __import__("asyncio").sleep(0.5)
    return rt


async def test_wizard_applies_and_verifies_over_ssh(ssh_bed: SshBed, tmp_path: Path) -> None:
    rt = await _runtime(ssh_bed, tmp_path)
    a, b = ssh_bed.nodes[0].name, ssh_bed.nodes[1].name
    try:
        assert len(rt.store.snapshot().gpus[a]) == 8
        wf = MigWorkflow(rt, [a], "all-balanced", "2,3", poll_s=0.5, verify_timeout_s=60)
        assert wf.prepare(), wf.errors
        assert wf.routes[0].how == "ssh"
        assert wf.step("idle").status is Status.OK  # the shim's processes sit on GPUs 0 and 1
        preview = "\n".join(wf.preview())
        assert f"ssh {a} nvidia-smi -i 2 -mig 1" in preview and f"ssh {a} nvidia-smi -i 2 -r" in preview
        assert await wf.run(wf.confirm_word), [(s.key, s.status, s.detail) for s in wf.steps]
        assert wf.step("verify").status is Status.OK
        assert wf.step("gres").status is Status.SKIPPED  # not a Slurm node here
        backend = wf.routes[0].backend
        seen = await backend.read_mig(a)  # type: ignore[attr-defined]
        assert seen[2] == seen[3] == (True, ("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"))
        assert seen[0] == (False, ()) and seen[4] == (False, ())
        assert any("$ nvidia-smi mig -i 2 -cgi 9,14,19,19 -C → 0" in p for p in backend.progress)  # ids from -lgip

        # back to whole GPUs: CI, GI destroyed, mode off, reset
        wf2 = MigWorkflow(rt, [a], "all-disabled", "2,3", poll_s=0.5, verify_timeout_s=60)
        assert wf2.prepare() and await wf2.run(wf2.confirm_word)
        seen = await wf2.routes[0].backend.read_mig(a)  # type: ignore[attr-defined]
        assert seen[2] == seen[3] == (False, ())

        # a failing -cgi: the step names the GPU, the record says so
        wf3 = MigWorkflow(rt, [b], "all-7g", "3", poll_s=0.5, verify_timeout_s=60)
        assert wf3.prepare() and not await wf3.run(wf3.confirm_word)
        assert wf3.step("apply").status is Status.FAILED
        assert any("apply failed on GPU 3: nvidia-smi mig -i 3 -cgi 0 -C: Unable to create a GPU instance"
                   in line for line in wf3.step("apply").detail)
        records = AuditLog(tmp_path / "audit.jsonl").read()
        failed = [r for r in records if r["action"] == "mig_reconfigure" and r["source"] == "ssh-mig"
                  and not r["results"][0]["ok"]]
        assert failed and "Insufficient Resources" in failed[0]["results"][0]["message"]
    finally:
        await rt.stop()
        for s in rt.sources:
            await s.close()
