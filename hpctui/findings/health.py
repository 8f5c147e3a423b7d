"""Turns a snapshot into findings: what is wrong, where, and how badly.

UI-free, so the dashboard colours, the headless ``snapshot`` table and (later)
incident reports all agree on what "sick" means.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Annotated

import msgspec
from msgspec import Meta

from hpctui.findings.cephfs import CEPH_FSTYPES, cluster_of, cluster_words
from hpctui.model import ClusterSnapshot, Gpu, IbPort, Mount, MountState, Node, Pod, Severity
from hpctui.model.alerts import Alert
from hpctui.model.gpu import XID_ACTION, XID_MEANING, xid_severity
from hpctui.model.ib import LINK_ERROR_COUNTERS
from hpctui.model.nvswitch import SXID_MEANING, NvSwitch, sxid_class
from hpctui.model.probe import ProbeStatus, ServiceState, ServiceStatus
from hpctui.model.storage import CephHealth


class Thresholds(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """Alert thresholds; the ``[thresholds]`` table of the config file."""

    gpu_temp_warn_c: Annotated[float, Meta(ge=0, le=200)] = 83.0
    """GPU temperature (°C) that is a warning; below ``gpu_temp_crit_c`` (bounds also reject NaN/inf)."""
    gpu_temp_crit_c: Annotated[float, Meta(ge=0, le=200)] = 88.0
    """GPU temperature (°C) that is an error."""
    hbm_temp_warn_c: Annotated[float, Meta(ge=0, le=200)] = 90.0
    """GPU memory (HBM) temperature (°C) that is a warning."""
    gpu_power_warn_pct: Annotated[float, Meta(gt=0, le=1000)] = 98.0
    """Power draw, in % of the power limit, that is a warning."""
    ecc_corrected_warn: Annotated[int, Meta(ge=1, le=2**62)] = 1000
    """Volatile corrected ECC errors that are a warning."""
    mount_slow_ms: Annotated[float, Meta(gt=0, le=3_600_000)] = 500.0
    """A mount answering slower than this (ms) is slow."""
    stale_factor: Annotated[float, Meta(ge=1, le=1000)] = 3.0
    """A source is stale after this many missed intervals."""
    flap_window_s: Annotated[float, Meta(ge=0, le=86_400)] = 600.0
    """A cleared problem stays listed (recovered) this long."""
    maint_window_s: Annotated[float, Meta(ge=0, le=30 * 86_400)] = 86_400.0
    """A maintenance reservation starting within this many seconds is a finding on each of its nodes."""
    agent_queue_warn: Annotated[int, Meta(ge=1, le=10_000_000)] = 100
    """slurmctld's agent queue (sdiag "Agent queue size") at or above this is a finding."""
    server_threads_warn: Annotated[int, Meta(ge=1, le=100_000)] = 128
    """slurmctld server threads (sdiag "Server thread count") at or above this are a finding."""
    backfill_interval_s: Annotated[float, Meta(gt=0, le=86_400)] = 30.0
    """The cluster's backfill interval (``SchedulerParameters=bf_interval``, Slurm's default 30 s): a
    backfill cycle that takes longer is a finding."""
    rpc_user_rate_warn: Annotated[float, Meta(gt=0, le=1_000_000)] = 20.0
    """One user's mean RPC rate to slurmctld (RPCs/s since sdiag's statistics began) that is a finding."""
    switch_suspect_nodes: Annotated[int, Meta(ge=2, le=100_000)] = 3
    """This many nodes under one leaf switch with a port down or flapping within ``flap_window_s`` (or at a
    degraded rate) make one "suspect leaf switch" finding that leads the problem list."""
    fs_target_warn_pct: Annotated[float, Meta(gt=0, le=100)] = 90.0
    """A Lustre OST/MDT (``lfs df``) at least this full (%) is a warning."""
    fs_target_crit_pct: Annotated[float, Meta(gt=0, le=100)] = 97.0
    """A Lustre OST/MDT at least this full (%) is an error: writes striped onto it fail soon."""
    pvc_pending_s: Annotated[float, Meta(ge=0, le=30 * 86_400)] = 300.0
    """A GPU pod's PersistentVolumeClaim Pending this long (seconds since it was made) is a finding of its
    storage class."""
    volume_event_window_s: Annotated[float, Meta(gt=0, le=86_400)] = 900.0
    """``FailedMount`` / ``FailedAttachVolume`` events of GPU pods this recent (seconds) are a finding of the
    storage class of the claim they name."""

    def __post_init__(self) -> None:
        if self.gpu_temp_warn_c >= self.gpu_temp_crit_c:
            raise ValueError(f"gpu_temp_warn_c ({self.gpu_temp_warn_c:g}) must be below "
                             f"gpu_temp_crit_c ({self.gpu_temp_crit_c:g})")
        if self.fs_target_warn_pct > self.fs_target_crit_pct:
            raise ValueError(f"fs_target_warn_pct ({self.fs_target_warn_pct:g}) must not be above "
                             f"fs_target_crit_pct ({self.fs_target_crit_pct:g})")


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One thing wrong with one component. The message names the component (GPU index, port,
    mount, service, pod, switch; node-level findings name the node by their object), and
    :attr:`action` says in one line what to do about it."""

    severity: Severity
    object: str  # "node/gpu01", "gpu/gpu01/3", "ib/gpu01/mlx5_0:1", "mount/gpu01:/lustre"
    code: str  # short machine-friendly code: "xid79", "ecc_dbe", "ib_rate", ...
    message: str

    @property
    def action(self) -> str:
        """The recommended next step (FACTS), looked up by code: nothing is stored per finding."""
        text = recommended_action(self.code, self.severity)
        if "{" not in text:
            return text
        kind, _, rest = self.object.partition("/")
        node, _, name = rest.partition(":") if kind in ("service", "mount") else (rest.split("/", 1)[0], "", "")
        return text.replace("{node}", node).replace("{name}", name)


# The recommended next step per finding code (FACTS §1 Xid catalogue and GPU memory errors, §3 drain
# semantics, §4 IB link signals, §5 mount health, §6 Kubernetes node conditions, §8 NVSwitch/fabric).
# Xid codes ("xid79") use XID_ACTION; "<code>_recovered" rows use their code's action.
ACTIONS: dict[str, str] = {
    "gpu_lost": "drain the node and reboot it (Xid 79: fallen off the bus); RMA if it comes back",
    "gpu_reset_required": "drain, stop the GPU's processes, nvidia-smi -r (or reboot the node)",
    "fabric": "check nvidia-fabricmanager (systemctl status); drain, restart it, reset the GPUs",
    "ecc_uncorrected": "drain the node, then reset the GPU (nvidia-smi -r) to apply the row remap",
    "ecc_corrected": "watch the trend; reset the GPU when convenient; support if it keeps rising",
    "remap_failure": "RMA candidate: drain the node, reset the GPU, contact NVIDIA support",
    "remap_pending": "drain, then reset the GPU (nvidia-smi -r) to apply the pending remap",
    "temp": "check cooling: fans, airflow, inlet temperature; compare with the node's other GPUs",
    "hbm_temp": "check cooling (HBM runs hot before the core does); lower power or drain if it climbs",
    "thermal_throttle": "check cooling: fans, airflow, inlet temperature; clocks stay low until it cools",
    "pcie_width": "check nvidia-smi -q -d PCIE under load; reseat the GPU or its riser if it stays narrow",
    "pcie_gen": "check nvidia-smi -q -d PCIE under load; reseat the GPU or check the BIOS link speed",
    "nvlink_inactive": "check nvidia-smi nvlink -s and the fabric manager; reset the GPUs or reboot",
    "nvlink_down": "check nvidia-smi nvlink -s (the peer GPU may be the cause); reset the GPUs or reboot",
    "nvlink_errors": "watch the counters; reset the GPUs if they keep rising; support if it persists",
    "gpu_stray_process": "find the process's owner (its cgroup); kill it if no job owns it",
    "gpu_idle": "ask the owner (:idle, notify); requeue or cancel the job if it keeps holding GPUs it does not use",
    "gpu_busy_unowned": "find what runs on it (nvidia-smi on the node): the scheduler does not know it uses this GPU",
    "service_failed": "systemctl status {name} / journalctl -u {name} on {node}; fix and restart it",
    "service_inactive": "systemctl start {name} on {node} if the node needs it",
    "ib_down": "check the cable and switch port (ibstat, iblinkinfo); reseat or replace the cable",
    "ib_rate": "reseat the cable; iblinkinfo names what the link could run at",
    "ib_flap": "bad cable or transceiver: reseat or replace it; drain the node if it keeps flapping",
    "ib_flapped": "bad cable or transceiver: reseat or replace it; drain the node if it keeps flapping",
    "ib_switch": "check the leaf switch (its log, power, uplinks; iblinkinfo -S) before draining its nodes one by one",
    "ib_switch_rate": "check the leaf switch's port speeds and firmware (iblinkinfo -S: 'Could be' hints)",
    "ib_errors": "symbol/link errors rising: reseat or replace the cable (xmit_wait is congestion)",
    "mount_hung": "check the file server (dmesg: server not responding; lfs check servers); drain the node",
    "mount_missing": "mount it again; check fstab or the automounter",
    "mount_read-only": "check dmesg for the error that remounted it read-only; remount or drain",
    "mount_degraded": "check the file system's targets (lfs df, beegfs-ctl --listtargets, ceph health)",
    "mount_slow": "check the file server's load and the network to it",
    "fs_target_full": "move or purge data on the target (lfs find --ost); deactivate it for new files; add OSTs",
    "fs_target_inactive": "check the target's server (lctl dl on the OSS/MDS, lfs check servers) and the "
                          "network from the nodes named",
    "fs_target_unreachable": "check the target's server and the fabric from the nodes named (lctl ping, "
                             "beegfs-check-servers)",
    "fs_target_degraded": "resync the target (beegfs-ctl --startresync) or check its flags (lfs df -v)",
    "pvc_pending": "check the storage class's provisioner (its CSI controller pod's logs, kubectl describe pvc): "
                   "quota, capacity or topology",
    "volume_mount_failed": "check the CSI driver on the nodes named (its node plugin pod's logs) and the storage "
                           "behind it; kubectl describe pod shows the whole error",
    "quota_over": "the user frees space or gets more quota before checkpoints fail (lfs quota / beegfs-ctl --getquota)",
    # storage behind the nodes (hpctui.findings.storage); other ceph_<check> codes: STORAGE_FALLBACK
    "ceph_osd_down": "on the OSD's host: systemctl status ceph-osd@N, its log, the disk (smartctl); Ceph marks it "
                     "out after mon_osd_down_out_interval (10 min) and rebalances: 'ceph osd set noout' for a reboot",
    "ceph_osd_out": "if it is to come back: fix it, then 'ceph osd in N'; else let recovery finish (ceph -s)",
    "ceph_pg_degraded": "recovery is running or waits for the down OSD: watch ceph -s; bring the OSD back",
    "ceph_pg_availability": "PGs are stale or inactive: their OSDs are down; bring them back (ceph health detail)",
    "ceph_pgs": "PGs not active+clean: see ceph pg dump_stuck; usually an OSD is down",
    "ceph_pool_full": "writes to the pool block: raise its quota (ceph osd pool set-quota) or free space",
    "ceph_pool_used": "the pool grows toward full: add OSDs or free space before writes block",
    "ceph_pool_quota": "raise the pool's quota (ceph osd pool set-quota) or free space before writes block",
    "ceph_partial": "one ceph call failed this time (named in the message); the others were read",
    "ceph_stale": "check the ceph CLI on the admin host (conf, keyring, mons reachable): the finding says why",
    "s3_auth": "check the access key and secret in the configured files/env (rotated? user suspended?)",
    "s3_bucket_missing": "create the canary bucket (the probe never does), or fix bucket in the config",
    "s3_quota": "the user or bucket quota is reached: raise it (radosgw-admin quota set / mc quota) or free space",
    "s3_tls": "check the endpoint's certificate (expired? private CA: ca_file) and the URL's host name",
    "s3_unreachable": "check the endpoint (the gateway up? its backing storage: an RGW with OSDs down hangs)",
    "s3_error": "see the S3 error code in the message; try the same call with the site's S3 client",
    "s3_slow": "see which call was slow; check the gateway's load and its backing storage",
    "s3_stale": "the probe could not start: check the credentials files/env named in the message",
    "slurm_down": "find the cause (scontrol show node {node}, slurmd log); fix it, then State=RESUME",
    "slurm_drain": "when the cause is fixed: scontrol update NodeName={node} State=RESUME",
    "k8s_notready": "check the kubelet (systemctl status kubelet, journalctl -u kubelet) and the network",
    "k8s_cordoned": "kubectl uncordon {node} when the work on it is done",
    "MemoryPressure": "free memory on the node (the kubelet evicts pods under pressure)",
    "DiskPressure": "free disk space on the node (images, logs, emptyDir)",
    "PIDPressure": "find the process that forks without end; raise the PID limit if the load is real",
    "NetworkUnavailable": "check the node's CNI pod and its network configuration",
    "platform_pod": "kubectl describe / logs the pod; the node's GPUs are not usable while it is down",
    "probe_late": "check the node's load and the probe's commands (a slow nvidia-smi, a hung mount)",
    "probe_unreachable": "check SSH to the node (is it up? ssh it by hand); see the error",
    "probe_pending": "wait for the first probe",
    "resv_unusable": "resume the node when fixed, or update the reservation's nodes "
                     "(scontrol update ReservationName=... Nodes=...); tell its users",
    "resv_maint_soon": "check the jobs that end after its start (:reservations); announce the window to the users",
    "ctld_agent_queue": "find the unreachable nodes (sinfo -R, scontrol ping); the agent retries them: see sdiag",
    "ctld_threads": "see who sends the RPCs (:scheduler, by user); throttle polling scripts; max_rpc_cnt",
    "ctld_backfill_slow": "lower bf_max_job_test / raise bf_interval, or use bf_continue (SchedulerParameters)",
    "ctld_rpc_user": "ask the user to stop the polling loop (squeue in watch, a dashboard); rate-limit with "
                     "SlurmctldParameters=rl_enable",
    "alert": "read the alert's runbook (enter: its labels and annotations); silence it while you work on the node",
}


STORAGE_FALLBACK = "see 'ceph health detail' on the admin host; Ceph's health-check docs explain each code"


def recommended_action(code: str, severity: Severity = Severity.WARNING) -> str:
    """The one-line next step for a finding ``code`` (see ACTIONS); never empty."""
    code = code.removesuffix("_recovered")
    action = ACTIONS.get(code)
    if action is not None:
        return action
    if code.startswith("xid") and code[3:].isdigit():
        return XID_ACTION.get(int(code[3:]), "look the Xid up in NVIDIA's Xid catalog; reset the GPU if it repeats")
    if code.startswith("sxid"):
        if severity >= Severity.CRITICAL:
            return "fatal SXid: reset all GPUs and NVSwitches of the node (or reboot it)"
        return "non-fatal SXid: none needed unless it repeats; check cabling for 20012"
    if code.startswith("ceph_"):
        return STORAGE_FALLBACK
    return "see the evidence (enter) and the node's other findings"


def gpu_findings(gpu: Gpu, t: Thresholds) -> list[Finding]:
    obj = f"gpu/{gpu.node}/{gpu.index}"
    out: list[Finding] = []
    if gpu.lost:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="gpu_lost", message=f"GPU {gpu.index} not answering (fallen off the bus?)"))
    if gpu.reset_required:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="gpu_reset_required",
                           message=f"GPU {gpu.index} requires reset (nvidia-smi: [GPU requires reset]): drain, then nvidia-smi -r or reboot"))
    if gpu.fabric_failed:
        out.append(fabric_finding(gpu))
    if gpu.last_xid is not None:
        meaning = XID_MEANING.get(gpu.last_xid, "see NVIDIA Xid catalog")
        out.append(Finding(severity=xid_severity(gpu.last_xid), object=obj, code=f"xid{gpu.last_xid}", message=f"GPU {gpu.index} Xid {gpu.last_xid}: {meaning}"))
    if gpu.ecc_uncorrected_volatile:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="ecc_uncorrected", message=f"GPU {gpu.index}: {gpu.ecc_uncorrected_volatile} uncorrectable ECC errors since driver load"))
    elif gpu.ecc_corrected_volatile is not None and gpu.ecc_corrected_volatile >= t.ecc_corrected_warn:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ecc_corrected", message=f"GPU {gpu.index}: {gpu.ecc_corrected_volatile} corrected ECC errors"))
    if gpu.remap_failure:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="remap_failure", message=f"GPU {gpu.index} row remapping failed (RMA candidate)"))
    elif gpu.remap_pending:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="remap_pending", message=f"GPU {gpu.index} row remap pending: GPU reset needed"))
    if gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_crit_c:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="temp", message=f"GPU {gpu.index} at {gpu.temp_c:.0f} °C"))
    elif gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_warn_c:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="temp", message=f"GPU {gpu.index} at {gpu.temp_c:.0f} °C"))
    if gpu.hbm_temp_c is not None and gpu.hbm_temp_c >= t.hbm_temp_warn_c:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="hbm_temp", message=f"GPU {gpu.index} HBM at {gpu.hbm_temp_c:.0f} °C"))
    if gpu.thermal_throttled:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="thermal_throttle", message=f"GPU {gpu.index} thermal throttling: " + ", ".join(gpu.throttle_names())))
    if (gpu.pcie_width_current is not None and gpu.pcie_width_max and gpu.util_pct
            and gpu.pcie_width_current < gpu.pcie_width_max):
        out.append(Finding(severity=Severity.INFO, object=obj, code="pcie_width", message=f"GPU {gpu.index} PCIe x{gpu.pcie_width_current} of x{gpu.pcie_width_max} under load"))
    return out


def fabric_finding(gpu: Gpu) -> Finding:
    """Fabric registration not completed, or completed with an error (FACTS §8, NVSentinel's rule):
    CUDA jobs on the GPU hang although every other reading looks healthy."""
    if gpu.fabric_state == "Not Started":
        why = "not started (is nvidia-fabricmanager running?)"
    elif gpu.fabric_state == "In Progress":
        why = "stuck in progress (registration with Fabric Manager did not complete)"
    elif gpu.fabric_state == "Completed":
        why = f"completed with an error: {gpu.fabric_status}"
    else:
        why = f"state {gpu.fabric_state}" + (f", status {gpu.fabric_status}" if gpu.fabric_status else "")
    return Finding(severity=Severity.CRITICAL, object=f"gpu/{gpu.node}/{gpu.index}", code="fabric",
                   message=f"GPU {gpu.index} NVLink fabric {why}: CUDA jobs on it hang")


_SXM_NAME = re.compile(r"SXM|HBM3|^NVIDIA [HB]\d{3}$")  # H100 SXM: "NVIDIA H100 80GB HBM3"; H200/B200 SXM


def nvlink_expected(gpu: Gpu, peers_linked: bool = False) -> bool:
    """Whether the GPU should have NVLinks up: an SXM part (by name or because it registers with an
    NVLink fabric), or a GPU whose peers on the node have links up."""
    if peers_linked or (gpu.fabric_state is not None and gpu.fabric_state != "Not Supported"):
        return True
    return bool(gpu.model and _SXM_NAME.search(gpu.model))


def nvlink_findings(gpu: Gpu, peers_linked: bool = False) -> list[Finding]:
    """A link down, or CRC/replay/recovery counts rising since the previous read (unknown = nothing).

    "All links are inActive" is a fault only where links are expected (:func:`nvlink_expected`); on a
    PCIe card without a bridge it is what nvidia-smi always says, and "does not have NVLink" never is."""
    obj = f"gpu/{gpu.node}/{gpu.index}"
    if gpu.nvlink_state == "inactive" and nvlink_expected(gpu, peers_linked):
        return [Finding(severity=Severity.ERROR, object=obj, code="nvlink_inactive",
                        message=f"GPU {gpu.index}: all NVLinks inactive on an NVLink (SXM) GPU: "
                                "its traffic falls back to PCIe")]
    if not gpu.nvlinks:
        return []
    out: list[Finding] = []
    down = [link.link for link in gpu.nvlinks if link.up is False]
    if down:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="nvlink_down",
                           message=f"GPU {gpu.index}: NVLink {', '.join(map(str, down))} down"))
    rising = [f"link {link.link} " + " ".join(f"{k}+{v}" for k, v in sorted(link.deltas.items()) if v > 0)
              for link in gpu.nvlinks if any(v > 0 for v in link.deltas.values())]
    if rising:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="nvlink_errors",
                           message=f"GPU {gpu.index}: NVLink errors rising: " + "; ".join(rising)))
    return out


def nvswitch_findings(switch: NvSwitch) -> list[Finding]:
    """The worst recent SXid of one NVSwitch (fatal ones critical, FACTS §8)."""
    worst = switch.worst
    if worst is None:
        return []
    meaning = SXID_MEANING.get(worst.sxid) or sxid_class(worst.sxid, worst.fatal)
    more = len(switch.sxid_events) - 1
    return [Finding(severity=worst.severity, object=f"nvswitch/{switch.node}/{switch.name}", code=f"sxid{worst.sxid}",
                    message=f"{switch.name} ({switch.pci_bus_id}) SXid {worst.sxid}: {meaning} — {worst.message}"
                            + (f" (+{more} more SXid lines)" if more else ""))]


def pcie_gen_findings(gpu: Gpu) -> list[Finding]:
    """PCIe generation below the GPU's maximum while it works (idle GPUs downclock the link)."""
    if (gpu.pcie_gen_current is None or not gpu.pcie_gen_max or gpu.pcie_gen_current >= gpu.pcie_gen_max
            or not gpu.util_pct):
        return []
    width = (f" x{gpu.pcie_width_current} of x{gpu.pcie_width_max}"
             if gpu.pcie_width_current is not None and gpu.pcie_width_max else "")
    return [Finding(severity=Severity.WARNING, object=f"gpu/{gpu.node}/{gpu.index}", code="pcie_gen",
                    message=f"GPU {gpu.index}: PCIe gen{gpu.pcie_gen_current} of gen{gpu.pcie_gen_max}{width} under load")]


_LIVE_JOB_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "CONFIGURING"})


def gpu_process_findings(snapshot: ClusterSnapshot, gpu: Gpu) -> list[Finding]:
    """A process on a GPU that no job owns: no Slurm job or pod in its cgroup, or a Slurm job that is
    not running there. Only where a scheduler knows the node (otherwise nobody could own it)."""
    if not gpu.processes:
        return []
    node = snapshot.nodes.get(gpu.node)
    if node is None or (node.slurm is None and node.k8s is None):
        return []
    live = {j.job_id for j in snapshot.jobs if j.state in _LIVE_JOB_STATES}
    stray = []
    for p in gpu.processes:
        if p.pod is not None:
            continue
        if p.slurm_job_id is not None and (not snapshot.jobs or (p.slurm_job_id.isdigit()
                                                                 and int(p.slurm_job_id) in live)):
            continue
        owner = f"job {p.slurm_job_id} (not running)" if p.slurm_job_id else "no job"
        stray.append(f"pid {p.pid} {p.user or '?'} {p.command or ''} [{owner}]".strip())
    if not stray:
        return []
    return [Finding(severity=Severity.WARNING, object=f"gpu/{gpu.node}/{gpu.index}", code="gpu_stray_process",
                    message=f"GPU {gpu.index}: process that no job owns: " + "; ".join(stray[:3]))]


# Services whose failure makes the node's GPUs unusable (NVSwitch systems need the fabric manager).
_CRITICAL_SERVICES = frozenset({"nvidia-fabricmanager"})


def service_findings(service: ServiceState) -> list[Finding]:
    obj = f"service/{service.node}:{service.name}"
    if service.status is ServiceStatus.FAILED:
        severity = Severity.CRITICAL if service.name in _CRITICAL_SERVICES else Severity.ERROR
        last = (service.detail or "").strip().splitlines()
        return [Finding(severity=severity, object=obj, code="service_failed",
                        message=f"{service.name} failed" + (f": {last[-1][:160]}" if last else ""))]
    if service.status is ServiceStatus.INACTIVE:
        return [Finding(severity=Severity.WARNING, object=obj, code="service_inactive",
                        message=f"{service.name} not running")]
    return []


_LINK_ERRORS = frozenset(LINK_ERROR_COUNTERS)


def _link_errors_moved(deltas: dict[str, int]) -> bool:
    """Whether a link error counter (link_downed among them) rose since the last read. Data counters
    move on every busy port: the usual answer, no error counter in the deltas at all, is found in C."""
    return bool(deltas) and not _LINK_ERRORS.isdisjoint(deltas) and any(deltas.get(k, 0) > 0 for k in LINK_ERROR_COUNTERS)


def ib_findings(port: IbPort) -> list[Finding]:
    if ((port.state is None or port.state == "ACTIVE") and not port.flaps and not port.degraded_rate
            and not _link_errors_moved(port.deltas)):
        return []  # the common case, tested first: a healthy port whose error counters did not move
    obj = f"ib/{port.node}/{port.device}:{port.port}"
    name = f"{port.device} port {port.port}"  # the component, first in every message
    out: list[Finding] = []
    if port.state is not None and port.state != "ACTIVE":
        out.append(Finding(severity=Severity.ERROR, object=obj, code="ib_down", message=f"{name} {port.state} / {port.phys_state}"))
    if port.degraded_rate:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ib_rate", message=f"{name} running at {port.rate_text or port.rate_gbps} (expected {port.max_rate_gbps:.0f} Gb/s)"))
    if port.deltas.get("link_downed", 0) > 0:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="ib_flap", message=f"{name} link went down {port.deltas['link_downed']}× since last read"))
    elif port.link_errors_rising:
        rising = ", ".join(f"{k}+{v}" for k, v in sorted(port.deltas.items()) if v > 0 and k != "port_xmit_wait")
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ib_errors", message=f"{name} link errors rising: {rising}"))
    if port.flaps and not port.deltas.get("link_downed"):
        when = time.strftime("%H:%M:%S", time.localtime(port.last_down)) if port.last_down is not None else "?"
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ib_flapped",
                           message=f"{name} link flapped {port.flaps}× (last down {when})"))
    return out


_MOUNT_SEVERITY = {
    MountState.HUNG: Severity.CRITICAL,
    MountState.MISSING: Severity.ERROR,
    MountState.READ_ONLY: Severity.ERROR,
    MountState.DEGRADED: Severity.WARNING,
    MountState.SLOW: Severity.WARNING,
}


def mount_findings(mount: Mount, ceph: Mapping[str, CephHealth] | None = None) -> list[Finding]:
    """A mount that is not ok. A CephFS mount tied to a configured Ceph cluster (``ceph``: the snapshot's, see
    :func:`hpctui.findings.cephfs.cluster_of`) names the cluster and its health now:
    ``ceph /scratch hung: ... — cluster ceph/prod HEALTH_WARN MDS_SLOW_REQUEST``."""
    severity = _MOUNT_SEVERITY.get(mount.state)
    if severity is None:
        return []
    latency = f" ({mount.latency_ms:.0f} ms)" if mount.latency_ms is not None else ""
    detail = f": {mount.detail}" if mount.detail else ""
    cluster = ""
    if ceph and mount.fstype in CEPH_FSTYPES:
        health = cluster_of(mount, ceph)
        if health is not None:
            cluster = f" — cluster {cluster_words(health)}"
    return [Finding(severity=severity, object=f"mount/{mount.node}:{mount.target}", code=f"mount_{mount.state.value}",
                    message=f"{mount.fstype} {mount.target} {mount.state.value}{latency}{detail}{cluster}")]


def node_state_findings(node: Node) -> list[Finding]:
    obj = f"node/{node.name}"
    out: list[Finding] = []
    if node.slurm is not None:
        s = node.slurm
        state = s.display_state
        if s.base_state in ("DOWN", "ERROR", "INVAL") or "NOT_RESPONDING" in s.flags or "FAIL" in s.flags:
            out.append(Finding(severity=Severity.ERROR, object=obj, code="slurm_down", message=f"Slurm {state}: {s.reason or 'no reason'}"))
        elif "DRAIN" in s.flags:
            who = f" by {s.reason_user}" if s.reason_user else ""
            out.append(Finding(severity=Severity.WARNING, object=obj, code="slurm_drain", message=f"Slurm {state}{who}: {s.reason or 'no reason'}"))
    if node.k8s is not None:
        ready = node.k8s.ready
        if ready != "True":
            msg = node.k8s.condition_messages.get("Ready", "")
            out.append(Finding(severity=Severity.ERROR, object=obj, code="k8s_notready", message=f"K8s Ready={ready} {msg}".strip()))
        elif node.k8s.unschedulable:
            out.append(Finding(severity=Severity.INFO, object=obj, code="k8s_cordoned", message="K8s cordoned"))
        for cond in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"):
            if node.k8s.conditions.get(cond) == "True":
                out.append(Finding(severity=Severity.WARNING, object=obj, code=cond, message=f"K8s {cond}"))
    return out


# Per-node platform pods (DaemonSets): the GPU Operator's components, CSI node plugins and the
# NVIDIA Network Operator's. One that is not Running and Ready is a problem of its node.
PLATFORM_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("nvidia-driver", "GPU driver"), ("nvidia-container-toolkit", "container toolkit"),
    ("nvidia-device-plugin", "device plugin"), ("nvidia-dcgm-exporter", "dcgm-exporter"),
    ("nvidia-dcgm", "DCGM"), ("nvidia-mig-manager", "MIG manager"), ("gpu-feature-discovery", "GFD"),
    ("nvidia-operator-validator", "operator validator"), ("mofed", "MOFED driver"),
    ("rdma-shared-dp", "RDMA device plugin"), ("sriov-device-plugin", "SR-IOV device plugin"),
    ("nv-ipam", "nv-ipam"), ("csi", "CSI node plugin"),
)


def platform_component(pod: Pod) -> str | None:
    """The platform component a DaemonSet pod belongs to, or None for ordinary pods."""
    if pod.owner_kind != "DaemonSet":
        return None
    owner = (pod.owner_name or pod.name).lower()
    for prefix, label in PLATFORM_COMPONENTS:
        if owner.startswith(prefix) or (prefix == "csi" and "csi" in owner and "node" in owner):
            return label
    return None


def platform_pod_findings(pod: Pod) -> list[Finding]:
    component = platform_component(pod)
    if component is None or pod.node is None:
        return []
    if pod.phase == "Running" and pod.ready is not False and not pod.reason:
        return []
    why = pod.reason or ("not Ready" if pod.phase == "Running" else pod.phase)
    severity = Severity.ERROR if pod.phase in ("Failed", "Unknown") or pod.reason else Severity.WARNING
    return [Finding(severity=severity, object=f"pod/{pod.namespace}/{pod.name}", code="platform_pod",
                    message=f"{component} pod {pod.namespace}/{pod.name}: {why}")]


def node_findings(snapshot: ClusterSnapshot, name: str, t: Thresholds) -> list[Finding]:
    """Everything wrong with one node, worst first."""
    out: list[Finding] = []
    node = snapshot.nodes.get(name)
    if node is not None:
        out.extend(node_state_findings(node))
    gpus = snapshot.gpus.get(name, ())
    linked = sum(1 for g in gpus if any(link.up for link in g.nvlinks))
    for gpu in gpus:
        out.extend(gpu_findings(gpu, t))
        out.extend(nvlink_findings(gpu, peers_linked=linked > 0))
        out.extend(pcie_gen_findings(gpu))
        out.extend(gpu_process_findings(snapshot, gpu))
    for service in snapshot.services.get(name, ()):
        out.extend(service_findings(service))
    for switch in snapshot.nvswitches.get(name, ()):
        out.extend(nvswitch_findings(switch))
    for port in snapshot.ib.get(name, ()):
        out.extend(ib_findings(port))
    for mount in snapshot.mounts.get(name, ()):
        out.extend(mount_findings(mount, snapshot.ceph))
    if snapshot.pods:
        from hpctui.findings.correlate import workload_index  # one pods-by-node index per snapshot

        for pod in workload_index(snapshot).pods_on(name):
            out.extend(platform_pod_findings(pod))
    probe = snapshot.probes.get(name)
    if probe is not None:
        out.extend(probe_findings(probe))
    if snapshot.reservations:
        from hpctui.findings.scheduler import reservation_findings

        out.extend(reservation_findings(snapshot, name, t))
    alerts = snapshot.alerts.get(name) if snapshot.alerts else None
    if alerts:
        out.extend(alert_findings(alerts, out))
    out.sort(key=lambda f: f.severity, reverse=True)
    return out


def alert_findings(alerts: Sequence[Alert], own: Sequence[Finding]) -> list[Finding]:
    """The site's firing alerts on one node as findings (source "alertmanager"), except those that mean the same
    as one of hpctui's own findings on the node (``Alert.means``): one problem is shown once. Silenced and
    inhibited alerts page nobody and are not findings (the node panel lists them)."""
    codes = [f.code for f in own]
    out = []
    for a in alerts:
        if not a.firing or any(c.startswith(prefix) for prefix in a.means for c in codes):
            continue
        obj = f"gpu/{a.node}/{a.gpu}" if a.gpu is not None else f"node/{a.node}"
        what = f": {a.summary}" if a.summary else ""
        out.append(Finding(severity=a.severity, object=obj, code="alert", message=f"alert {a.name}{what} (Alertmanager)"))
    return out


def probe_findings(status: ProbeStatus) -> list[Finding]:
    """A node a node-probing source (SSH) cannot read: why, and when it is tried again."""
    obj = f"node/{status.node}"
    if status.reachable:
        if status.late_probes:
            return [Finding(severity=Severity.WARNING, object=obj, code="probe_late",
                            message=f"probe late: {', '.join(status.late_probes)}")]
        return []
    if status.last_ok is None and status.next_retry is None and (status.error or "").startswith("connecting"):
        return [Finding(severity=Severity.INFO, object=obj, code="probe_pending", message=status.error or "connecting")]
    retry = ""
    if status.next_retry is not None:
        retry = f" (next try {time.strftime('%H:%M:%S', time.localtime(status.next_retry))})"
    return [Finding(severity=Severity.ERROR, object=obj, code="probe_unreachable",
                    message=f"node probe failed: {status.error or 'no fresh record'}{retry}")]


def node_severity(snapshot: ClusterSnapshot, name: str, t: Thresholds) -> Severity:
    return max((f.severity for f in node_findings(snapshot, name, t)), default=Severity.OK)


def all_findings(snapshot: ClusterSnapshot, t: Thresholds) -> list[Finding]:
    """Every finding in the cluster, worst first (for the alert list and reports); a suspect leaf switch
    (hpctui.findings.fabric) first among equals."""
    from hpctui.findings.fabric import switch_findings  # it builds on this module's Finding

    names = list(snapshot.nodes)
    names.extend(n for n in snapshot.gpus if n not in snapshot.nodes)
    out = [*switch_findings(snapshot, t), *(f for n in names for f in node_findings(snapshot, n, t))]
    from hpctui.findings.pfs import quota_findings, running_jobs_by_user, target_findings  # cross-node
    from hpctui.findings.scheduler import controller_findings

    out.extend(f for found in target_findings(snapshot, t).values() for f in found)
    if snapshot.quotas:  # one per user over quota with running jobs
        out.extend(f for found in quota_findings(snapshot.quotas, running_jobs_by_user(snapshot)).values()
                   for f in found)
    from hpctui.findings.volumes import volume_findings  # per storage class (CSI driver)

    out.extend(f for found in volume_findings(snapshot, t).values() for f in found)
    from hpctui.findings.storage import storage_findings  # one group per Ceph cluster and S3 endpoint

    out.extend(f for found in storage_findings(snapshot).values() for f in found)
    out.extend(controller_findings(snapshot, t))
    out.sort(key=lambda f: f.severity, reverse=True)
    return out
