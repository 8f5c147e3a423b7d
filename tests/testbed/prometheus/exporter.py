"""A loopback exporter for the Prometheus test bed: dcgm-exporter and node_exporter text for
every node of the demo simulator (hpctui.sim), so values move and incidents appear.

Label sets follow the real recordings in tests/fixtures/prometheus: dcgm-exporter's
``gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION`` (+ ``container,
namespace, pod, pod_uid`` on GPUs a pod holds; ``GPU_I_PROFILE, GPU_I_ID`` on MIG instances),
node_exporter's ``node_infiniband_*{device,port}``, ``node_filesystem_*{device,fstype,mountpoint}``.
Node-exporter series carry ``instance="<node>:9100"`` (Prometheus scrapes this one target with
``honor_labels: true``, as if it were one exporter per node).

Test knobs (attributes, read on every scrape): ``absent`` nodes, ``xid`` overrides,
``nan_nodes`` (NaN/+Inf values), ``duplicate_nodes`` (every GPU series twice, from a second
``instance``), ``unlabelled_nodes`` (series without ``gpu``), ``fail`` (HTTP 500).

Run standalone: ``python exporter.py --nodes 1024 --port 9400`` (the benchmark does).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from hpctui.model import Gpu, SourceResult
from hpctui.sim import SimCluster
from hpctui.sim.topology import H200

DRIVER = "550.90.07"
IB_NAMES = {  # sysfs counter -> node_exporter family (bytes for the data counters)
    "link_downed": "node_infiniband_link_downed_total",
    "link_error_recovery": "node_infiniband_link_error_recovery_total",
    "port_rcv_errors": "node_infiniband_port_errors_received_total",
    "port_rcv_switch_relay_errors": "node_infiniband_port_discards_received_total",
    "port_xmit_discards": "node_infiniband_port_discards_transmitted_total",
    "port_rcv_constraint_errors": "node_infiniband_port_constraint_errors_received_total",
    "port_xmit_constraint_errors": "node_infiniband_port_constraint_errors_transmitted_total",
    "port_xmit_wait": "node_infiniband_port_transmit_wait_total",
    "port_rcv_data": "node_infiniband_port_data_received_bytes_total",
    "port_xmit_data": "node_infiniband_port_data_transmitted_bytes_total",
    "port_rcv_packets": "node_infiniband_port_packets_received_total",
    "port_xmit_packets": "node_infiniband_port_packets_transmitted_total",
}
IB_STATE_ID = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4}
IB_PHYS_ID = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5, "LinkErrorRecovery": 6}
CPUS = 8  # node_cpu_seconds_total{mode="idle"} for 8 CPUs (a real node has one per core and mode)


def _f(v: float | int | bool | None) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "1" if v else "0"
    return f"{v:g}" if isinstance(v, float) else str(v)


class SimExporter:
    def __init__(self, size: int = 8, seed: int = 0, tick_s: float = 1.0) -> None:
        self.t0 = time.time()
        self.sim = SimCluster(size=size, seed=seed, start_time=self.t0)
        self.tick_s = tick_s
        self.lock = threading.Lock()
        self.absent: set[str] = set()
        self.xid: dict[tuple[str, int], int] = {}
        self.nan_nodes: set[str] = set()
        self.duplicate_nodes: set[str] = set()
        self.unlabelled_nodes: set[str] = set()
        self.fail = False
        self.scrapes = 0
        self._stop = threading.Event()
        self._text = b""
        self._text_t = 0.0
        self._pod_of: dict[tuple[str, int], tuple[str, str]] = {}
        for sp in self.sim.sim_pods:
            p = sp.pod
            if p.node is None or p.phase != "Running" or not p.gpus_requested:
                continue
            used = sum(1 for (n, _i) in self._pod_of if n == p.node)
            for i in range(used, min(8, used + p.gpus_requested)):
                self._pod_of[(p.node, i)] = (p.namespace, p.name)

    def touch(self) -> None:
        """Knobs changed: render afresh now, so the next scrape serves the change."""
        self.refresh()

    def refresh(self) -> None:
        with self.lock:
            now = time.time()
            self.sim.advance(now)
            self._text = self._render(now).encode()
            self._text_t = now

    def run_ticks(self) -> None:
        """Render every ``tick_s`` in this (background) thread: a scrape only copies bytes, so a
        loaded machine does not make scrapes time out."""
        while not self._stop.wait(self.tick_s):
            self.refresh()

    def stop(self) -> None:
        self._stop.set()

    def pod_on(self, node: str, index: int) -> tuple[str, str] | None:
        return self._pod_of.get((node, index))

    # -- text --------------------------------------------------------------------------
    def render(self) -> bytes:
        if not self._text:
            self.refresh()
        with self.lock:
            self.scrapes += 1
            return self._text

    def _render(self, t: float) -> str:
        fam: dict[str, list[str]] = defaultdict(list)
        res = self.sim.to_result(t)
        for spec in self.sim.specs:
            name = spec.name
            if name in self.absent:
                continue
            for gpu in (res.gpus or {}).get(name, ()):
                self._gpu(fam, spec.name, gpu, spec.gpu_model == H200, t)
            self._node(fam, name, res, t)
        out = []
        for metric, lines in fam.items():
            kind = "counter" if metric.endswith("_total") and metric.startswith("node_") else "gauge"
            out.append(f"# TYPE {metric} {kind}")
            out.extend(lines)
        return "\n".join(out) + "\n"

    def _gpu(self, fam: dict[str, list[str]], node: str, g: Gpu, new_names: bool, t: float) -> None:
        i = g.index
        base = (f'gpu="{i}",UUID="{g.uuid}",pci_bus_id="{g.pci_bus_id}",device="nvidia{i}",'
                f'modelName="{g.model}",Hostname="{node}",DCGM_FI_DRIVER_VERSION="{DRIVER}"')
        if node in self.unlabelled_nodes:
            base = base.replace(f'gpu="{i}",', "")
        pod = self.pod_on(node, i)
        labels = base + (f',container="main",namespace="{pod[0]}",pod="{pod[1]}",pod_uid=""' if pod else "")
        label_sets = [labels]
        if node in self.duplicate_nodes:
            label_sets.append(labels + ',instance="dcgm-dup:9400"')
        xid = self.xid.get((node, i), g.last_xid or 0)
        nan = node in self.nan_nodes
        phase = self.sim.phase[node] + i
        bw = phase * 1e12 + (t - self.sim.t0) * (3e9 if g.util_pct else 1e6)
        values: dict[str, float | int | bool | None] = {
            "DCGM_FI_DEV_XID_ERRORS": xid,
        }
        if not g.lost:
            values.update({
                "DCGM_FI_DEV_GPU_UTIL": g.util_pct, "DCGM_FI_DEV_MEM_COPY_UTIL": g.mem_util_pct,
                "DCGM_FI_DEV_GPU_TEMP": float("nan") if nan else g.temp_c, "DCGM_FI_DEV_MEMORY_TEMP": g.hbm_temp_c,
                "DCGM_FI_DEV_FB_USED": g.memory_used_mib,
                "DCGM_FI_DEV_FB_FREE": None if g.memory_total_mib is None or g.memory_used_mib is None
                else g.memory_total_mib - g.memory_used_mib,
                "DCGM_FI_DEV_POWER_USAGE": float("inf") if nan else g.power_w, "DCGM_FI_DEV_SM_CLOCK": g.sm_clock_mhz,
                "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": g.ecc_corrected_volatile,
                "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": g.ecc_uncorrected_volatile,
                "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": g.ecc_corrected_aggregate,
                "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": g.ecc_uncorrected_aggregate,
                "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": g.remapped_correctable,
                "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": g.remapped_uncorrectable,
                "DCGM_FI_DEV_ROW_REMAP_FAILURE": g.remap_failure, "DCGM_FI_DEV_ROW_REMAP_PENDING": g.remap_pending,
                ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS" if new_names else "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"):
                    g.throttle_reasons,
                "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": int(bw),
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE": None if g.util_pct is None else round(g.util_pct / 100, 3),
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": None if g.util_pct is None else round(g.util_pct / 130, 3),
            })
        for metric, v in values.items():
            text = _f(v)
            if text is not None:
                for ls in label_sets:
                    fam[metric].append(f"{metric}{{{ls}}} {text}")
        for m in g.mig_instances:  # per GPU instance; device-level power repeated per GI (FACTS §1)
            gi = f'{base},GPU_I_PROFILE="{m.profile}",GPU_I_ID="{m.gi_id}"'
            free = None if m.memory_total_mib is None or m.memory_used_mib is None else m.memory_total_mib - m.memory_used_mib
            for metric, v in (("DCGM_FI_DEV_FB_USED", m.memory_used_mib), ("DCGM_FI_DEV_FB_FREE", free),
                              ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", m.engine_active), ("DCGM_FI_DEV_XID_ERRORS", 0),
                              ("DCGM_FI_DEV_POWER_USAGE", g.power_w)):
                text = _f(v)
                if text is not None:
                    fam[metric].append(f"{metric}{{{gi}}} {text}")

    def _node(self, fam: dict[str, list[str]], node: str, res: SourceResult, t: float) -> None:
        inst = f'instance="{node}:9100"'
        el = t - self.sim.t0
        phase = self.sim.phase[node]
        for port in (res.ib or {}).get(node, ()):
            ls = f'{inst},device="{port.device}",port="{port.port}"'
            fam["node_infiniband_state_id"].append(f"node_infiniband_state_id{{{ls}}} {IB_STATE_ID.get(port.state or '', 0)}")
            fam["node_infiniband_physical_state_id"].append(
                f"node_infiniband_physical_state_id{{{ls}}} {IB_PHYS_ID.get(port.phys_state or '', 0)}")
            if port.rate_gbps is not None:
                fam["node_infiniband_rate_bytes_per_second"].append(
                    f"node_infiniband_rate_bytes_per_second{{{ls}}} {port.rate_gbps * 1e9 / 8:.0f}")
            for counter, metric in IB_NAMES.items():
                v = port.counters.get(counter)
                if v is not None:
                    fam[metric].append(f"{metric}{{{ls}}} {v * 4 if counter.endswith('_data') else v}")
        busy = 0.3 + 0.25 * (1 + math.sin(el / 60 + phase))
        fam["node_load1"].append(f"node_load1{{{inst}}} {busy * 100:.2f}")
        fam["node_load5"].append(f"node_load5{{{inst}}} {busy * 95:.2f}")
        fam["node_load15"].append(f"node_load15{{{inst}}} {busy * 90:.2f}")
        fam["node_memory_MemTotal_bytes"].append(f"node_memory_MemTotal_bytes{{{inst}}} {2_000_000 * 1048576}")
        fam["node_memory_MemAvailable_bytes"].append(
            f"node_memory_MemAvailable_bytes{{{inst}}} {int((1 - busy / 2) * 2_000_000) * 1048576}")
        fam["node_memory_SwapTotal_bytes"].append(f"node_memory_SwapTotal_bytes{{{inst}}} 0")
        fam["node_memory_SwapFree_bytes"].append(f"node_memory_SwapFree_bytes{{{inst}}} 0")
        for c in range(CPUS):
            idle = 1e6 * phase + el * (1 - busy)
            fam["node_cpu_seconds_total"].append(f'node_cpu_seconds_total{{{inst},cpu="{c}",mode="idle"}} {idle:.2f}')
        fam["node_disk_io_time_seconds_total"].append(
            f'node_disk_io_time_seconds_total{{{inst},device="nvme0n1"}} {1e5 * phase + el * busy / 3:.3f}')
        for metric, rate in (("node_network_receive_bytes_total", 1.2e8), ("node_network_transmit_bytes_total", 0.9e8)):
            fam[metric].append(f'{metric}{{{inst},device="eth0"}} {1e12 * phase + el * rate * busy:.0f}')
        for metric in ("node_network_receive_errs_total", "node_network_transmit_errs_total"):
            fam[metric].append(f'{metric}{{{inst},device="eth0"}} 0')
        mounts = (res.mounts or {}).get(node, ())
        fs = [("/", "/dev/nvme0n1p2", "ext4", False, 0)] + [
            (m.target, m.source or "none", m.fstype, False, 1 if m.state.value == "hung" else 0) for m in mounts]
        for mp, dev, fstype, ro, err in fs:
            ls = f'{inst},device="{dev}",fstype="{fstype}",mountpoint="{mp}"'
            size = 4e14 if mp != "/" else 1.9e12
            fam["node_filesystem_size_bytes"].append(f"node_filesystem_size_bytes{{{ls}}} {size:.0f}")
            fam["node_filesystem_avail_bytes"].append(f"node_filesystem_avail_bytes{{{ls}}} {size * 0.4:.0f}")
            fam["node_filesystem_readonly"].append(f"node_filesystem_readonly{{{ls}}} {int(ro)}")
            fam["node_filesystem_device_error"].append(f"node_filesystem_device_error{{{ls}}} {err}")


class _Handler(BaseHTTPRequestHandler):
    exporter: SimExporter

    def do_GET(self) -> None:
        if self.exporter.fail:
            self.send_error(500, "exporter told to fail")
            return
        body = self.exporter.render()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a scrape given up by Prometheus: not news
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def serve(exporter: SimExporter, port: int = 0) -> ThreadingHTTPServer:
    """Serve on 127.0.0.1:``port`` (0 = a free one) in a daemon thread; ``server.shutdown()`` stops it."""
    handler = type("Handler", (_Handler,), {"exporter": exporter})
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    exporter.refresh()
    threading.Thread(target=exporter.run_ticks, name="sim-exporter-ticks", daemon=True).start()
    threading.Thread(target=server.serve_forever, name="sim-exporter", daemon=True).start()
    return server


class _FilesHandler(BaseHTTPRequestHandler):
    files: dict[str, bytes]

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_files(files: dict[str, bytes], port: int = 0) -> ThreadingHTTPServer:
    """Serve recorded expositions as they are, ``files[path]`` at ``http://127.0.0.1:port<path>``
    (one scrape job each, see ``PromLab(scrape_configs=...)``); ``server.shutdown()`` stops it."""
    handler = type("FilesHandler", (_FilesHandler,), {"files": dict(files)})
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="recorded-exporter", daemon=True).start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tick-s", type=float, default=1.0)
    args = ap.parse_args()
    server = serve(SimExporter(size=args.nodes, tick_s=args.tick_s), args.port)
    print(server.server_address[1], flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
