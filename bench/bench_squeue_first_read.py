"""The first read of a big queue by the Slurm CLI backend: ``squeue --json`` streamed vs the hybrid read.

Usage: python bench/bench_squeue_first_read.py [N_JOBS] [N_RUNNING] [--shapes v0.0.38,v0.0.42] [--repeat K]
(defaults 100000 jobs, 4096 of them running, both shapes, 3 runs per variant)

A generated queue (bench_slurm_parse's varied jobs: ~400 users, distinct ids and names, arrays,
node lists with matching gres_detail) is written three ways: the whole ``squeue --json``, the
``squeue --json -t RUNNING,...`` of its running jobs (what Slurm 24.05.1+ answers), and
``squeue -h -o SQUEUE_FORMAT`` text of the same jobs. A fake ``squeue`` on PATH prints the file
its arguments ask for, and :meth:`CliBackend.read_jobs` reads it through the real runner (pipe,
1 MiB pieces, worker threads) and parsers, in a fresh subprocess per run (a first read: no
JobReuse, no warm caches). Reported: wall time and this process's CPU time (user+sys, the fake
squeue's ``cat`` excluded), peak RSS, and a check that the hybrid's jobs are the JSON read's
(same ids; running jobs equal field by field).

Shapes: ``v0.0.38`` is 22.05's data_parser (~3.8 KB a job, the shape the issue's 1.83 s was
measured on); ``v0.0.42`` is 24.11's (~16 KB a job, number wrappers): the hybrid only runs
where ``squeue --json`` honours ``-t`` (24.05.1+), so that is the shape it meets in practice.
HOME and the XDG directories point into a temporary directory.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_slurm_parse as gen  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "slurm"
RUNNING_STATES = ("RUNNING",)


def _jobs(n: int, n_running: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` varied v0.0.38 jobs, exactly ``n_running`` of them RUNNING, the rest PENDING."""
    rng = random.Random(seed)
    doc = json.loads((FIX / "cli_squeue.json").read_bytes())
    tmpls = doc["jobs"]
    ctx = {
        "users": [f"user{k:03d}" for k in range(400)],
        "accounts": [f"proj{k:02d}" for k in range(60)],
        "names": [f"train-{k}" for k in range(3000)],
        "node_lists": gen._node_lists(rng, 400),
        "gres_detail": {
            g: [f"gpu:h100:{g}(IDX:{s}-{s + g - 1})" if g > 1 else f"gpu:h100:1(IDX:{s})" for s in range(9 - g)]
            for g in (1, 2, 4, 8)
        },
    }
    running = set(rng.sample(range(n), n_running))
    out = []
    for i in range(n):
        want_running = i in running
        while True:
            j = gen._job(rng, i, tmpls[i % len(tmpls)], ctx)
            if want_running and j["job_state"] not in ("PENDING",) and j["nodes"]:
                j["job_state"] = "RUNNING"
                break
            if not want_running and j["job_state"] == "PENDING":
                break
        if j["array_task_string"]:  # a pending remainder's record is its array's own id (job id == array job id)
            j["job_id"] = j["array_job_id"] = 2_000_000 + i
        out.append(j)
    return out


def _num(v: int | None, *, infinite: bool = False) -> dict[str, Any]:
    return {"set": v is not None, "infinite": infinite, "number": v or 0}


def _v42(j: dict[str, Any], tmpl: dict[str, Any]) -> dict[str, Any]:
    """The same job in 24.11's data_parser v0.0.42 shape, on a real 24.11 job record."""
    k = dict(tmpl)
    limit = j["time_limit"]
    code = j["exit_code"]
    k.update(
        job_id=j["job_id"], job_state=[j["job_state"]], name=j["name"], user_name=j["user_name"],
        account=j["account"], partition=j["partition"], qos=j["qos"], nodes=j["nodes"],
        node_count=_num(j["node_count"]), gres_detail=j["gres_detail"],
        array_job_id=_num(j["array_job_id"]), array_task_id=_num(j["array_task_id"]),
        array_task_string=j["array_task_string"],
        submit_time=_num(j["submit_time"]), start_time=_num(j["start_time"] or None),
        end_time=_num(j["end_time"] or None),
        time_limit=_num(None if limit >= 4294967294 else limit, infinite=limit >= 4294967294),
        exit_code={"status": ["SUCCESS" if code == 0 else "ERROR"], "return_code": _num(code >> 8),
                   "signal": {"id": _num(code & 0x7F if code & 0x7F else None), "name": ""}},
        restart_cnt=j["restart_cnt"], priority=_num(j["priority"]),
        tres_per_node=j["tres_per_node"].replace("gres:", "gres/", 1), tres_per_job="", tres_per_task="",
        tres_per_socket="", tres_req_str=j["tres_req_str"], state_reason=j["state_reason"],
        state_description=j["state_description"], batch_flag=True, requeue=True,
    )
    return k


def _when(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) if t else "N/A"


def _limit(minutes: int) -> str:
    if minutes >= 4294967294:
        return "UNLIMITED"
    d, rest = divmod(minutes, 1440)
    h, m = divmod(rest, 60)
    return (f"{d}-{h:02d}:{m:02d}:00" if d else f"{h}:{m:02d}:00") if h or d else f"{m}:00"


def _text_line(j: dict[str, Any], sep: str, tres_prefix: str) -> str:
    """The job as ``squeue -o SQUEUE_FORMAT`` prints it (times in UTC: the bench runs with TZ=UTC)."""
    arr = j["array_job_id"]
    task = j["array_task_string"] or ("" if j["array_task_id"] is None else str(j["array_task_id"]))
    disp = (f"{arr}_[{task}]" if j["array_task_string"] else f"{arr}_{task}") if arr else str(j["job_id"])
    reason = j["state_description"] or j["state_reason"]
    tres = j["tres_per_node"].replace("gres:", tres_prefix, 1) if j["tres_per_node"] else "N/A"
    cols = [disp, str(j["job_id"]), str(arr or j["job_id"]), task or "N/A", j["partition"], j["name"],
            j["user_name"], j["account"], j["qos"], j["job_state"], reason, "0:00", _limit(j["time_limit"]),
            str(j["node_count"]), str(8 * j["node_count"]), j["nodes"], tres, _when(j["start_time"]),
            _when(j["submit_time"]), str(j["priority"])]
    return sep.join(cols)


def write(jobs: list[dict[str, Any]], shape: str, out: Path) -> dict[str, int]:
    """full.json, subset.json (the running jobs) and queue.txt in ``out``; their sizes."""
    sys.path.insert(0, str(ROOT))
    from hpctui.sources.slurm.parse.text import SEP

    if shape == "v0.0.38":
        doc = json.loads((FIX / "cli_squeue.json").read_bytes())
        head = json.dumps({"meta": doc["meta"], "errors": []}, indent=2)[:-2].replace("/", "\\/") + ',\n  "jobs": [\n'
        tail = "\n  ]\n}"
        convert = lambda j, i: j  # noqa: E731
        tres_prefix = "gres:"
    else:
        doc = json.loads((FIX / "cli_24.11_squeue.json").read_bytes())
        tmpls = {"RUNNING": [t for t in doc["jobs"] if t["job_state"] == ["RUNNING"]],
                 "PENDING": [t for t in doc["jobs"] if t["job_state"] == ["PENDING"]]}
        rest = {k: v for k, v in doc.items() if k != "jobs"}
        head = '{\n  "jobs": [\n'
        tail = "\n  ],\n" + json.dumps(rest, indent=2)[2:]
        convert = lambda j, i: _v42(j, tmpls[j["job_state"]][i % len(tmpls[j["job_state"]])])  # noqa: E731
        tres_prefix = "gres/"
    sizes = {}
    for name, keep in (("full.json", lambda j: True), ("subset.json", lambda j: j["job_state"] in RUNNING_STATES)):
        with (out / name).open("w") as f:
            f.write(head)
            first = True
            for i, j in enumerate(jobs):
                if not keep(j):
                    continue
                if not first:
                    f.write(",\n")
                first = False
                f.write(gen._indent(json.dumps(convert(j, i), indent=2).replace("/", "\\/"), "    "))
            f.write(tail)
        sizes[name] = (out / name).stat().st_size
    with (out / "queue.txt").open("w") as f:
        for j in jobs:
            f.write(_text_line(j, SEP, tres_prefix) + "\n")
    sizes["queue.txt"] = (out / "queue.txt").stat().st_size
    return sizes


def fake_squeue(out: Path) -> Path:
    bin_dir = out / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    script.write_text(f"""#!/bin/sh
case "$*" in
  "--json -t "*) exec cat "{out}/subset.json" ;;
  "--json -j "*) exec cat "{out}/empty.json" ;;
  "--json") exec cat "{out}/full.json" ;;
  *) exec cat "{out}/queue.txt" ;;
esac
""")
    script.chmod(0o755)
    return bin_dir


def one_read(mode: str, bin_dir: str, dump: str) -> None:
    """In a fresh process: one CliBackend.read_jobs (a first read); print a JSON line of its cost."""
    import asyncio
    import pickle
    import resource

    from hpctui.sources.slurm.cli import CliBackend
    from hpctui.sources.slurm.runner import Runner

    cli = CliBackend(Runner(timeout_s=600, bin_dir=bin_dir), mode)  # type: ignore[arg-type]
    warnings: list[str] = []
    t0, c0 = time.perf_counter(), time.process_time()
    jobs = asyncio.run(cli.read_jobs(warnings))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1, c1 = time.perf_counter(), time.process_time()
    again = asyncio.run(cli.read_jobs([]))  # a repeat read of the unchanged queue (JobReuse / TextReuse)
    wall2, cpu2 = time.perf_counter() - t1, time.process_time() - c1
    assert again == jobs
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for line in Path("/proc/self/status").read_text().splitlines():  # ru_maxrss keeps the parent's over exec
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1]) / 1024
    if dump:
        Path(dump).write_bytes(pickle.dumps(jobs))
    print(json.dumps({"mode": mode, "wall": wall, "cpu": cpu, "wall2": wall2, "cpu2": cpu2, "rss": rss, "jobs": len(jobs),
                      "calls": len(cli.calls), "warnings": warnings}))


def _run(mode: str, bin_dir: Path, env: dict[str, str], dump: str = "") -> dict[str, Any]:
    res = subprocess.run([sys.executable, __file__, "--one", mode, str(bin_dir), dump], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _check(json_dump: Path, hybrid_dump: Path) -> str:
    import pickle

    a = {j.job_id: j for j in pickle.loads(json_dump.read_bytes())}
    b = {j.job_id: j for j in pickle.loads(hybrid_dump.read_bytes())}
    if a.keys() != b.keys():
        return f"DIFFERENT ids: {len(a.keys() - b.keys())} only in json, {len(b.keys() - a.keys())} only in hybrid"
    running = [k for k, j in a.items() if j.state == "RUNNING"]
    bad = [k for k in running if a[k] != b[k]]
    from hpctui.sources.slurm.parse.hybrid import JSON_ONLY_FIELDS

    fields = set(type(next(iter(a.values()))).__struct_fields__) - set(JSON_ONLY_FIELDS) - {"gpus_requested"}
    pending = [k for k, j in a.items() if j.state != "RUNNING"]
    pend_bad = [k for k in pending if any(getattr(a[k], f) != getattr(b[k], f) for f in fields)]
    gpus = [k for k in pending if a[k].gpus_requested != b[k].gpus_requested]
    gpus_none = all(b[k].gpus_requested is None for k in gpus)
    return (f"same {len(a)} ids; running {len(running) - len(bad)}/{len(running)} equal field by field; pending "
            f"{len(pending) - len(pend_bad)}/{len(pending)} equal but for the JSON-only fields and gpus_requested, "
            f"which differs for {len(gpus)} (no per-node request{': None in the hybrid' if gpus_none else ''})")


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--one":
        one_read(args[1], args[2], args[3] if len(args) > 3 else "")
        return
    shapes = ["v0.0.38", "v0.0.42"]
    repeat = 3
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = args[i + 1].split(",")
        del args[i:i + 2]
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i:i + 2]
    n = int(args[0]) if args else 100_000
    n_running = int(args[1]) if len(args) > 1 else 4096
    with tempfile.TemporaryDirectory(prefix="hpctui-bench-sq-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**os.environ, "TZ": "UTC", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_STATE_HOME": str(home / ".state"), "XDG_CACHE_HOME": str(home / ".cache"),
               "PYTHONPATH": str(ROOT)}
        os.environ["TZ"] = "UTC"
        time.tzset()
        t0 = time.perf_counter()
        jobs = _jobs(n, n_running)
        print(f"# {n} jobs, {n_running} running; generated in {time.perf_counter() - t0:.1f} s; "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("| shape | read | first read: wall s (min / median) | CPU s (min / median) | repeat read: wall s | CPU s "
              "| peak RSS MB | jobs | calls (both reads) | bytes read (one read) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for shape in shapes:
            out = Path(tmp) / shape
            out.mkdir()
            sizes = write(jobs, shape, out)
            (out / "empty.json").write_text('{"meta": {}, "errors": [], "jobs": []}')
            bin_dir = fake_squeue(out)
            read_bytes = {"json": sizes["full.json"], "hybrid": sizes["subset.json"] + sizes["queue.txt"]}
            dumps = {m: str(out / f"{m}.pickle") for m in ("json", "hybrid")}
            for mode in ("json", "hybrid"):
                runs = [_run(mode, bin_dir, env, dumps[mode] if k == 0 else "") for k in range(repeat)]
                walls = sorted(r["wall"] for r in runs)
                cpus = sorted(r["cpu"] for r in runs)
                r = runs[0]
                assert not r["warnings"], r["warnings"]
                print(f"| {shape} | {mode} | {walls[0]:.3f} / {walls[len(walls) // 2]:.3f} | "
                      f"{cpus[0]:.3f} / {cpus[len(cpus) // 2]:.3f} | {min(x['wall2'] for x in runs):.3f} | "
                      f"{min(x['cpu2'] for x in runs):.3f} | {max(x['rss'] for x in runs):.0f} | "
                      f"{r['jobs']} | {r['calls']} | {read_bytes[mode] / 1e6:.1f} MB |")
            print(f"#   {shape}: {_check(Path(dumps['json']), Path(dumps['hybrid']))}")
            for name in ("full.json", "subset.json"):
                (out / name).unlink()
        print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
