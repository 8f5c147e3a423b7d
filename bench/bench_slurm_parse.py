"""parse_jobs_json / parse_nodes_json vs json.loads on synthetic v0.0.38 ``squeue/sinfo --json``.

Usage: python bench/bench_slurm_parse.py [N_JOBS] [N_NODES] [--variants a,b,...] [--code DIR ...]
(defaults 100000, 16384, all variants; ``--code`` runs the variants against the ``hpctui`` package
of another checkout too, e.g. ``git archive main | tar -x -C /tmp/main``, in the same run: before
and after on the same machine state)

Variants: ``msgspec`` (the whole document in memory, parse_jobs_json), ``stall`` (the same in a
thread), ``stream`` (JobsStream fed 1 MiB pieces, as the CLI backend reads squeue's pipe),
``stream-steady`` (a second read of the same queue: unchanged jobs reused), ``stream-churn`` (a
second read where ~1% of the jobs changed state: they are decoded again), ``stream-stall``
(pieces fed through worker threads from the event loop), ``json`` (json.loads, for scale).
Each variant runs in a fresh subprocess so peak RSS (ru_maxrss) is its own; ``stall`` runs
the parse in a thread under asyncio and reports the event loop's longest gap.

The synthetic queue varies like a real one so that value caches do not flatter the
numbers: every job id is distinct, ~400 users, a few hundred node lists with matching
gres_detail, array tasks and pending array remainders, ~10% finished jobs (22.05's squeue
--json ignores ``-t``), distinct names and times. Output is deterministic (seeded).
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CODE = ROOT  # whose hpctui the variants import (--code)
FIXTURES = ROOT / "tests" / "fixtures" / "slurm"

_STATES = (
    ["PENDING"] * 55
    + ["RUNNING"] * 33
    + ["COMPLETING", "CONFIGURING", "SUSPENDED"]
    + ["COMPLETED"] * 4
    + ["FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"]
)
_REASONS = ("Priority", "Resources", "Dependency", "QOSMaxGRESPerUser", "AssocGrpGRES", "BeginTime")
_PARTS = ("gpu", "gpu-long", "gpu-short", "cpu", "debug", "interactive", "a100", "h100")
_QOS = ("normal", "high", "low", "scavenger", "debug")


def _node_lists(rng: random.Random, n: int) -> list[tuple[str, int]]:
    """``n`` distinct (hostlist expression, node count) pairs over a 2048-node cluster."""
    out: dict[str, int] = {}
    while len(out) < n:
        start = rng.randrange(1, 2040)
        width = rng.choice((1, 1, 1, 2, 4, 8))
        if width == 1:
            out[f"gpu{start:04d}"] = 1
        elif rng.random() < 0.7:
            out[f"gpu[{start:04d}-{start + width - 1:04d}]"] = width
        else:
            a, b = start, start + width + rng.randrange(2, 9)
            out[f"gpu[{a:04d}-{a + width - 2:04d},{b:04d}]"] = width
    return list(out.items())


def _job(rng: random.Random, i: int, tmpl: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    j = dict(tmpl)
    job_id = 1_000_000 + i
    state = rng.choice(_STATES)
    gpn = rng.choice((1, 2, 4, 8))
    j.update(
        job_id=job_id,
        job_state=state,
        user_name=rng.choice(ctx["users"]),
        account=rng.choice(ctx["accounts"]),
        partition=rng.choice(_PARTS),
        qos=rng.choice(_QOS),
        name=rng.choice(ctx["names"]) if rng.random() < 0.7 else f"sweep-{i}",
        submit_time=1795900000 + i * 3,
        priority=rng.randrange(1000, 100000),
        time_limit=rng.choice((30, 60, 240, 720, 1440, 2880, 4294967294)),
        tres_per_node=f"gres:gpu:h100:{gpn}" if rng.random() < 0.8 else "",
        tres_per_job="",
        exit_code=rng.choice((0, 0, 0, 256, 9, 768)),
        restart_cnt=rng.choice((0, 0, 0, 1, 2)),
        array_job_id=0,
        array_task_id=None,
        array_task_string="",
        state_description="",
    )
    if rng.random() < 0.25:  # array task, or the pending remainder of an array
        base = 900_000 + rng.randrange(2000)
        j["array_job_id"] = base
        if state == "PENDING" and rng.random() < 0.3:
            lo = rng.randrange(100)
            j["array_task_string"] = f"{lo}-{lo + rng.randrange(5, 500)}%{rng.choice((2, 4, 10))}"
        else:
            j["array_task_id"] = rng.randrange(1000)
    if state == "PENDING":
        j.update(
            nodes="",
            node_count=rng.choice((1, 1, 2, 4)),
            gres_detail=[],
            start_time=0,
            end_time=0,
            state_reason=rng.choice(_REASONS),
        )
        if rng.random() < 0.05:
            j["state_description"] = f"ReqNodeNotAvail, UnavailableNodes:gpu[{rng.randrange(1, 900):04d}]"
    else:
        nodes, count = rng.choice(ctx["node_lists"])
        start = j["submit_time"] + rng.randrange(0, 86400)
        j.update(
            nodes=nodes,
            node_count=count,
            state_reason="None",
            start_time=start,
            end_time=start + 720 * 60,
            gres_detail=[rng.choice(ctx["gres_detail"][gpn]) for _ in range(count)],
        )
    j["tres_req_str"] = (
        f"cpu={8 * gpn * j['node_count']},mem={64 * gpn}G,node={j['node_count']},billing={8 * gpn},gres/gpu={gpn * j['node_count']}"
    )
    j["tres_alloc_str"] = j["tres_req_str"] if state != "PENDING" else ""
    return j


def build(n: int, out: Path, seed: int = 1) -> None:
    """A ``squeue --json`` (v0.0.38) of ``n`` varied jobs, templated on the 22.05 sample."""
    rng = random.Random(seed)
    doc = json.loads((FIXTURES / "cli_squeue.json").read_bytes())
    templates = doc["jobs"]
    ctx = {
        "users": [f"user{k:03d}" for k in range(400)],
        "accounts": [f"proj{k:02d}" for k in range(60)],
        "names": [f"train-{k}" for k in range(3000)],
        "node_lists": _node_lists(rng, 400),
        "gres_detail": {
            g: [f"gpu:h100:{g}(IDX:{s}-{s + g - 1})" if g > 1 else f"gpu:h100:1(IDX:{s})" for s in range(9 - g)]
            for g in (1, 2, 4, 8)
        },
    }
    # Slurm's own layout: pretty, two spaces per level, "/" escaped (as 22.05 prints it)
    head = json.dumps({"meta": doc["meta"], "errors": []}, indent=2)[:-2].replace("/", "\\/")
    with out.open("w") as f:
        f.write(head + ',\n  "jobs": [\n')
        for i in range(n):
            if i:
                f.write(",\n")
            job = json.dumps(_job(rng, i, templates[i % len(templates)], ctx), indent=2)
            f.write(_indent(job.replace("/", "\\/"), "    "))
        f.write("\n  ]\n}")


def _indent(text: str, pad: str) -> str:
    return pad + text.replace("\n", "\n" + pad)


def build_nodes(n: int, out: Path) -> None:
    """A ``sinfo --json`` of ``n`` nodes: the 22.05 sample's nodes replicated under new names."""
    doc = json.loads((FIXTURES / "cli_sinfo.json").read_bytes())
    samples = doc["nodes"]
    head = json.dumps({"meta": doc["meta"], "errors": []})[:-1]
    with out.open("w") as f:
        f.write(head + ', "nodes": [')
        for i in range(n):
            if i:
                f.write(",")
            node = dict(samples[i % len(samples)])
            node["name"] = node["hostname"] = node["address"] = f"node{i:05d}"
            f.write(json.dumps(node))
        f.write("]}")


CHUNK = 1 << 20  # what the CLI backend reads from squeue's pipe at a time


def run_stream(variant: str, path: str) -> None:
    """The streaming reader as the CLI backend runs it: the document arrives in 1 MiB pieces
    (read from the file here, from squeue's pipe in the app) and is never whole in memory."""
    sys.path.insert(0, str(CODE))
    import asyncio

    from hpctui.sources.slurm.parse.jobs_stream import JobReuse, JobsStream

    def pieces(churn: bool = False) -> list[bytes] | Any:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                # ~1% of the jobs (3 of ~270 per MiB) change state; same length, other bytes
                yield chunk.replace(b'"job_state": "PENDING"', b'"job_state": "RUNNING"', 3) if churn else chunk

    reuse = JobReuse()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if variant == "stream-stall":
        async def work() -> int:
            stream = JobsStream(reuse)
            for chunk in pieces():
                await asyncio.to_thread(stream.feed, chunk)
            return len(await asyncio.to_thread(stream.finish))

        for what in ("first read", "repeat read"):
            took, worst, over, n = _with_loop_gaps(work)
            print(f"{variant:12s} {n:6d} kept  {took:6.2f} s, {what} fed from the loop; longest event-loop gap "
                  f"{worst * 1000:.0f} ms, {over} gaps over 50 ms")
        return
    passes = 1 if variant == "stream" else 2
    for k in range(passes):
        hits0, total0 = reuse.hits, reuse.hits + reuse.misses
        t0, c0 = time.perf_counter(), time.process_time()
        stream = JobsStream(reuse)
        for chunk in pieces(churn=k == 1 and variant == "stream-churn"):
            stream.feed(chunk)
        n = len(stream.finish())
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{variant:12s} {n:6d} kept  {dt:6.2f} s (CPU {cpu:.2f} s)  peak RSS {rss / 1024:5.0f} MB "
          f"(before: {rss0 / 1024:.0f} MB)"
          + (f"; {reuse.hits - hits0} of {reuse.hits + reuse.misses - total0} jobs reused" if passes > 1 else ""))


def run(variant: str, path: str) -> None:
    if variant.startswith("stream"):
        run_stream(variant, path)
        return
    data = Path(path).read_bytes()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.path.insert(0, str(CODE))
    from hpctui.sources.slurm.parse import parse_jobs_json, parse_nodes_json

    if variant == "stall":
        _stall(data, parse_jobs_json)
        return
    t0, c0 = time.perf_counter(), time.process_time()
    if variant == "json":
        n = len(json.loads(data)["jobs"])
    elif variant == "json-nodes":
        n = len(json.loads(data)["nodes"])
    elif variant == "nodes":
        n = len(parse_nodes_json(data))
    else:
        n = len(parse_jobs_json(data))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{variant:10s} {n:6d} kept  {dt:6.2f} s (CPU {cpu:.2f} s)  peak RSS {rss / 1024:5.0f} MB (after file read: {rss0 / 1024:.0f} MB)"
    )


def _with_loop_gaps(work: Callable[[], Awaitable[int]]) -> tuple[float, float, int, int]:
    """Run ``work`` (which parses off the loop) under asyncio with a 5 ms ticker beside it:
    (seconds, longest event-loop gap, gaps over 50 ms, jobs kept)."""
    import asyncio

    async def go() -> tuple[float, float, int, int]:
        gaps: list[float] = []
        done = False

        async def ticker() -> None:
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last - 0.005)
                last = now

        tick = asyncio.create_task(ticker())
        t0 = time.perf_counter()
        n = await work()
        took = time.perf_counter() - t0
        done = True
        await tick
        return took, max(gaps, default=0.0), sum(g > 0.05 for g in gaps), n

    return asyncio.run(go())


def _stall(data: bytes, parse: Any) -> None:
    """The event loop's longest gap while the parse runs in a thread, as the Slurm source ran it
    before streaming (``asyncio.to_thread`` on the whole document)."""
    import asyncio

    async def work() -> int:
        return len(await asyncio.to_thread(parse, data))

    took, worst, over, n = _with_loop_gaps(work)
    print(f"stall      {n:6d} kept  {took:6.2f} s in a thread; longest event-loop gap {worst * 1000:.0f} ms, "
          f"{over} gaps over 50 ms")


VARIANTS = ("msgspec", "stall", "stream", "stream-steady", "stream-churn", "stream-stall", "json")


def main() -> None:
    global CODE
    if len(sys.argv) == 5 and sys.argv[1] == "--run":
        CODE = Path(sys.argv[4])
        run(sys.argv[2], sys.argv[3])
        return
    args = sys.argv[1:]
    variants: tuple[str, ...] = VARIANTS
    codes = [ROOT]
    if "--variants" in args:
        i = args.index("--variants")
        variants = tuple(args[i + 1].split(","))
        del args[i:i + 2]
    while "--code" in args:
        i = args.index("--code")
        codes.insert(0, Path(args[i + 1]).resolve())
        del args[i:i + 2]
    n = int(args[0]) if args else 100_000
    n_nodes = int(args[1]) if len(args) > 1 else 16_384
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "squeue.json"
        build(n, path)
        print(f"synthetic squeue --json: {n} jobs, {path.stat().st_size / 1e6:.0f} MB")
        for variant in variants:
            for code in codes:
                if len(codes) > 1:
                    print(f"[{code}] ", end="", flush=True)
                subprocess.run([sys.executable, __file__, "--run", variant, str(path), str(code)], check=True)
        path.unlink()
        if n_nodes:
            npath = Path(tmp) / "sinfo.json"
            build_nodes(n_nodes, npath)
            print(f"synthetic sinfo --json: {n_nodes} nodes, {npath.stat().st_size / 1e6:.0f} MB")
            for variant in ("nodes", "json-nodes"):
                subprocess.run([sys.executable, __file__, "--run", variant, str(npath), str(ROOT)], check=True)


if __name__ == "__main__":
    main()
