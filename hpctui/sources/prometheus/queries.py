"""The PromQL of one refresh: one query per metric family (or per group of gauge families
read in one go with ``by (__name__, ...)``), each covering every node. Aggregations keep only
the labels the model needs, which also folds duplicate series (two jobs scraping one exporter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hpctui.sources.prometheus.settings import PrometheusSettings


@dataclass(frozen=True, slots=True)
class Family:
    target: str  # which handler reads the answer (see parse.HANDLERS)
    field: str  # the field it fills ("" when the handler takes it from __name__)
    expr: str
    sparse: str = ""  # a metric queried with "!= 0": present but not answered means 0 (see PRESENCE)


# dcgm-exporter gauges → Gpu fields (FACTS §1)
GPU_GAUGES: tuple[tuple[str, str], ...] = (
    ("util", "DCGM_FI_DEV_GPU_UTIL"),
    ("mem_util", "DCGM_FI_DEV_MEM_COPY_UTIL"),
    ("temp", "DCGM_FI_DEV_GPU_TEMP"),
    ("hbm_temp", "DCGM_FI_DEV_MEMORY_TEMP"),
    ("fb_used", "DCGM_FI_DEV_FB_USED"),
    ("fb_free", "DCGM_FI_DEV_FB_FREE"),
    ("fb_reserved", "DCGM_FI_DEV_FB_RESERVED"),
    ("power", "DCGM_FI_DEV_POWER_USAGE"),
    ("power_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"),
    ("sm_clock", "DCGM_FI_DEV_SM_CLOCK"),
    ("mig_mode", "DCGM_FI_DEV_MIG_MODE"),
)
# Counters and flags that are 0 on almost every GPU: asked for with "!= 0" so an answer carries
# only the GPUs with something to say; a GPU of a present family that is not in it reads 0
# (a family the exporter does not have at all stays N/A).
GPU_SPARSE: tuple[tuple[str, str], ...] = (
    ("ecc_sbe_vol", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
    ("ecc_dbe_vol", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    ("ecc_sbe_agg", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"),
    ("ecc_dbe_agg", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"),
    ("remap_corr", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    ("remap_unc", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
    ("remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
    ("remap_pending", "DCGM_FI_DEV_ROW_REMAP_PENDING"),
    ("retired_sbe", "DCGM_FI_DEV_RETIRED_SBE"),
    ("retired_dbe", "DCGM_FI_DEV_RETIRED_DBE"),
    ("retired_pending", "DCGM_FI_DEV_RETIRED_PENDING"),
    ("xid", "DCGM_FI_DEV_XID_ERRORS"),  # a gauge: the LAST Xid seen, not a count
    ("pcie_replay", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
    ("nvl_crc_flit", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"),
    ("nvl_crc_data", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
    ("nvl_replay", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
    ("nvl_recovery", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
)
# Renamed in DCGM 3.3: read both, whichever the exporter has.
THROTTLE_NAMES = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
# dcgm-exporter 1.x names (its bash/dcgmi exporter; 2.x+ with ``-f 1.x-compatibility-metrics.csv``,
# ``--use-old-namespace`` also writes ``uuid`` for ``UUID``): the legacy map of NVIDIA/go-dcgm
# pkg/dcgm/const_fields.go (legacyDCGMFields) for the fields read here. Each family is queried
# under both names; a GPU exporting both reads the larger (``max by``).
V1_NAMES: dict[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "dcgm_gpu_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL": "dcgm_mem_copy_utilization",
    "DCGM_FI_DEV_GPU_TEMP": "dcgm_gpu_temp", "DCGM_FI_DEV_MEMORY_TEMP": "dcgm_memory_temp",
    "DCGM_FI_DEV_FB_USED": "dcgm_fb_used", "DCGM_FI_DEV_FB_FREE": "dcgm_fb_free",
    "DCGM_FI_DEV_POWER_USAGE": "dcgm_power_usage", "DCGM_FI_DEV_SM_CLOCK": "dcgm_sm_clock",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "dcgm_ecc_sbe_volatile_total",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "dcgm_ecc_dbe_volatile_total",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "dcgm_ecc_sbe_aggregate_total",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "dcgm_ecc_dbe_aggregate_total",
    "DCGM_FI_DEV_RETIRED_SBE": "dcgm_retired_pages_sbe", "DCGM_FI_DEV_RETIRED_DBE": "dcgm_retired_pages_dbe",
    "DCGM_FI_DEV_RETIRED_PENDING": "dcgm_retired_pages_pending", "DCGM_FI_DEV_XID_ERRORS": "dcgm_xid_errors",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "dcgm_pcie_replay_counter",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "dcgm_nvlink_flit_crc_error_count_total",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "dcgm_nvlink_data_crc_error_count_total",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "dcgm_nvlink_replay_error_count_total",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "dcgm_nvlink_recovery_error_count_total",
}
PROF_NAMES = "DCGM_FI_PROF_.+|dcgm_fi_prof_.+"  # 1.x: dcgm_fi_prof_gr_engine_active, ...
INFO_LABELS = ("UUID", "uuid", "GPU_I_PROFILE", "modelName", "pci_bus_id", "pod", "namespace", "container",
               "exported_pod", "exported_namespace", "exported_container",
               "pod_name", "pod_namespace", "container_name")  # the last three: 1.x pod-gpu-metrics-exporter

# node_exporter InfiniBand counters → the sysfs counter names of the model (FACTS §4)
IB_COUNTERS: dict[str, str] = {
    "node_infiniband_link_downed_total": "link_downed",
    "node_infiniband_link_error_recovery_total": "link_error_recovery",
    "node_infiniband_port_errors_received_total": "port_rcv_errors",
    "node_infiniband_port_discards_received_total": "port_rcv_switch_relay_errors",
    "node_infiniband_port_discards_transmitted_total": "port_xmit_discards",
    "node_infiniband_port_constraint_errors_received_total": "port_rcv_constraint_errors",
    "node_infiniband_port_constraint_errors_transmitted_total": "port_xmit_constraint_errors",
    "node_infiniband_port_transmit_wait_total": "port_xmit_wait",
    "node_infiniband_port_data_received_bytes_total": "port_rcv_data",
    "node_infiniband_port_data_transmitted_bytes_total": "port_xmit_data",
    "node_infiniband_port_packets_received_total": "port_rcv_packets",
    "node_infiniband_port_packets_transmitted_total": "port_xmit_packets",
}
# identity (and sample time) read every refresh; a GPU without these gets them from the follow-up
# of that refresh (identity_family)
INFO_METRICS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP")
IB_ERROR_COUNTERS = tuple(k for k, v in IB_COUNTERS.items() if "data" not in v and "packets" not in v)
RESOURCE_GAUGES: dict[str, str] = {
    "node_load1": "load1", "node_load5": "load5", "node_load15": "load15",
    "node_memory_MemTotal_bytes": "mem_total", "node_memory_MemAvailable_bytes": "mem_available",
    "node_memory_SwapTotal_bytes": "swap_total", "node_memory_SwapFree_bytes": "swap_free",
}
FS_GAUGES: dict[str, str] = {
    "node_filesystem_size_bytes": "size", "node_filesystem_avail_bytes": "avail",
    "node_filesystem_readonly": "readonly", "node_filesystem_device_error": "device_error",
}


def promql_string(value: str) -> str:
    """A Go-escaped PromQL string literal body."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sel(extra: str, *matchers: str) -> str:
    parts = [m for m in (*matchers, extra.strip().strip(",")) if m]
    return "{" + ",".join(parts) + "}"


def _name_re(names: str) -> str:
    return f'__name__=~"{names}"'


def names_of(metric: str) -> str:
    """``metric`` and its dcgm-exporter 1.x name, as a ``__name__`` alternation (or just ``metric``)."""
    old = V1_NAMES.get(metric)
    return f"{metric}|{old}" if old else metric


def _any_name(metric: str, selector: str) -> str:
    """A selector for ``metric`` under its current or its 1.x name."""
    return _sel(selector, _name_re(names_of(metric))) if metric in V1_NAMES else f"{metric}{_sel(selector)}"


def _timestamps(metrics: list[str], selector: str) -> str:
    """The newest sample time of any of ``metrics`` (each under both names), one ``timestamp()``
    per name joined by ``or``: a regex over ``__name__`` inside ``timestamp()`` fails in
    Prometheus as soon as two families carry the same labels."""
    names = [n for m in metrics for n in names_of(m).split("|")]
    return " or ".join(f"timestamp({n}{_sel(selector)})" for n in names)


def identity_family(s: PrometheusSettings, metrics: list[str]) -> Family:
    """The follow-up of a refresh in which some GPUs had no identity or sample time (their
    exporter has neither FB_USED nor GPU_TEMP): UUID, model, pods and the newest
    sample time per GPU from ``metrics``, families those GPUs did answer in."""
    g = f"{', '.join(s.node_labels)}, gpu, GPU_I_ID"
    return Family("gpu_ident", "", f"max by ({g}, {', '.join(INFO_LABELS)}) ({_timestamps(metrics, s.dcgm_selector)})")


def families(s: PrometheusSettings) -> list[Family]:
    n = ", ".join(s.node_labels)
    g = f"{n}, gpu, GPU_I_ID"
    d, x = s.dcgm_selector, s.node_selector
    rw, dw = f"[{int(s.rate_window_s)}s]", f"[{int(s.delta_window_s)}s]"
    idle, lo = 'mode="idle"', 'device!="lo"'
    out: list[Family] = []
    if s.gpus:
        for field, metric in GPU_GAUGES:
            out.append(Family("gpu", field, f"max by ({g}) ({_any_name(metric, d)})"))
        for field, metric in GPU_SPARSE:
            out.append(Family("gpu", field, f"max by ({g}) ({_any_name(metric, d)}) != 0", sparse=metric))
        sparse = _name_re("|".join(names_of(m) for _, m in GPU_SPARSE))
        out.append(Family("present", "", f"count by (__name__) ({_sel(d, sparse)})"))
        out.append(Family("gpu", "throttle", f"max by ({g}) ({_sel(d, _name_re(THROTTLE_NAMES))})"))
        out.append(Family("gpu_prof", "", f"max by (__name__, {g}) ({_sel(d, _name_re(PROF_NAMES))})"))
        out.append(Family("gpu_rate", "nvl_bw", f"max by ({g}) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{_sel(d)}{rw}))"))
        present = _sel(d, _name_re("|".join(names_of(m) for m in INFO_METRICS)))
        out.append(Family("gpu_info", "", f"group by ({g}, {', '.join(INFO_LABELS)}) ({present})"))
        # a node's newest GPU sample (every series of one scrape has its time), from the identity
        # families: dcgm-exporter 4.5 with its default counters (GPU Operator 25.10) exports no
        # XID_ERRORS (NVIDIA/dcgm-exporter#646; the L4 recording). A node whose GPUs answer in
        # none of them gets it from the follow-up (identity_family).
        out.append(Family("gpu_time", "", f"max by ({n}) ({_timestamps(list(INFO_METRICS), d)})"))
    if s.ib:
        for field, metric in (("state", "node_infiniband_state_id"), ("phys", "node_infiniband_physical_state_id"),
                              ("rate", "node_infiniband_rate_bytes_per_second")):
            out.append(Family("ib", field, f"max by ({n}, device, port) ({metric}{_sel(x)})"))
        errors = _name_re("|".join(IB_ERROR_COUNTERS))
        out.append(Family("ib_counters", "", f"max by (__name__, {n}, device, port) ({_sel(x, errors)}) != 0",
                          ))
        out.append(Family("present", "", f"count by (__name__) ({_sel(x, errors)})"))
        # error counter families per port (ports with none are not in the answer): a port with
        # fewer than the fabric has (an HCA without PMA counters: sysfs "N/A (no PMA)", which
        # node_exporter skips) reads N/A, not 0. One row per port; asking for the exceptions only
        # ("< N or … unless …") cost Prometheus 2.5x the CPU of this query on the bed.
        out.append(Family("ib_have", "", f"count by ({n}, device, port) ({_sel(x, errors)})"))
        for metric in IB_ERROR_COUNTERS:
            out.append(Family("ib_delta", IB_COUNTERS[metric],
                              f"max by ({n}, device, port) (increase({metric}{_sel(x)}{dw})) > 0", sparse=metric))
    if s.resources:
        out.append(Family("res_gauges", "", f"max by (__name__, {n}) ({_sel(x, _name_re('|'.join(RESOURCE_GAUGES)))})"))
        out.append(Family("res", "cpu_count", f"count by ({n}) (node_cpu_seconds_total{_sel(x, idle)})"))
        out.append(Family("res", "cpu_busy",
                          f"100 * (1 - avg by ({n}) (rate(node_cpu_seconds_total{_sel(x, idle)}{rw})))"))
        out.append(Family("res_dev", "disk_busy",
                          f"100 * max by ({n}, device) (rate(node_disk_io_time_seconds_total{_sel(x)}{rw}))"))
        out.append(Family("res_dev", "nic_rx",
                          f"max by ({n}, device) (rate(node_network_receive_bytes_total{_sel(x, lo)}{rw}))"))
        out.append(Family("res_dev", "nic_tx",
                          f"max by ({n}, device) (rate(node_network_transmit_bytes_total{_sel(x, lo)}{rw}))"))
        out.append(Family("res_dev", "nic_errors",
                          f"sum by ({n}, device) (increase(node_network_receive_errs_total{_sel(x, lo)}{dw}))"
                          f" + sum by ({n}, device) (increase(node_network_transmit_errs_total{_sel(x, lo)}{dw}))"))
    if s.mounts:
        mp = promql_string("^(" + "|".join(re.escape(m) for m in s.mounts) + ")$")
        out.append(Family("fs", "", f"max by (__name__, {n}, mountpoint, device, fstype) "
                                    f"({_sel(x, _name_re('|'.join(FS_GAUGES)), f'mountpoint=~{chr(34)}{mp}{chr(34)}')})"))
    if s.ib or s.resources or s.mounts:
        out.append(Family("node_time", "", f"max by ({n}) (timestamp(node_load1{_sel(x)}))"))
    return out


def history_expr(metric: str, label: str, values: set[str], gpu: int | None, selector: str) -> str:
    """One node's (or one GPU's) series for the node panel's chart. ``values``: every raw label
    value the node was seen under (``gpu01:9400`` for dcgm-exporter, ``gpu01:9100`` for node_exporter)."""
    if len(values) == 1:
        matchers = [f'{label}="{promql_string(next(iter(values)))}"']
    else:
        alternatives = "|".join(re.escape(v) for v in sorted(values))
        matchers = [f'{label}=~"{promql_string(alternatives)}"']
    if gpu is not None:
        matchers.append(f'gpu="{gpu}"')
    return f"avg({metric}{_sel(selector, *matchers)})"


HISTORY_METRICS: dict[str, str] = {
    "util": "DCGM_FI_DEV_GPU_UTIL", "temp": "DCGM_FI_DEV_GPU_TEMP", "power": "DCGM_FI_DEV_POWER_USAGE",
    "mem": "DCGM_FI_DEV_FB_USED",
}
