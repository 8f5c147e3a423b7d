"""Node-side shims for probe tests and the SSH test bed.

``build_shim_root(root, nodes)`` writes, per node, the files the fake tools in ``bin/`` print:
nvidia-smi outputs, a /sys/class/infiniband tree, /proc files (mountinfo, load, memory, disks,
NICs, GPU processes), service states and journals, a kernel log. Everything is built from the
real recorded outputs in ``tests/fixtures/probes`` (copied from ../shared/samples), varied per
node (GPU UUIDs, bus ids, temperatures, utilisation) and per :class:`NodeSpec` fault.

The probe finds its node with ``ProbeOptions(shim_root=root)``: the node is
``$HPCTUI_SHIM_NODE``, else the server address of ``$SSH_CONNECTION`` (what sshd sets: the
dialled 127.x.y.z), else ``_default``. So an sshd serving many loopback addresses gives each
address its own node directory, named by that address.

Synthetic pieces (no real recording available here) are marked in the code: ``nvlink -e``
lines, ``mig -lci`` table, fabric-manager journal lines, the lustre/beegfs mountinfo lines and
``lfs check servers`` lines (in their documented formats, FACTS §5), and the fabric-fail cells (the
values FACTS §8 records from the field, in the real row).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
SAMPLES = HERE.parents[1] / "fixtures" / "probes"
MIG_SAMPLES = HERE.parents[1] / "fixtures" / "mig"
IB_SAMPLES = HERE.parents[1] / "fixtures" / "ib"  # ibnetdiscover / iblinkinfo (real recordings)
CHECK_SAMPLES = HERE.parents[1] / "fixtures" / "checks"  # dcgmi -j, all_reduce_perf, nhc (real recordings)
PFS_SAMPLES = HERE.parents[1] / "fixtures"  # lustre/ and beegfs/ (real recordings)

FAULTS = frozenset({
    "hang-nvidia-smi",  # nvidia-smi never answers (sleeps): every GPU probe is late
    "hang-journalctl",  # the kernel-log probe is late
    "garbage",  # --query-gpu prints binary garbage (NUL, invalid UTF-8, escape codes)
    "cut-once",  # the next record is cut after 300 bytes and the loop killed (stream dies once)
    "xid",  # the kernel log holds real Xid 119 lines for GPU 4 (0000:9b:00)
    "ib-down",  # mlx5_4 port 1 is DOWN / Disabled
    "mount-hang",  # stat -f on /mnt/nfs/test sleeps (killable: timeout ends it -> hung)
    "mount-stuck",  # stat -f on /mnt/nfs/test cannot be reaped in time (like D state -> still stuck)
    "mount-slow",  # stat -f on /lustre/scratch takes 0.8 s
    "mount-stale",  # stat -f on /mnt/nfs/test-dupe fails: Stale file handle
    "mount-ro",  # /lustre/scratch is mounted read-only
    "lfs-inactive",  # lfs check servers reports an inactive OST
    "ost-full",  # lfs df shows scratch-OST0006 at 97 %
    "ost-inactive",  # lfs df shows scratch-OST0001 as "inactive device"
    "ost-evicted",  # lctl: this client's import of scratch-OST0003 is EVICTED (lfs df still lists it)
    "beegfs-offline",  # beegfs-ctl --listtargets: storage targets 3011/3012 Offline (the real recording)
    "svc-failed",  # nvidia-fabricmanager failed, with journal lines
    "pcie-downshift",  # GPU 2 runs at PCIe gen 3 x8 under load (max gen 5 x16)
    "nvlink-down",  # GPU 1 link 3 is <inactive>, link 0 has CRC errors
    "stray-process",  # a process on GPU 3 that no Slurm job or pod owns
    "mig-fail",  # `nvidia-smi mig -i 3 -cgi …` fails: Insufficient Resources (the MIG wizard's failure path)
    "sxid",  # the kernel log holds real NVSwitch SXid 20034 lines (3 switches) and the real Xid 79 before them
    "fabric-fail",  # GPU 5's fabric registration is stuck ("In Progress"), GPU 6's failed ("Insufficient Resources")
})

# DGX/HGX H100 style bus ids; GPU 4 is 0000:9b:00 like the real Xid 119 sample ("GPU4").
BUS_IDS = ("00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
           "00000000:9B:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0")

VARIANTS = ("h100", "h200", "h200-mig", "cpu")


@dataclass
class NodeSpec:
    variant: str = "h100"  # h100 (8 GPUs), h200 (8 GPUs), h200-mig (1 GPU, real MIG outputs), cpu
    faults: set[str] = field(default_factory=set)
    services: Mapping[str, str] | None = None  # unit -> active|inactive|failed; default below
    moving: bool = False  # GPU utilisation, temperature, power and memory vary on every nvidia-smi call

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r} not in {VARIANTS}")
        unknown = set(self.faults) - FAULTS
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")


DEFAULT_SERVICES = {"nvidia-persistenced": "active", "nvidia-fabricmanager": "active", "nvidia-dcgm": "active",
                    "slurmd": "active"}  # kubelet, containerd: not installed (not-found)


def _sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def _seed(node: str) -> int:
    return int(hashlib.sha256(node.encode()).hexdigest()[:8], 16)


def gpu_uuid(node: str, index: int) -> str:
    h = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _csv_sample(name: str) -> tuple[list[str], list[str]]:
    header, row = _sample(name).splitlines()[:2]
    return header.split(", "), row.split(", ")


def _help_text(header: list[str]) -> str:
    """``--help-query-gpu`` in the driver's layout: a quoted name line, a description, a blank line."""
    out = ['List of valid properties to query for the switch "--query-gpu=":', ""]
    for h in header:
        name = re.sub(r" \[.*\]$", "", h)
        out += [f'"{name}"', f"Shim description of {name}.", ""]
    return "\n".join(out) + "\n"


def _gpu_files(node: str, spec: NodeSpec, d: Path) -> None:
    g = d / "gpu"
    seed = _seed(node)
    if spec.variant == "h200-mig":
        header, base = _csv_sample("nvidia-smi_query-gpu_allfields_h200_drv590.48.01_idle.csv")
        n = 1
    elif spec.variant == "h200":
        header, base = _csv_sample("nvidia-smi_query-gpu_allfields_h200_drv590.48.01_idle.csv")
        n = 8
    else:
        header, base = _csv_sample("nvidia-smi_query-gpu_allfields_h100-80gb-hbm3_drv590.48.01_load.csv")
        n = 8
    col = {re.sub(r" \[.*\]$", "", h): i for i, h in enumerate(header)}
    rows = []
    uuids = [gpu_uuid(node, i) for i in range(n)]
    for i in range(n):
        r = list(base)

        def put(name: str, value: str, r: list[str] = r) -> None:
            r[col[name]] = value

        put("index", str(i))
        put("uuid", uuids[i])
        put("pci.bus_id", "00000000:83:00.0" if spec.variant == "h200-mig" else BUS_IDS[i])
        put("temperature.gpu", str(30 + (seed + 3 * i) % 40))
        if spec.variant == "h100":
            put("utilization.gpu", f"{(seed + 17 * i) % 101} %")
        if spec.variant == "h200-mig":  # the real MIG row of this driver shows utilisation [N/A]
            put("mig.mode.current", "Enabled")
            put("mig.mode.pending", "Enabled")
            for u in ("utilization.gpu", "utilization.memory"):
                put(u, "[N/A]")
        if "fabric-fail" in spec.faults and i in (5, 6) and "fabric.state" in col:
            # the real row's cells are Completed / Success; these two are the failures FACTS §8 records
            put("fabric.state", "In Progress" if i == 5 else "Completed")
            put("fabric.status", "N/A" if i == 5 else "Insufficient Resources")
        if "pcie-downshift" in spec.faults and i == 2:
            put("pcie.link.gen.current", "3")
            put("pcie.link.gen.gpucurrent", "3")
            put("pcie.link.width.current", "8")
            put("utilization.gpu", "97 %")
            put("clocks_event_reasons.active", "0x0000000000000000")
        rows.append(", ".join(r))
    _write(g / "query.csv", ", ".join(header) + "\n" + "\n".join(rows) + "\n")
    _write(g / "help.txt", _help_text(header))
    _write(g / "remap.csv", "".join(f"{u}, 0, 0, No, No\n" for u in uuids))
    model = base[col["name"]]
    if spec.variant == "h200-mig":
        lst = _sample("nvidia-smi_L_h200-mig-enabled_drv590.48.01.txt").replace(
            "GPU-00000000-0000-0000-0000-000000000000", uuids[0])
        _write(g / "L.txt", lst)
        _write(g / "q.txt", _sample("nvidia-smi_q_h200-mig-enabled_drv590.48.01_load.txt"))
        _write(g / "nvlink-s.txt", f"GPU 0: {model} (UUID: {uuids[0]})\n"
                                   "Nvlink queries are not supported for Devices in MIG mode\n")
        _write(g / "nvlink-e.txt", f"GPU 0: {model} (UUID: {uuids[0]})\n"
                                   "Nvlink queries are not supported for Devices in MIG mode\n")
        # SYNTHETIC: -lgi/-lci tables in the driver's layout for the real -L / -q instances above.
        _write(g / "lgi.txt", _lgi([(0, "3g.71gb", 9, 2, "4:4"), (0, "2g.35gb", 14, 3, "0:2"),
                                    (0, "1g.18gb", 19, 9, "2:1"), (0, "1g.18gb", 19, 10, "3:1")]))
        _write(g / "lci.txt", _lci([(0, 2, "1c.3g.71gb", 0, 0, "0:1"), (0, 2, "2c.3g.71gb", 1, 1, "1:2"),
                                    (0, 3, "2g.35gb", 1, 0, "0:2"), (0, 9, "1g.18gb", 0, 0, "0:1"),
                                    (0, 10, "1g.18gb", 0, 0, "0:1")]))
    else:
        _write(g / "L.txt", "".join(f"GPU {i}: {model} (UUID: {uuids[i]})\n" for i in range(n)))
        _write(g / "q.txt", _sample("nvidia-smi_q_h100-80gb-hbm3_drv590.48.01_load.txt"))
        one = _sample("nvidia-smi_nvlink-s_h100-80gb-hbm3_drv590.48.01.txt").splitlines()[1:]
        status, errors = [], []
        for i in range(n):
            status.append(f"GPU {i}: {model} (UUID: {uuids[i]})")
            errors.append(f"GPU {i}: {model} (UUID: {uuids[i]})")
            for k, line in enumerate(one):
                if "nvlink-down" in spec.faults and i == 1 and k == 3:
                    line = "\t Link 3: <inactive>"
                status.append(line)
                crc = 7 if "nvlink-down" in spec.faults and i == 1 and k == 0 else 0
                # SYNTHETIC: `nvidia-smi nvlink -e` in the R5xx layout (no real recording here).
                errors += [f"\t Link {k}: Replay Errors: 0", f"\t Link {k}: Recovery Errors: 0",
                           f"\t Link {k}: CRC Errors: {crc}"]
        _write(g / "nvlink-s.txt", "\n".join(status) + "\n")
        _write(g / "nvlink-e.txt", "\n".join(errors) + "\n")
    # GPU processes: a Slurm job on GPU 0, a Kubernetes pod on GPU 1, optionally a stray on GPU 3.
    procs = [(4242, 0, 20480, 1000, "python\x00train.py\x00--epochs\x0010\x00",
              "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n"),
             (4343, min(1, n - 1), 1024, 0, "/usr/bin/python3\0serve.py\0",
              "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f2b6c1e_1a2b_4c3d_9e8f_0123456789ab"
              ".slice/cri-containerd-0a1b2c.scope\n")]
    if "stray-process" in spec.faults and n > 3:
        procs.append((4444, 3, 512, 1000, "./leftover\0", "0::/user.slice/user-1000.slice/session-3.scope\n"))
    apps = []
    for pid, idx, mem, uid, cmd, cgroup in procs:
        apps.append(f"{pid}, {uuids[idx]}, {mem}")
        p = d / "proc" / str(pid)
        _write(p / "status", f"Name:\t{cmd.split(chr(0))[0][-15:]}\nState:\tS (sleeping)\nPid:\t{pid}\n"
                             f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        (p / "cmdline").write_bytes(cmd.encode())
        _write(p / "cgroup", cgroup)
    _write(g / "apps.csv", "".join(a + "\n" for a in apps))
    _write(g / "lgip.txt", _lgip(n, h200=spec.variant != "h100"))


def _lgip(n: int, h200: bool) -> str:
    """`nvidia-smi mig -lgip` for n GPUs: the real 4× H100 SXM5 recording's GPU 0 block, renumbered.
    H200: SYNTHETIC (no recording here): the same rows with the H200 profile names and sizes (FACTS §2)."""
    lines = (MIG_SAMPLES / "nvidia-smi_mig-lgip_4x-h100-sxm5-80gb.txt").read_text().splitlines()
    head, rows = lines[:5], [ln for ln in lines[5:] if not re.match(r"^\|\s+[123]\s+MIG", ln)]
    block: list[str] = []
    for ln in rows:  # GPU 0's rows (a row line, its second line, a rule)
        block.append(ln)
        if len(block) == 21:
            break
    if h200:
        names = {"1g.10gb+me": "1g.18gb+me", "1g.10gb  ": "1g.18gb  ", "1g.20gb": "1g.35gb", "2g.20gb": "2g.35gb",
                 "3g.40gb": "3g.71gb", "4g.40gb": "4g.71gb", "7g.80gb ": "7g.141gb"}
        sizes = {" 9.75 ": "16.50", "19.62": "32.50", "39.50": "69.75", "79.25": "139.0"}
        out = []
        for ln in block:
            for a, b in {**names, **sizes}.items():
                ln = ln.replace(a, b.ljust(len(a)))
            out.append(ln)
        block = out
    body = []
    for i in range(n):
        body += [re.sub(r"^\|   0  MIG", f"|   {i}  MIG", ln) for ln in block]
    return "\n".join(head + body) + "\n"


def _lgi(rows: Iterable[tuple[int, str, int, int, str]]) -> str:
    out = ["+-------------------------------------------------------+",
           "| GPU instances:                                        |",
           "| GPU   Name             Profile  Instance   Placement  |",
           "|                           ID       ID       Start:Size |",
           "|=======================================================|"]
    for gpu, name, pid, gi, place in rows:
        out.append(f"|   {gpu}  MIG {name:<13}{pid:>5}{gi:>10}{place:>12}     |")
        out.append("+-------------------------------------------------------+")
    return "\n".join(out) + "\n"


def _lci(rows: Iterable[tuple[int, int, str, int, int, str]]) -> str:
    out = ["+--------------------------------------------------------------------+",
           "| Compute instances:                                                 |",
           "| GPU     GPU       Name             Profile   Instance   Placement  |",
           "|       Instance                       ID        ID       Start:Size |",
           "|         ID                                                         |",
           "|====================================================================|"]
    for gpu, gi, name, pid, ci, place in rows:
        out.append(f"|   {gpu}{gi:>7}       MIG {name:<16}{pid:>3}{ci:>10}{place:>12}     |")
        out.append("+--------------------------------------------------------------------+")
    return "\n".join(out) + "\n"


def _ib_files(spec: NodeSpec, d: Path) -> None:
    for line in _sample("sysfs-class-infiniband_h100-node_8x-cx7-ndr400_plus_bf3-bond.txt").splitlines():
        path, _, value = line.partition(":")
        rel = path.split("/sys/", 1)[1]
        if "ib-down" in spec.faults and rel.startswith("class/infiniband/mlx5_4/ports/1/"):
            leaf = rel.rsplit("/", 1)[1]
            value = {"state": "1: DOWN", "phys_state": "3: Disabled"}.get(leaf, value)
        f = d / "sys" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(value)  # sysfs files of the sample have no trailing newline


def _proc_files(node: str, spec: NodeSpec, d: Path) -> None:
    seed = _seed(node)
    mountinfo = _sample("proc-mountinfo_nfs4-nfs3_node-exporter-fixture.txt")
    ro = "ro" if "mount-ro" in spec.faults else "rw"
    # SYNTHETIC lines in the mountinfo(5) format for a Lustre and a BeeGFS client mount.
    mountinfo += (f"1500 21 0:60 / /lustre/scratch {ro},relatime shared:200 - lustre "
                  "10.0.0.1@o2ib:10.0.0.2@o2ib:/scratch rw,flock,lazystatfs\n"
                  "1501 21 0:61 / /mnt/beegfs rw,relatime shared:201 - beegfs beegfs_nodev "
                  "rw,cfgFile=/etc/beegfs/beegfs-client.conf\n")
    p = d / "proc"
    _write(p / "self" / "mountinfo", mountinfo)
    _write(p / "loadavg", f"{(seed % 800) / 100:.2f} {(seed % 600) / 100:.2f} {(seed % 400) / 100:.2f} 3/812 4545\n")
    _write(p / "stat", "cpu  4705 356 584 3699 23 23 0 0 0 0\n"
                       + "".join(f"cpu{i} 147 11 18 115 0 0 0 0 0 0\n" for i in range(32))
                       + "intr 1462898 0 0\nctxt 4233\nbtime 1700000000\nprocesses 4746\n")
    _write(p / "meminfo", "MemTotal:       2113622016 kB\nMemFree:        1900000000 kB\n"
                          f"MemAvailable:   {1800000000 + seed % 100000} kB\nSwapTotal:       8388604 kB\n"
                          "SwapFree:        8388604 kB\n")
    _write(p / "diskstats", "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0\n"
                            " 259       0 nvme0n1 61976 10325 4324250 24178 40825 191746 15124944 76620 0 12840 "
                            "102893 0 0 0 0 0 0\n"
                            " 259       1 nvme0n1p1 100 0 800 10 50 0 400 5 0 250 15 0 0 0 0 0 0\n")
    _write(p / "net" / "dev",
           "Inter-|   Receive                                                |  Transmit\n"
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo "
           "colls carrier compressed\n"
           "    lo: 24100135   35264    0    0    0     0          0         0 24100135   35264    0    0    0"
           "     0       0          0\n"
           "  eth0: 800128970   19685    0    0    0     0          0         0  1591370   11805    0    0    0"
           "     0       0          0\n")


def build_node(root: Path, node: str, spec: NodeSpec) -> Path:
    """(Re)build one node directory; returns it."""
    d = root / "nodes" / node
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    if spec.variant != "cpu":
        _gpu_files(node, spec, d)
    _ib_files(spec, d)
    _proc_files(node, spec, d)
    if spec.moving:
        _write(d / "moving", "")
    svc = dict(DEFAULT_SERVICES if spec.services is None else spec.services)
    if "svc-failed" in spec.faults:
        svc["nvidia-fabricmanager"] = "failed"
        # SYNTHETIC journal lines of a failed fabric manager.
        _write(d / "svc" / "nvidia-fabricmanager.journal",
               "2026-12-01T08:00:01+0000 node nv-fabricmanager[2211]: request to query NVSwitch device "
               "information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"
               "2026-12-01T08:00:01+0000 node systemd[1]: nvidia-fabricmanager.service: Failed with result "
               "'exit-code'.\n")
    for unit, state in svc.items():
        _write(d / "svc" / unit, state + "\n")
    kmsg = ""
    if "xid" in spec.faults:
        kmsg = xid_lines_short_unix(_sample("dmesg-T_xid119-gsp-timeout_dell-xe9680.log"), node)
    if "sxid" in spec.faults:
        kmsg += xid_lines_short_unix(_sample("dmesg_xid79-sxid20034_hgx-a100_gpud-readme.log"), node)
    _write(d / "kmsg", kmsg)
    # SYNTHETIC `lfs check servers` lines (format per FACTS §5 / liblustreapi).
    lfs = "scratch-MDT0000-mdc-ffff8a0c active.\nscratch-OST0000-osc-ffff8a0c active.\n"
    lfs += "scratch-OST0001-osc-ffff8a0c inactive.\n" if "lfs-inactive" in spec.faults else \
        "scratch-OST0001-osc-ffff8a0c active.\n"
    _write(d / "lfs.txt", lfs)
    _write(d / "lfs-df.txt", lfs_df(spec))
    _write(d / "lctl-imports.txt", lctl_imports(spec))
    bee = (PFS_SAMPLES / "beegfs" / "beegfs-ctl_listtargets_storage_state_offline.txt").read_text()
    _write(d / "beegfs-targets.txt", bee if "beegfs-offline" in spec.faults else bee.replace("Offline", " Online"))
    _quota_files(d)
    faults = d / "faults"
    faults.mkdir()
    for name in spec.faults:
        if name.startswith("mount-") and name != "mount-ro":
            target = {"mount-slow": "/lustre/scratch", "mount-stale": "/mnt/nfs/test-dupe"}.get(name, "/mnt/nfs/test")
            _write(faults / name, target + "\n")
        else:
            _write(faults / name, "")
    return d


def _quota_files(d: Path) -> None:
    """``lfs quota -u`` and ``beegfs-ctl --getquota`` answers for any user: the real recordings (NIG's
    /lustre7, Mila's BeeGFS scratch) with @USER@/@MNT@ for the shims to fill in; :func:`set_quota_over`
    puts one user over."""
    lfs = (PFS_SAMPLES / "lustre" / "lfs-quota_u_lustre7_kbytes.txt").read_text()
    _write(d / "quota" / "lfs-_default", lfs.replace("your_account", "@USER@").replace("/lustre7", "@MNT@"))
    bee = (PFS_SAMPLES / "beegfs" / "beegfs-ctl_getquota_mila-scratch.txt").read_text()
    _write(d / "quota" / "beegfs-_default", bee.replace("normandf", "@USER@"))


def set_quota_over(root: Path, node: str, user: str) -> None:
    """``user`` over their hard limit on every Lustre mount of ``node``: the /lustre7 recording with the used
    value past the limit and lfs's ``*`` flag after it (SYNTHETIC flag: no real sample with ``*`` was found;
    lfs.c's format, FACTS §13)."""
    d = Path(root) / "nodes" / node / "quota"
    text = (d / "lfs-_default").read_text().replace(" 982177580 ", " 1000000004* ")
    (d / f"lfs-{user}").write_text(text)


def lctl_imports(spec: NodeSpec) -> str:
    """``lctl get_param osc.*.ost_server_uuid mdc.*.mds_server_uuid`` for the same targets as :func:`lfs_df`
    (tests/fixtures/lustre/lctl-get_param_server_uuid_snx11035.txt renamed ``scratch``); ``ost-evicted`` puts
    OST0003's import in EVICTED (lprocfs_status.c's format; see that fixture's ORIGIN.md entry)."""
    text = (PFS_SAMPLES / "lustre" / "lctl-get_param_server_uuid_snx11035.txt").read_text().replace("snx11035", "scratch")
    if "ost-evicted" in spec.faults:
        text = text.replace("scratch-OST0003_UUID\tFULL", "scratch-OST0003_UUID\tEVICTED")
    return text


def lfs_df(spec: NodeSpec) -> str:
    """``lfs df`` for /lustre/scratch: the first file system of the real recording (NERSC snx11035) renamed
    ``scratch`` and mounted at /lustre/scratch; ``ost-full`` sets OST0006 to 97 %, ``ost-inactive`` prints
    OST0001 as an inactive device (SYNTHETIC line in lfs.c's format, FACTS §13)."""
    text = (PFS_SAMPLES / "lustre" / "lfs-df_snx11035_nersc-edison.txt").read_text()
    block = text.split("\n\n", 2)
    out = (block[0] + "\n\n" + block[1] + "\n").replace("snx11035", "scratch").replace("/scratch2", "/lustre/scratch")
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "ost-full" in spec.faults and line.startswith("scratch-OST0006_UUID"):
            lines[i] = line.replace(" 83% ", " 97% ")
        if "ost-inactive" in spec.faults and line.startswith("scratch-OST0001_UUID"):
            lines[i] = "scratch-OST0001_UUID: inactive device"
    return "\n".join(lines) + "\n"


def build_shim_root(root: str | os.PathLike[str], nodes: Mapping[str, NodeSpec]) -> Path:
    """A shim tree at ``root``: ``bin/`` (the fake tools) and ``nodes/<node>/`` per node (+ ``_default``)."""
    r = Path(root)
    r.mkdir(parents=True, exist_ok=True)
    if (r / "bin").exists():
        shutil.rmtree(r / "bin")
    shutil.copytree(BIN, r / "bin")
    shutil.copytree(CHECK_SAMPLES, r / "checks", dirs_exist_ok=True)  # what the check shims print
    shutil.copytree(IB_SAMPLES, r / "ib", dirs_exist_ok=True)  # what ibnetdiscover / iblinkinfo print
    for f in (r / "bin").iterdir():
        if not f.name.startswith("_"):
            f.chmod(0o755)
    build_node(r, "_default", NodeSpec())
    for node, spec in nodes.items():
        build_node(r, node, spec)
    return r


def xid_lines_short_unix(dmesg_t: str, host: str, epoch: float | None = None) -> str:
    """The ``NVRM: Xid`` and NVSwitch ``SXid`` lines of a ``dmesg``/``dmesg -T`` log rewritten as
    ``journalctl -k -o short-unix`` lines."""
    t0 = time.time() - 60 if epoch is None else epoch
    out = []
    for i, line in enumerate(dmesg_t.splitlines()):
        if "NVRM: Xid" in line or ": SXid (PCI:" in line:
            msg = line.split("] ", 1)[1]
            out.append(f"{t0 + i:.6f} {host} kernel: {msg}")
    return "".join(x + "\n" for x in out)


# ---------------------------------------------------------------- mutations for tests

def append_kernel_log(root: Path, node: str, message: str, epoch: float | None = None) -> None:
    """A new kernel log line (e.g. ``NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.``)."""
    t = time.time() if epoch is None else epoch
    with (Path(root) / "nodes" / node / "kmsg").open("a") as f:
        f.write(f"{t:.6f} {node} kernel: {message}\n")


def flap_ib(root: Path, node: str, device: str = "mlx5_0", port: int = 1, downs: int = 1) -> None:
    """The port went down and came back between two reads: link_downed rises, state is ACTIVE again."""
    f = Path(root) / "nodes" / node / "sys" / "class" / "infiniband" / device / "ports" / str(port) / "counters" / \
        "link_downed"
    f.write_text(str(min(255, int(f.read_text().strip() or 0) + downs)))


def set_ib_state(root: Path, node: str, device: str, state: str, phys_state: str, port: int = 1) -> None:
    p = Path(root) / "nodes" / node / "sys" / "class" / "infiniband" / device / "ports" / str(port)
    (p / "state").write_text(state)
    (p / "phys_state").write_text(phys_state)


def set_fault(root: Path, node: str, fault: str, on: bool = True, content: str = "") -> None:
    if fault not in FAULTS:
        raise ValueError(fault)
    f = Path(root) / "nodes" / node / "faults" / fault
    if on:
        f.write_text(content)
    else:
        f.unlink(missing_ok=True)
