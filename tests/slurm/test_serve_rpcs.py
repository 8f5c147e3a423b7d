"""Issue #23 §3 on the real bed: ``hpctui serve`` with N open tabs costs slurmctld what one costs.

The real ``hpctui serve`` (the cli backend, a 2 s refresh) against the bed, with 1 and then 10
websocket sessions (each one app process, as a browser tab); slurmctld's own count of our RPCs
(sdiag's "Remote Procedure Call statistics by user", the row of the user we run as) over a window
of refreshes. With the shared collector (the default) 10 tabs send what 1 sends; with
``[serve] shared_collector = false`` (each tab polls, as before) 3 tabs send about 3 times as much,
which shows the count measures something. The numbers are printed for the closing note
(``-s`` shows them).

The window is wall time (refreshes are): the bounds are wide (1.5× and 2×), not timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from slurm_helpers import settings
from slurmlab import SlurmLab

from hpctui.sources.slurm.parse.diag import parse_sdiag_text

pytestmark = [pytest.mark.live, pytest.mark.slurm, pytest.mark.slurm_versions("22.05", "24.11")]
ROOT = Path(__file__).resolve().parents[2]
INTERVAL_S = 2.0
WARMUP_S = 8.0
WINDOW_S = 30.0  # 15 refreshes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def our_rpcs(lab: SlurmLab) -> int:
    """slurmctld's count of RPCs from the user we run as (sdiag's by-user table; sdiag's own included)."""
    stats = parse_sdiag_text(lab.run("sdiag").stdout).stats
    assert stats is not None and stats.rpc_by_user, "sdiag shows RPCs by user"
    me = getpass.getuser()
    return next((r.count for r in stats.rpc_by_user if r.name == me), 0)


def config(lab: SlurmLab, tmp_path: Path, *, shared: bool) -> Path:
    s = settings(lab, "cli")
    bin_dir = f', bin_dir = "{s.bin_dir}"' if s.bin_dir else ""
    path = tmp_path / f"serve-{shared}.toml"
    path.write_text(f'audit_log = "{tmp_path / "audit.jsonl"}"\n[clusters.lab]\n'
                    f'sources = [{{ kind = "slurm", backend = "cli", slurm_conf = "{s.slurm_conf}"{bin_dir}, '
                    f'interval_s = {INTERVAL_S} }}]\n'
                    f"[serve]\nmax_sessions = 12\nshared_collector = {str(shared).lower()}\n")
    return path


async def tabs_open(port: int, n: int, seconds: float, lab: SlurmLab) -> int:
    """``n`` websocket sessions open; our RPCs over ``seconds`` after a warm-up."""
    own = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as client:
        sockets = [await client.ws_connect(f"ws://127.0.0.1:{port}/ws", origin=own, max_msg_size=0) for _ in range(n)]

        async def drain(ws: aiohttp.ClientWebSocketResponse) -> None:
            with contextlib.suppress(Exception):
                async for _ in ws:
                    pass

        readers = [asyncio.create_task(drain(ws)) for ws in sockets]
        await asyncio.sleep(WARMUP_S)
        before = await asyncio.to_thread(our_rpcs, lab)
        await asyncio.sleep(seconds)
        after = await asyncio.to_thread(our_rpcs, lab)
        for ws in sockets:
            await ws.close()
        for task in readers:
            task.cancel()
    return after - before - 1  # the second sdiag's own RPC


def rpcs_per_refresh(lab: SlurmLab, tmp_path: Path, *, sessions: int, shared: bool) -> float:
    port = free_port()
    runtime_dir = tmp_path / f"run-{sessions}-{shared}"
    runtime_dir.mkdir(mode=0o700)
    env = {**lab.env, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_RUNTIME_DIR": str(runtime_dir), "PYTHONPATH": str(ROOT)}
    log = (tmp_path / f"serve-{sessions}-{shared}.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "hpctui", "serve", "--config", str(config(lab, tmp_path, shared=shared)),
                               "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert server.poll() is None and time.monotonic() < deadline, "hpctui serve did not listen"
            time.sleep(0.2)
        rpcs = asyncio.run(tabs_open(port, sessions, WINDOW_S, lab))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
    per_refresh = rpcs / (WINDOW_S / INTERVAL_S)
    print(f"\n[serve rpcs] slurm {lab.version} {'shared' if shared else 'per-tab'} × {sessions}: "
          f"{rpcs} RPCs in {WINDOW_S:.0f} s = {per_refresh:.1f} per {INTERVAL_S:.0f} s refresh", file=sys.stderr)
    return per_refresh


def test_ten_tabs_cost_slurmctld_what_one_costs(lab: SlurmLab, tmp_path: Path) -> None:
    """One tab, then ten on the shared collector: the same RPCs a refresh. The control (three tabs with
    ``shared_collector = false``, each polling on its own) shows the count tells the two apart; one tab
    costs the same either way (one collector), so the one-tab window serves both comparisons."""
    one = rpcs_per_refresh(lab, tmp_path, sessions=1, shared=True)
    ten = rpcs_per_refresh(lab, tmp_path, sessions=10, shared=True)
    assert one >= 2, f"the refresh sends RPCs ({one:.1f} per refresh): the count is of the right user"
    assert ten <= 1.5 * one, f"10 tabs: {ten:.1f} RPCs per refresh, 1 tab: {one:.1f}"
    three = rpcs_per_refresh(lab, tmp_path, sessions=3, shared=False)
    assert three >= 2 * one, f"3 tabs polling on their own: {three:.1f} RPCs per refresh, 1 tab: {one:.1f}"
