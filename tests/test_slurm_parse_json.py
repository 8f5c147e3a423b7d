"""JSON parsers against the real 22.05 captures and the synthesized v0.0.40/44 documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpctui.model.hostlist import collect, expand
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

FIX = Path(__file__).parent / "fixtures" / "slurm"


def raw(name: str) -> bytes:
    return (FIX / name).read_bytes()


@pytest.mark.parametrize("name", ["cli_sinfo.json", "rest_v0.0.37_nodes.json", "rest_v0.0.38_nodes.json"])
def test_nodes_22_05_drain_states_reasons_gpus(name: str) -> None:
    nodes = parse_nodes_json(raw(name))
    assert sorted(nodes) == ["cpu01", "cpu02", "cpu03", "cpu04", "gpu01", "gpu02", "gpu03", "gpu04"]
    g1 = nodes["gpu01"]
    assert (g1.base_state, g1.flags, g1.display_state) == ("MIXED", frozenset({"DRAIN"}), "DRAINING")
    assert (g1.reason, g1.reason_user, g1.reason_time) == ("ECC errors on GPU3", "root", 1795972353.0)
    assert (g1.gpu_type, g1.gpus_total, g1.gpus_alloc) == ("h100", 8, 2)
    assert (g1.cpus_total, g1.cpus_alloc, g1.memory_total_mb, g1.memory_alloc_mb) == (64, 8, 512000, 65536)
    assert g1.partitions == ("gpu", "debug") and g1.features == ("h100", "ib")
    assert nodes["gpu04"].display_state == "DRAINED" and nodes["gpu04"].reason == "waiting for RMA"
    assert nodes["gpu04"].gpus_alloc == 0 and nodes["gpu03"].gpus_alloc == 4
    assert nodes["cpu04"].display_state == "DOWN" and nodes["cpu04"].reason == "PSU failure"
    cpu = nodes["cpu01"]
    assert (cpu.gpus_total, cpu.gpus_alloc, cpu.gpu_type, cpu.reason, cpu.reason_time) == (0, 0, None, None, None)


def test_nodes_v0036_lacks_flags_alloc_and_partitions() -> None:
    nodes = parse_nodes_json(raw("rest_v0.0.36_nodes.json"))
    g1 = nodes["gpu01"]
    # v0.0.36 has no state_flags: the drain is invisible there (only the reason remains).
    assert (g1.base_state, g1.flags, g1.reason) == ("ALLOCATED", frozenset(), "ECC errors on GPU3")
    assert g1.cpus_alloc is None and g1.memory_alloc_mb is None and g1.partitions == ()
    filled = fill_partitions(nodes, parse_partitions_json(raw("rest_v0.0.38_partitions.json")))
    assert filled["gpu01"].partitions == ("gpu", "debug") and filled["cpu04"].partitions == ("cpu", "debug")


def test_single_node_endpoint_reports_what_slurm_sent() -> None:
    # 22.05 GET node/gpu01 really says partitions ["cpu","debug"] for gpu01 (controller bug);
    # the parser reflects the document — backends should prefer the list endpoints.
    node = parse_nodes_json(raw("rest_v0.0.38_node_gpu01.json"))["gpu01"]
    assert node.partitions == ("cpu", "debug") and node.display_state == "DRAINING"


@pytest.mark.parametrize(
    "name", ["cli_squeue.json", "rest_v0.0.36_jobs.json", "rest_v0.0.37_jobs.json", "rest_v0.0.38_jobs.json"]
)
def test_jobs_22_05(name: str) -> None:
    jobs = {j.job_id: j for j in parse_jobs_json(raw(name))}
    # FAILED 13, COMPLETED 14, CANCELLED 15 are dropped; 14 live jobs stay.
    assert sorted(jobs) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]
    j1 = jobs[1]
    assert (j1.name, j1.state, j1.reason, j1.qos, j1.partition) == ("train-llm", "RUNNING", None, "high", "gpu")
    assert j1.gpus_alloc == {"gpu01": "0-1"} and j1.gpus_requested == 2
    assert (j1.time_limit_min, j1.start_time, j1.exit_code, j1.exit_signal) == (720, 1795972353.0, 0, None)
    assert (j1.array_job_id, j1.array_task_id, j1.batch, j1.requeueable, j1.priority) == (None, None, True, True, 11000)
    assert jobs[2].gpus_alloc == {"gpu03": "0-3"}
    assert jobs[3].nodes == "cpu[02-03]" and jobs[3].num_nodes == 2 and jobs[3].gpus_requested is None
    assert (jobs[5].state, jobs[5].reason, jobs[5].restart_count) == ("PENDING", "BeginTime", 1)
    assert jobs[6].reason == "ReqNodeNotAvail, UnavailableNodes:gpu[01,04]" and jobs[6].gpus_requested == 16
    assert jobs[6].start_time is None and jobs[6].nodes is None
    assert jobs[7].reason == "JobHeldUser" and jobs[7].priority == 0
    assert jobs[12].reason == "QOSMaxJobsPerUserLimit"
    assert (jobs[16].array_job_id, jobs[16].array_task_id, jobs[16].display_id) == (9, 0, "9_0")
    assert (jobs[9].array_job_id, jobs[9].array_task_id, jobs[9].array_task_str) == (9, None, "2-5%2")
    assert jobs[9].display_id == "9_[2-5%2]"


def test_v0036_empty_user_name_is_none() -> None:
    assert all(j.user is None for j in parse_jobs_json(raw("rest_v0.0.36_jobs.json")))


def test_finished_jobs_kept_on_request_and_exit_decoded() -> None:
    jobs = {j.job_id: j for j in parse_jobs_json(raw("cli_squeue.json"), include_finished=True)}
    assert (jobs[13].state, jobs[13].exit_code, jobs[13].exit_signal) == ("FAILED", 3, None)  # raw 768
    assert jobs[15].state == "CANCELLED"


def test_single_job_document() -> None:
    (job,) = parse_jobs_json(raw("rest_v0.0.38_job_1.json"))
    assert job.job_id == 1 and job.gpus_alloc == {"gpu01": "0-1"}


@pytest.mark.parametrize("version", ["v0.0.40", "v0.0.44"])
def test_synth_newer_versions(version: str) -> None:
    nodes = parse_nodes_json(raw(f"synth_rest_{version}_nodes.json"))
    assert nodes["gpu01"].display_state == "DRAINING" and nodes["gpu01"].reason_time == 1795972353.0
    assert nodes["gpu01"].gpus_total == 8 and nodes["gpu01"].gpus_alloc == 2
    assert nodes["gpu04"].display_state == "DRAINED"
    g5 = nodes["gpu05"]
    assert g5.base_state == "DOWN" and g5.flags == {"NOT_RESPONDING", "REBOOT_REQUESTED"}
    assert nodes["cpu01"].reason is None and nodes["cpu01"].reason_time is None and nodes["cpu01"].gpus_total == 0
    jobs = {j.job_id: j for j in parse_jobs_json(raw(f"synth_rest_{version}_jobs.json"))}
    assert sorted(jobs) == [1, 5, 9, 16]  # 13 FAILED dropped
    assert jobs[1].gpus_alloc == {"gpu01": "0-1", "gpu02": "4,6"} and jobs[1].gpus_requested == 4
    assert jobs[1].exit_code is None and jobs[1].array_job_id is None and jobs[1].time_limit_min == 720
    assert jobs[9].array_task_str == "2-5%2" and jobs[9].time_limit_min is None and jobs[9].start_time is None
    assert (jobs[16].state, jobs[16].exit_code, jobs[16].exit_signal, jobs[16].array_task_id) == ("COMPLETING", None, 9, 0)
    assert (jobs[5].state, jobs[5].gpus_requested, jobs[5].restart_count) == ("REQUEUED", 1, 1)
    health = parse_diag_json(raw(f"synth_rest_{version}_diag.json"))
    assert (health.server_thread_count, health.jobs_running, health.last_backfill_cycle_s) == (4, 9, 0.25)
    assert health.detail == "7 messages queued for slurmdbd"
    assert detect_rest_version(raw(f"synth_rest_{version}_jobs.json")) == version


def test_diag_22_05() -> None:
    h = parse_diag_json(raw("rest_v0.0.38_diag.json"))
    assert (h.reachable, h.server_thread_count, h.agent_queue_size, h.jobs_pending, h.jobs_running) == (True, 3, 0, 5, 0)
    assert h.mean_schedule_cycle_us == 819.0 and h.last_backfill_cycle_s == pytest.approx(133e-6)


def test_partitions() -> None:
    parts = parse_partitions_json(raw("rest_v0.0.38_partitions.json"))
    assert parts["debug"] == tuple(expand("cpu[01-04],gpu[01-04]"))
    assert parse_partitions_json(raw("rest_v0.0.38_partition_gpu.json")) == {"gpu": tuple(expand("gpu[01-04]"))}
    newer = {"meta": {"plugin": {"data_parser": "data_parser/v0.0.41"}}, "errors": [],
             "partitions": [{"name": "gpu", "nodes": {"configured": "gpu[01-02]", "total": 2}}]}
    assert parse_partitions_json(json.dumps(newer).encode()) == {"gpu": ("gpu01", "gpu02")}


def test_versions() -> None:
    assert detect_rest_version(raw("cli_squeue.json")) == "v0.0.38"
    assert detect_rest_version(raw("rest_v0.0.36_nodes.json")) == "v0.0.36"
    assert detect_rest_version(json.loads(raw("rest_v0.0.37_nodes.json"))) == "v0.0.37"
    assert detect_rest_version(b'{"nodes": []}') is None
    assert pick_rest_version(["openapi/v0.0.36", "openapi/v0.0.37", "openapi/v0.0.38", "dbv0.0.38"]) == "v0.0.38"
    assert pick_rest_version(["v0.0.42", "v0.0.45", "v0.0.44", "v0.0.43"]) == "v0.0.44"
    with pytest.raises(SlurmParseError, match=r"served: v0.0.36, v0.0.37"):
        pick_rest_version(["v0.0.36", "v0.0.37"])


def test_http_500_body() -> None:
    body = raw("rest_v0.0.38_job_unknown_http500.json")
    assert parse_rest_errors(body) == ["Invalid job id specified: Unable to find JobId=999999 (slurm_load_job)"]
    with pytest.raises(SlurmParseError, match="Invalid job id specified"):
        parse_jobs_json(body)
    assert parse_rest_errors(b"Authentication failure") == ["Authentication failure"]
    assert parse_rest_errors(raw("cli_squeue.json")) == []


def test_malformed_inputs() -> None:
    data = raw("cli_sinfo.json")
    with pytest.raises(SlurmParseError, match="invalid JSON"):
        parse_nodes_json(data[: len(data) // 2])
    with pytest.raises(SlurmParseError, match="invalid JSON"):
        parse_jobs_json(b"")
    doc = json.loads(data)
    del doc["nodes"][3]["state"]
    with pytest.raises(SlurmParseError, match=r"missing field `state` at \$\.nodes\[3\]"):
        parse_nodes_json(json.dumps(doc).encode())
    doc = json.loads(raw("cli_squeue.json"))
    doc["jobs"][2]["job_id"] = "three"
    with pytest.raises(SlurmParseError, match=r"\$\.jobs\[2\]\.job_id"):
        parse_jobs_json(json.dumps(doc).encode())
    with pytest.raises(SlurmParseError, match="missing field `nodes`"):
        parse_nodes_json(b'{"meta": {}, "errors": []}')


def test_unknown_version() -> None:
    doc = json.loads(raw("rest_v0.0.38_nodes.json"))
    doc["meta"]["plugin"]["type"] = "openapi/v0.0.99"  # newer than any known: read as the newest
    assert parse_nodes_json(json.dumps(doc).encode()) == parse_nodes_json(raw("rest_v0.0.38_nodes.json"))
    doc["meta"]["plugin"]["type"] = "openapi/v0.0.35"  # older than any known: refused
    with pytest.raises(SlurmParseError, match=r"unsupported Slurm REST version v0\.0\.35"):
        parse_nodes_json(json.dumps(doc).encode())
    with pytest.raises(SlurmParseError, match="unsupported"):
        parse_jobs_json(raw("cli_squeue.json"), version="v0.0.35")


def test_invalid_hostnames_strict_or_dropped() -> None:
    doc = json.loads(raw("cli_sinfo.json"))
    doc["nodes"][0]["name"] = "cpu01;rm -rf /"
    bad = json.dumps(doc).encode()
    with pytest.raises(SlurmParseError, match=r"invalid node name .* at \$\.nodes\[0\]"):
        parse_nodes_json(bad)
    errors: list[str] = []
    nodes = parse_nodes_json(bad, on_invalid=errors.append)
    assert len(nodes) == 7 and len(errors) == 1 and "cpu01;rm" in errors[0]
    jdoc = json.loads(raw("cli_squeue.json"))
    jdoc["jobs"][0]["nodes"] = "gpu[01-"
    with pytest.raises(SlurmParseError, match=r"\$\.jobs\[0\]\.nodes"):
        parse_jobs_json(json.dumps(jdoc).encode())
    jerrs: list[str] = []
    assert len(parse_jobs_json(json.dumps(jdoc).encode(), on_invalid=jerrs.append)) == 13 and jerrs


def test_hostlist_round_trip_of_job_nodes() -> None:
    for job in parse_jobs_json(raw("cli_squeue.json")):
        if job.nodes:
            assert collect(expand(job.nodes)) == job.nodes
