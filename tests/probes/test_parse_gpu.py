"""nvidia-smi parsers against real recorded outputs (tests/fixtures/probes, from ../shared/samples)."""

from __future__ import annotations

from hpctui.sources.ssh.probe import parse_gpu as pg

H100 = "nvidia-smi_query-gpu_allfields_h100-80gb-hbm3_drv590.48.01_load.csv"
H200 = "nvidia-smi_query-gpu_allfields_h200_drv590.48.01_idle.csv"
H100_MIG = "nvidia-smi_query-gpu_allfields_h100-mig-enabled_drv590.48.01_load.csv"


def test_query_gpu_h100_under_load(fixture_text):
    (g,) = pg.parse_query_gpu("gpu001", fixture_text(H100))
    assert g.index == 0 and g.model == "NVIDIA H100 80GB HBM3" and g.pci_bus_id == "00000000:00:09.0"
    assert g.util_pct == 100.0 and g.mem_util_pct == 11.0
    assert g.memory_used_mib == 19818.0 and g.memory_total_mib == 81559.0
    assert g.temp_c == 59.0 and g.hbm_temp_c == 54.0 and g.power_w == 631.95 and g.power_limit_w == 700.0
    assert g.sm_clock_mhz == 1980.0
    assert g.ecc_uncorrected_volatile == 0 and g.remapped_correctable == 0 and g.remap_pending is False
    assert g.mig_mode_current is False and g.persistence_mode is True and g.throttle_reasons == 0
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)


def test_query_gpu_h200_idle_throttle_reason_is_gpu_idle(fixture_text):
    (g,) = pg.parse_query_gpu("gpu002", fixture_text(H200))
    assert g.model == "NVIDIA H200" and g.memory_total_mib == 143771.0 and g.memory_used_mib == 0.0
    assert g.throttle_reasons == 0x1 and g.throttle_names() == ["GPU_IDLE"]


def test_query_gpu_mig_enabled_na_cells_are_none_not_zero(fixture_text):
    (g,) = pg.parse_query_gpu("gpu003", fixture_text(H100_MIG))
    assert g.mig_mode_current is True and g.mig_mode_pending is True
    assert g.util_pct is None and g.mem_util_pct is None  # "[N/A]" on MIG
    assert g.remapped_correctable is None and g.remap_pending is None
    assert g.memory_used_mib == 11125.0


def test_query_gpu_noheader_nounits_with_the_probe_field_list(fixture_text):
    # Re-shape the real row as the probe asks for it: chosen fields, no header, no units.
    rows = pg.query_rows(fixture_text(H100))
    fields = ["index", "uuid", "pci.bus_id", "utilization.gpu", "memory.used", "clocks_event_reasons.active",
              "pcie.link.gen.gpucurrent", "pcie.link.width.max", "remapped_rows.pending", "gpu_recovery_action"]
    line = ", ".join(rows[0][f].split(" ")[0] if f != "remapped_rows.pending" else rows[0][f] for f in fields)
    (g,) = pg.parse_query_gpu("n", line + "\n", fields)
    assert g.util_pct == 100.0 and g.memory_used_mib == 19818.0 and g.pcie_gen_current == 5
    assert g.pcie_width_max == 16 and g.remap_pending is False and g.throttle_reasons == 0


def test_not_available_spellings_are_none():
    for v in ("[N/A]", "N/A", "", "[Not Supported]", "[Requested functionality has been deprecated]",
              "[Unknown Error]", "  "):
        assert pg.num(v) is None and pg.integer(v) is None and pg.flag(v) is None
    assert pg.num("81559 MiB") == 81559.0 and pg.integer("0x0000000000000041") == 0x41


def test_gpu_is_lost_marks_the_gpu_lost():
    fields = ["index", "uuid", "utilization.gpu"]
    (g,) = pg.parse_query_gpu("n", "0, GPU-1, [GPU is lost]\n", fields)
    assert g.lost and g.util_pct is None


def test_wrong_width_rows_and_garbage_are_skipped():
    fields = ["index", "uuid"]
    assert pg.parse_query_gpu("n", "garbage\n0, GPU-a, extra\n1, GPU-b\n", fields)[0].index == 1


def test_remapped_rows_query():
    text = "GPU-a, 3, 1, Yes, No\nGPU-b, [N/A], [N/A], [N/A], [N/A]\n"
    rows = pg.parse_remapped_rows(text)
    assert rows["GPU-a"] == pg.RemapRow(3, 1, True, False)
    assert rows["GPU-b"] == pg.RemapRow(None, None, None, None)


def test_compute_apps_real_sample_with_header(fixture_text):
    apps = pg.parse_compute_apps(fixture_text("nvidia-smi_query-compute-apps_h100-80gb-hbm3_drv590.48.01_load.csv"),
                                 None)
    assert [a.pid for a in apps] == [11327, 11328, 11345]
    assert apps[2].used_memory_mib == 15690.0 and apps[2].command == "./gpu_burn"
    assert apps[0].gpu_uuid == "GPU-00000000-0000-0000-0000-000000000000"


def test_procs_section_owner_command_and_job_or_pod_from_cgroup():
    text = "\n".join([
        "pid 4242", "uid 1000 alice", "cmd python train.py --lr 0.1",
        "cgroup 0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0",
        "pid 4343", "uid 0 root", "cmd /usr/bin/pause",
        "cgroup 0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f2b6c1e_1a2b_4c3d_9e8f_0123456789ab.slice/cri-containerd-abc.scope",
        "pid 4444", "gone",
        "pid 4545", "uid 1001 bob", "cmd \x1b]0;evil\x07x", "cgroup 4:devices:/slurm/uid_1001/job_77/step_batch",
    ])
    procs = pg.parse_procs(text)
    assert procs[4242].user == "alice" and procs[4242].slurm_job_id == "1234" and procs[4242].pod is None
    assert procs[4343].pod == "8f2b6c1e-1a2b-4c3d-9e8f-0123456789ab" and procs[4343].slurm_job_id is None
    assert procs[4444].gone
    assert procs[4545].slurm_job_id == "77" and "\x1b" not in (procs[4545].command or "")


def test_merge_processes_attaches_gpu_index_and_owner():
    apps = pg.parse_compute_apps("4242, GPU-a, 1024\n4444, MIG-x, [N/A]\n")
    procs = pg.parse_procs("pid 4242\nuid 1000 alice\ncmd a.out\ncgroup 0::/x/job_9/step_0\npid 4444\ngone\n")
    merged = pg.merge_processes(apps, procs, {"GPU-a": 0, "MIG-x": 1})
    assert merged[0].gpu_index == 0 and merged[0].user == "alice" and merged[0].slurm_job_id == "9"
    assert merged[1].gpu_index == 1 and merged[1].user is None and merged[1].used_memory_mib is None


def test_nvidia_smi_L_with_mig(fixture_text):
    gpus, migs = pg.parse_list_gpus(fixture_text("nvidia-smi_L_h100-mig-enabled_drv590.48.01.txt"))
    assert list(gpus) == [0]
    assert [(m.profile, m.device) for m in migs] == [("3g.40gb", 0), ("2g.20gb", 1), ("1g.10gb", 2), ("1g.10gb", 3)]
    gpus, migs = pg.parse_list_gpus(fixture_text("nvidia-smi_L_h100-80gb-hbm3_mig-7x1g.10gb.txt"))
    assert len(migs) == 7 and all(m.profile == "1g.10gb" for m in migs)


def test_mig_lgi_table(fixture_text):
    rows = pg.parse_mig_lgi(fixture_text("nvidia-smi_mig-lgi_a100-40gb_7x1g.5gb.txt"))
    assert [r.gi_id for r in rows] == [7, 8, 9, 10, 11, 12, 13]
    assert {r.profile for r in rows} == {"1g.5gb"} and {r.profile_id for r in rows} == {19}


def test_mig_lci_table():
    text = """+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement  |
|       Instance                       ID        ID       Start:Size |
|         ID                                                         |
|====================================================================|
|   0      1       MIG 3g.20gb          2         0          0:3     |
+--------------------------------------------------------------------+
|   0      2       MIG 1g.5gb           0         0          0:1     |
+--------------------------------------------------------------------+
"""
    rows = pg.parse_mig_lci(text)
    assert [(r.gpu, r.gi_id, r.profile, r.ci_id) for r in rows] == [(0, 1, "3g.20gb", 0), (0, 2, "1g.5gb", 0)]


def test_mig_instances_joined_with_per_instance_memory(fixture_text):
    (g,) = pg.parse_query_gpu("n", fixture_text(H200))
    g = g.__class__(**{**{f: getattr(g, f) for f in g.__struct_fields__}, "mig_mode_current": True,
                       "pci_bus_id": "00000000:83:00.0"})
    _, migs = pg.parse_list_gpus(fixture_text("nvidia-smi_L_h200-mig-enabled_drv590.48.01.txt"))
    mem = pg.parse_q_mig_memory(fixture_text("nvidia-smi_q_h200-mig-enabled_drv590.48.01_load.txt"))
    assert [(m.device, m.gi_id, m.ci_id, m.total_mib, m.used_mib) for m in mem][:3] == [
        (0, 2, 0, 71424.0, 16925.0), (1, 2, 1, 71424.0, 16925.0), (2, 3, 0, 33280.0, 17.0)]
    inst = pg.mig_instances(g, migs, [], [], mem)
    assert [(i.gi_id, i.ci_id, i.profile) for i in inst] == [
        (2, 0, "3g.71gb"), (2, 1, "3g.71gb"), (3, 0, "2g.35gb"), (9, 0, "1g.18gb"), (10, 0, "1g.18gb")]
    assert inst[2].memory_total_mib == 33280.0 and inst[2].uuid == "MIG-00000002-0000-0000-0000-000000000002"


def test_q_without_mig_has_no_mig_memory(fixture_text):
    assert pg.parse_q_mig_memory(fixture_text("nvidia-smi_q_h100-80gb-hbm3_drv590.48.01_load.txt")) == []


def test_nvlink_status_h100_and_a100(fixture_text):
    links, unsupported = pg.parse_nvlink_status(fixture_text("nvidia-smi_nvlink-s_h100-80gb-hbm3_drv590.48.01.txt"))
    assert not unsupported and len(links[0]) == 18
    assert all(link.up and link.speed_gbps == 26.562 for link in links[0])
    links, _ = pg.parse_nvlink_status(fixture_text("nvidia-smi_nvlink-status_8x-a100-sxm4-80gb.txt"))
    assert sorted(links) == list(range(8)) and all(len(v) == 12 for v in links.values())


def test_nvlink_with_mig_is_unknown_not_down(fixture_text):
    links, unsupported = pg.parse_nvlink_status(fixture_text("nvidia-smi_nvlink-s_h100-mig-enabled_drv590.48.01.txt"))
    assert unsupported == {0} and links[0] == []
    prev = (pg.NvLink(link=0, up=True, speed_gbps=26.562),)
    merged = pg.merge_nvlinks([], {}, True, prev)
    assert merged[0].up is None


def test_nvlink_inactive_and_error_counters_with_deltas():
    status = "GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    errors1 = "GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 0\n" \
              "\t Link 0: CRC Errors: 1\n"
    errors2 = errors1.replace("CRC Errors: 1", "CRC Errors: 5").replace("Replay Errors: 0", "Replay Errors: 2")
    links, _ = pg.parse_nvlink_status(status)
    first = pg.merge_nvlinks(links[0], pg.parse_nvlink_errors(errors1)[0], False, ())
    assert first[0].up and first[1].up is False and first[0].crc_errors == 1 and first[0].deltas == {}
    second = pg.merge_nvlinks(links[0], pg.parse_nvlink_errors(errors2)[0], False, first)
    assert second[0].deltas == {"crc": 4, "replay": 2}


def test_bus_key_matches_nvidia_smi_and_kernel_spellings():
    assert pg.bus_key("00000000:9B:00.0") == pg.bus_key("0000:9b:00") == "0000:9b:00"
