"""REST/``--json`` documents → model, whole records compared; REST versions and errors.

Shapes from Slurm's OpenAPI plugins: v0.0.36–38 plain ints and state strings, v0.0.39+ number
wrappers ``{"set", "infinite", "number"}``, state arrays and exit-code objects; versions from
``meta.plugin`` (FACTS §7). The fast job converter is checked against its reference ``to_job``
on every recorded document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo
from hpctui.sources.slurm.parse import (
    SlurmParseError,
    detect_rest_version,
    fill_partitions,
    parse_diag_json,
    parse_jobs_json,
    parse_nodes_json,
    parse_partitions_json,
    parse_rest_errors,
    pick_rest_version,
)
from hpctui.sources.slurm.parse.errors import from_msgspec
from hpctui.sources.slurm.parse.jobs import LIVE_JOB_STATES, _jobs_decoder, pair_gres_detail, requested_gpus, to_job

FIX = Path(__file__).parent / "fixtures" / "slurm"
F = frozenset


def n(x: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": x}


UNSET = {"set": False, "infinite": False, "number": 0}
INF = {"set": True, "infinite": True, "number": 0}


def doc(key: str, items: list[dict[str, Any]], version: str | None = "v0.0.44", **extra: Any) -> bytes:
    meta = {"plugin": {"data_parser": f"data_parser/{version}"}} if version else {}
    return json.dumps({"meta": meta, "errors": [], key: items, **extra}).encode()


# -- jobs ----------------------------------------------------------------------------------------------
JOB_44 = {
    "job_id": 21, "job_state": ["RUNNING"], "array_job_id": n(20), "array_task_id": n(3), "array_task_string": "",
    "name": "train", "user_name": "alice", "account": "ml", "partition": "gpu", "qos": "high",
    "state_reason": "None", "state_description": "", "nodes": "gpu[01-02]", "node_count": n(2),
    "tres_per_node": "gres/gpu:h100:1", "tres_per_job": "", "tres_req_str": "cpu=16,gres/gpu=4",
    "gres_detail": ["gpu:h100:2(IDX:0-1)", "gpu:h100:2(IDX:4,6)"], "submit_time": n(1795972351),
    "start_time": n(1795972352), "end_time": n(1796015552), "time_limit": n(720),
    "exit_code": {"status": ["PENDING"], "return_code": n(0), "signal": {"id": UNSET, "name": ""}},
    "restart_cnt": n(1), "batch_flag": True, "requeue": False, "priority": n(11000),
}
JOB_44_MODEL = SlurmJob(
    job_id=21, array_job_id=20, array_task_id=3, name="train", user="alice", account="ml", partition="gpu",
    qos="high", state="RUNNING", nodes="gpu[01-02]", num_nodes=2, gpus_requested=4,
    gpus_alloc={"gpu01": "0-1", "gpu02": "4,6"}, submit_time=1795972351.0, start_time=1795972352.0,
    end_time=1796015552.0, time_limit_min=720, restart_count=1, batch=True, requeueable=False, priority=11000)

JOB_38 = {
    "job_id": 5, "job_state": "PENDING", "array_job_id": 0, "array_task_id": 4294967294, "name": "req",
    "user_name": "bob", "state_reason": "BeginTime", "state_description": "job requeued in held state",
    "node_count": 1, "tres_per_node": "gres:gpu:8", "submit_time": 1795972351, "start_time": 0, "end_time": 0,
    "time_limit": 4294967295, "exit_code": 256, "restart_cnt": 2, "priority": 0,
}
JOB_38_MODEL = SlurmJob(job_id=5, name="req", user="bob", state="PENDING", reason="job requeued in held state",
                        num_nodes=1, gpus_requested=8, submit_time=1795972351.0, exit_code=1, restart_count=2,
                        priority=0)


JOB_RECORDS: list[tuple[dict[str, Any], str, SlurmJob]] = [
    (JOB_44, "v0.0.44", JOB_44_MODEL),
    (JOB_38, "v0.0.38", JOB_38_MODEL),
    ({"job_id": 6, "job_state": "RUNNING", "node_count": 2, "tres_per_node": "gres:gpu:4", "tres_req_str": "cpu=2"},
     "v0.0.38", SlurmJob(job_id=6, state="RUNNING", num_nodes=2, gpus_requested=8)),
    ({"job_id": 7, "job_state": ["PENDING"], "array_job_id": n(6), "array_task_id": UNSET,
      "array_task_string": "2-5%2", "tres_per_job": "gres/gpu:3", "node_count": INF,
      "exit_code": {"status": ["SIGNALED"], "signal": {"id": n(9), "name": "KILL"}}},
     "v0.0.40", SlurmJob(job_id=7, array_job_id=6, array_task_str="2-5%2", state="PENDING", gpus_requested=3,
                         exit_signal=9)),
    ({"job_id": 8, "job_state": ["COMPLETED", "COMPLETING"], "exit_code": 9, "nodes": "",
      "gres_detail": ["gpu:1(IDX:0)"]},
     "v0.0.40", SlurmJob(job_id=8, state="COMPLETING", exit_signal=9)),
]


@pytest.mark.parametrize(("job", "version", "expected"), JOB_RECORDS)
def test_job_records(job: dict[str, Any], version: str, expected: SlurmJob) -> None:
    assert parse_jobs_json(doc("jobs", [job], version)) == (expected,)


def test_parsing_leaves_the_garbage_collector_as_it_was() -> None:
    import gc

    assert gc.isenabled()
    parse_jobs_json(doc("jobs", [JOB_44]))
    assert gc.isenabled(), "paused during the parse, enabled again after"
    gc.disable()
    try:
        parse_jobs_json(doc("jobs", [JOB_44]))
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(SlurmParseError):
        parse_jobs_json(b"{")
    assert gc.isenabled()


def test_finished_jobs_are_dropped_unless_asked() -> None:
    jobs = [{"job_id": i, "job_state": s} for i, s in enumerate(
        ["RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PENDING", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SUSPENDED", "REQUEUED", "CONFIGURING"])]
    live = parse_jobs_json(doc("jobs", jobs, "v0.0.38"))
    assert [j.state for j in live] == ["RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "CONFIGURING"]
    assert len(parse_jobs_json(doc("jobs", jobs, "v0.0.38"), include_finished=True)) == len(jobs)
    assert {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "RESIZING",
            "SIGNALING", "STAGE_OUT", "STOPPED"} == LIVE_JOB_STATES


def test_bad_node_list_drops_one_job_or_fails_the_document() -> None:
    data = doc("jobs", [{"job_id": 1, "job_state": "RUNNING", "nodes": "gpu[01-"},
                        {"job_id": 2, "job_state": "RUNNING", "nodes": "gpu01"}], "v0.0.38")
    dropped: list[str] = []
    assert [j.job_id for j in parse_jobs_json(data, on_invalid=dropped.append)] == [2]
    assert len(dropped) == 1 and "$.jobs[0].nodes" in dropped[0]
    with pytest.raises(SlurmParseError, match=r"slurm jobs JSON: .*\$\.jobs\[0\]\.nodes"):
        parse_jobs_json(data)


@pytest.mark.parametrize(("data", "words"), [
    (b"{", "slurm jobs JSON: invalid JSON"),
    (b'{"jobs": [{"job_state": "RUNNING"}]}', "slurm jobs JSON: missing field `job_id` at $.jobs[0]"),
    (doc("jobs", [], "v0.0.35"), "unsupported Slurm REST version v0.0.35"),
    (json.dumps({"errors": [{"error": "boom", "description": "controller down"}], "jobs": []}).encode(),
     "slurm jobs JSON: slurm reported boom: controller down"),
    (json.dumps({"meta": {"plugin": {"data_parser": "data_parser/v0.0.99"}}, "jobs": [{"job_id": 1}]}).encode(),
     "missing field `job_state` at $.jobs[0]"),  # a malformed job is reported before the version
])
def test_bad_job_documents(data: bytes, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_jobs_json(data)
    assert words in str(info.value)
    with pytest.raises(SlurmParseError):
        parse_jobs_json(doc("jobs", []), version="v0.0.1")


RECORDED_JOBS = [*sorted(p.name for p in FIX.glob("*jobs.json")), "cli_squeue.json", "rest_v0.0.38_job_1.json"]


@pytest.mark.parametrize("name", RECORDED_JOBS)
@pytest.mark.parametrize("include_finished", [False, True])
def test_fast_converter_equals_the_reference(name: str, include_finished: bool) -> None:
    """parse_jobs_json's inlined loop must give exactly what to_job gives, on every recorded document."""
    data = (FIX / name).read_bytes()
    reference = [to_job(j, f"$.jobs[{i}]") for i, j in enumerate(_jobs_decoder.decode(data).jobs)]
    if not include_finished:
        reference = [j for j in reference if j.state in LIVE_JOB_STATES]
    assert parse_jobs_json(data, include_finished=include_finished) == tuple(reference)
    assert reference, "the document has jobs"


def test_reference_converter_on_the_hand_written_jobs() -> None:
    for job, version, expected in JOB_RECORDS:
        (decoded,) = _jobs_decoder.decode(doc("jobs", [job], version)).jobs
        assert to_job(decoded, "$.jobs[0]") == expected
    (bad,) = _jobs_decoder.decode(doc("jobs", [{"job_id": 1, "job_state": "RUNNING", "nodes": "x[1-"}])).jobs
    with pytest.raises(SlurmParseError, match=r"at \$\.jobs\[0\]\.nodes"):
        to_job(bad, "$.jobs[0]")


@pytest.mark.parametrize(("args", "expected"), [
    (("cpu=8,gres/gpu=4", "gres:gpu:2", "gres:gpu:1", 3), 4),  # TRES total first
    ((None, "gres:gpu:2", "gres:gpu:1", 3), 2),  # then per job
    ((None, None, "gres:gpu:1", 3), 3),  # then per node × nodes
    ((None, None, "gres:gpu:2", None), 2),
    (("cpu=8", "", "", 2), None),
])
def test_requested_gpus(args: tuple[Any, ...], expected: int | None) -> None:
    assert requested_gpus(*args) == expected


@pytest.mark.parametrize(("nodes", "detail", "expected"), [
    ("gpu[01-02]", ["gpu:h100:2(IDX:0-1)", "gpu:h100:1(IDX:3)"], {"gpu01": "0-1", "gpu02": "3"}),
    ("gpu[01-02]", ["gpu:h100:0(IDX:N/A)", "gpu:h100:1(IDX:3)"], {"gpu02": "3"}),
    ("gpu01", ["gpu:1(IDX:0)", "gpu:1(IDX:1)"], {"gpu01": "0"}),
    (None, ["gpu:1(IDX:0)"], {}), ("gpu01", None, {}), ("gpu01", [], {}),
])
def test_pair_gres_detail(nodes: str | None, detail: list[str] | None, expected: dict[str, str]) -> None:
    assert pair_gres_detail(nodes, detail, "$.jobs[0]") == expected


def test_pair_gres_detail_bad_hostlist() -> None:
    with pytest.raises(SlurmParseError, match=r"at \$\.jobs\[4\]\.nodes"):
        pair_gres_detail("gpu[01-", ["gpu:1(IDX:0)"], "$.jobs[4]")


# -- nodes ---------------------------------------------------------------------------------------------
NODE_RECORDS: list[tuple[dict[str, Any], str, SlurmNodeInfo]] = [
    ({"name": "gpu01", "state": ["MIXED", "DRAIN"], "reason": "ECC", "reason_set_by_user": "root",
      "reason_changed_at": n(1795972353), "partitions": ["gpu", "debug"], "features": ["h100"],
      "active_features": ["h100", "ib"], "cpus": 64, "alloc_cpus": 8, "real_memory": 512000, "alloc_memory": 65536,
      "gres": "gpu:h100:8(S:0-1)", "gres_used": "gpu:h100:2(IDX:0-1)"}, "v0.0.44",
     SlurmNodeInfo(base_state="MIXED", flags=F({"DRAIN"}), reason="ECC", reason_user="root",
                   reason_time=1795972353.0, partitions=("gpu", "debug"), features=("h100", "ib"), cpus_total=64,
                   cpus_alloc=8, memory_total_mb=512000, memory_alloc_mb=65536, gpus_total=8, gpus_alloc=2,
                   gpu_type="h100", gres="gpu:h100:8(S:0-1)", gres_used="gpu:h100:2(IDX:0-1)")),
    ({"name": "gpu02", "state": "idle", "state_flags": ["DRAIN"], "reason": "", "reason_set_by_user": "",
      "reason_changed_at": 0, "partitions": "gpu,debug", "features": "a100,ib", "active_features": "",
      "cpus": 32, "real_memory": 0xFFFFFFFE, "gres": "", "gres_used": ""}, "v0.0.38",
     SlurmNodeInfo(base_state="IDLE", flags=F({"DRAIN"}), partitions=("gpu", "debug"), features=("a100", "ib"),
                   cpus_total=32, gpus_total=0, gpus_alloc=0)),
    ({"name": "cpu01", "state": "down*"}, "v0.0.36",
     SlurmNodeInfo(base_state="DOWN", flags=F({"NOT_RESPONDING"}))),
]


@pytest.mark.parametrize(("node", "version", "expected"), NODE_RECORDS)
def test_node_records(node: dict[str, Any], version: str, expected: SlurmNodeInfo) -> None:
    assert parse_nodes_json(doc("nodes", [node], version)) == {node["name"]: expected}


def test_nodes_share_parsed_values_but_keep_their_own() -> None:
    nodes = [{"name": f"gpu0{i}", "state": ["IDLE"], "gres": "gpu:h100:8", "gres_used": f"gpu:h100:{i}(IDX:0)",
              "partitions": ["gpu"], "reason_set_by_user": "root" if i == 2 else None} for i in (1, 2)]
    out = parse_nodes_json(doc("nodes", nodes))
    assert [(i.gpus_alloc, i.reason_user) for i in out.values()] == [(1, None), (2, "root")]


def test_bad_node_names() -> None:
    data = doc("nodes", [{"name": "bad name", "state": "IDLE"}, {"name": "ok1", "state": "IDLE"}], "v0.0.38")
    dropped: list[str] = []
    assert list(parse_nodes_json(data, on_invalid=dropped.append)) == ["ok1"]
    assert dropped == ["invalid node name 'bad name' at $.nodes[0]"]
    with pytest.raises(SlurmParseError, match=r"invalid node name 'bad name' at \$\.nodes\[0\]"):
        parse_nodes_json(data)
    with pytest.raises(SlurmParseError, match="slurm nodes JSON: missing field `state` at"):
        parse_nodes_json(doc("nodes", [{"name": "a"}]))


def test_partitions_and_fill() -> None:
    data = doc("partitions", [{"name": "gpu", "nodes": {"configured": "gpu[01-02]"}}, {"name": "debug",
                                                                                        "nodes": {"configured": ""}},
                              {"name": "all", "nodes": None}], "v0.0.40")
    assert parse_partitions_json(data) == {"gpu": ("gpu01", "gpu02"), "debug": (), "all": ()}
    old = doc("partitions", [{"name": "gpu", "nodes": "gpu[01-02]"}, {"name": "cpu", "nodes": "gpu02,cpu01"}],
              "v0.0.38")
    parts = parse_partitions_json(old)
    nodes = {"gpu01": SlurmNodeInfo(base_state="IDLE"), "gpu02": SlurmNodeInfo(base_state="IDLE"),
             "cpu09": SlurmNodeInfo(base_state="IDLE"), "x1": SlurmNodeInfo(base_state="IDLE", partitions=("own",))}
    filled = fill_partitions(nodes, parts | {"p": ("x1",)})
    assert {k: v.partitions for k, v in filled.items()} == {
        "gpu01": ("gpu",), "gpu02": ("gpu", "cpu"), "cpu09": (), "x1": ("own",)}
    with pytest.raises(SlurmParseError, match=r"at \$\.partitions\[0\]\.nodes"):
        parse_partitions_json(doc("partitions", [{"name": "gpu", "nodes": "gpu[01-"}], "v0.0.38"))


# -- diag ----------------------------------------------------------------------------------------------
def test_diag_errors_name_the_document() -> None:
    data = json.dumps({"meta": {"plugin": {"data_parser": "data_parser/v0.0.38"}}, "statistics": {}})
    with pytest.raises(SlurmParseError, match=r"unsupported Slurm REST version v0\.0\.1 "):
        parse_diag_json(data, version="v0.0.1")
    with pytest.raises(SlurmParseError, match=r"^slurm diag JSON: "):
        parse_diag_json("{}")


@pytest.mark.parametrize(("stats", "version", "expected"), [
    ({"server_thread_count": 4, "agent_queue_size": 1, "dbd_agent_queue_size": 7, "jobs_pending": 5,
      "jobs_running": 9, "bf_cycle_last": 250000, "schedule_cycle_mean": 819}, "v0.0.38",
     ControllerHealth(reachable=True, server_thread_count=4, agent_queue_size=1, jobs_pending=5, jobs_running=9,
                      last_backfill_cycle_s=0.25, mean_schedule_cycle_us=819.0,
                      detail="7 messages queued for slurmdbd")),
    ({"server_thread_count": n(3), "dbd_agent_queue_size": n(0), "bf_cycle_last": UNSET}, "v0.0.44",
     ControllerHealth(reachable=True, server_thread_count=3)),
    ({}, "v0.0.44", ControllerHealth(reachable=True)),
])
def test_diag_records(stats: dict[str, Any], version: str, expected: ControllerHealth) -> None:
    data = json.dumps({"meta": {"plugin": {"data_parser": f"data_parser/{version}"}}, "statistics": stats})
    got = parse_diag_json(data)
    # the summary fields; the full statistics (the :scheduler view's, tests/test_slurm_scheduler.py) ride along
    assert msgspec.structs.replace(got, stats=None) == expected
    assert got.stats is not None and got.stats.server_thread_count == expected.server_thread_count


# -- versions and errors -------------------------------------------------------------------------------
@pytest.mark.parametrize(("meta", "expected"), [
    ({"plugin": {"data_parser": "data_parser/v0.0.40"}}, "v0.0.40"),
    ({"plugin": {"type": "openapi/v0.0.38", "name": "REST v0.0.38"}}, "v0.0.38"),
    ({"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI v0.0.37"}}, "v0.0.37"),
    ({"plugin": {"type": "", "name": ""}}, None),
    ({"plugin": {}}, None), ({}, None), (None, None),
])
def test_detect_rest_version(meta: dict[str, Any] | None, expected: str | None) -> None:
    body: dict[str, Any] = {} if meta is None else {"meta": meta}
    assert detect_rest_version(json.dumps(body)) == expected
    assert detect_rest_version(body) == expected


@pytest.mark.parametrize("body", [{"meta": "x"}, {"meta": {"plugin": "x"}}, {"meta": {"plugin": {"type": 5}}}])
def test_detect_rest_version_of_odd_dicts(body: dict[str, Any]) -> None:
    assert detect_rest_version(body) is None


def test_detect_rest_version_of_garbage() -> None:
    with pytest.raises(SlurmParseError, match="cannot read REST version: invalid JSON"):
        detect_rest_version(b"<html>")


@pytest.mark.parametrize(("served", "expected"), [
    (["v0.0.38", "v0.0.37", "dbv0.0.38"], "v0.0.38"),
    (["openapi/v0.0.39", "openapi/v0.0.40", "v0.0.41"], "v0.0.41"),
    (["data_parser/v0.0.44", " v0.0.42 "], "v0.0.44"),
    (["v0.0.40", "v0.0.99"], "v0.0.40"),
])
def test_pick_rest_version(served: list[str], expected: str) -> None:
    assert pick_rest_version(served) == expected


def test_unsupported_version_lists_the_readable_ones() -> None:
    with pytest.raises(SlurmParseError, match=r"\(readable: v0\.0\.36, v0\.0\.37, v0\.0\.38, "):
        parse_nodes_json(doc("nodes", [], "v0.0.35"))


@pytest.mark.parametrize(("served", "words"), [
    ([], "served: none"), (["v0.0.35", "dbv0.0.38"], "served: v0.0.35, dbv0.0.38"),
])
def test_pick_rest_version_none_supported(served: list[str], words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        pick_rest_version(served)
    assert words in str(info.value) and "no supported Slurm REST version" in str(info.value)
    assert "supported: v0.0.38, v0.0.39, v0.0.40, " in str(info.value)


@pytest.mark.parametrize(("body", "expected"), [
    (json.dumps({"errors": [{"error": "Invalid job id specified", "description": "Unable to find JobId=99",
                             "source": "slurm_load_job"}]}),
     ["Invalid job id specified: Unable to find JobId=99 (slurm_load_job)"]),
    (json.dumps({"errors": [{"error": "boom"}, {"description": "only a description"}]}),
     ["boom", "only a description"]),
    (json.dumps({"errors": [{"error_number": 2017}]}), ["error 2017"]),
    (json.dumps({"errors": [{"error_code": 7, "source": "x"}]}), ["error 7 (x)"]),
    (json.dumps({"errors": [{}]}), ["error ?"]),
    (json.dumps({"errors": []}), []),
    (json.dumps({}), []),
    ("Authentication failure", ["Authentication failure"]),
    (b"  two\n  lines  ", ["two lines"]),
    ("", []),
    ("x" * 300, ["x" * 200]),
    (b"\xff\xfe bad gateway", ["\ufffd\ufffd bad gateway"]),
])
def test_parse_rest_errors(body: str | bytes, expected: list[str]) -> None:
    assert parse_rest_errors(body) == expected


class _Item(msgspec.Struct):
    a: int


class _Doc(msgspec.Struct):
    nodes: list[_Item]


def test_from_msgspec_keeps_the_path_on_one_line() -> None:
    try:
        msgspec.json.decode(b'{"nodes": [{"a": "x"}]}', type=_Doc)
    except msgspec.ValidationError as exc:
        err = from_msgspec("slurm nodes JSON", exc)
    assert str(err) == "slurm nodes JSON: Expected `int`, got `str` at $.nodes[0].a"
    try:
        msgspec.json.decode(b"{\n", type=_Doc)
    except msgspec.DecodeError as exc:
        err = from_msgspec("x", exc)
    assert str(err).startswith("x: invalid JSON (") and "\n" not in str(err)
    assert isinstance(err, ValueError)


RECORDED_NODES = [*sorted(p.name for p in FIX.glob("*nodes.json")), "cli_sinfo.json", "rest_v0.0.38_node_gpu01.json"]


@pytest.mark.parametrize("name", RECORDED_NODES)
def test_fast_node_converter_equals_the_reference(name: str) -> None:
    """parse_nodes_json's memoized converter must give exactly what node_info gives."""
    from hpctui.sources.slurm.parse.nodes import _nodes_decoder, node_info

    data = (FIX / name).read_bytes()
    reference = {n.name: node_info(n) for n in _nodes_decoder.decode(data).nodes}
    assert parse_nodes_json(data) == reference and reference


def test_reference_node_converter_on_the_hand_written_nodes() -> None:
    from hpctui.sources.slurm.parse.nodes import _nodes_decoder, node_info

    for node, version, expected in NODE_RECORDS:
        (decoded,) = _nodes_decoder.decode(doc("nodes", [node], version)).nodes
        assert node_info(decoded) == expected


@pytest.mark.parametrize(("parse", "key", "what"), [
    (parse_nodes_json, "nodes", "slurm nodes JSON"), (parse_partitions_json, "partitions", "slurm partitions JSON"),
])
def test_documents_with_slurm_errors_or_a_wrong_version(parse: Any, key: str, what: str) -> None:
    errs = json.dumps({"meta": {"plugin": {"data_parser": "data_parser/v0.0.40"}}, key: [],
                       "errors": [{"error": "a"}, {"error": "b", "description": "c"}]})
    with pytest.raises(SlurmParseError) as info:
        parse(errs)
    assert str(info.value) == f"{what}: slurm reported a; b: c"
    with pytest.raises(SlurmParseError, match=r"unsupported Slurm REST version v0\.0\.1 "):
        parse(doc(key, [], "v0.0.40"), version="v0.0.1")
    with pytest.raises(SlurmParseError, match=f"^{what}: invalid JSON"):
        parse(b"{")
