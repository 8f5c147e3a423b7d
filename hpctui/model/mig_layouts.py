"""MIG layouts: the profile tables of H100 80GB and H200 141GB (FACTS §2), the presets, named
layouts from config (``mig_layouts``), and one validation rule for all of them.

A layout is a list of GPU-instance profiles created on each selected GPU (with their default
compute instance, ``-cgi … -C``), or MIG off (``all-disabled``). It must fit the GPU: at most
7 compute slices and 8 memory slices, each profile at most its instance count, and ``7g``
alone. Where a node's own ``nvidia-smi mig -lgip`` was read, its list (ids and counts) is
the table used; the built-in tables are the GPU Operator's defaults.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

COMPUTE_SLICES = 7
MEMORY_SLICES = 8
PRESETS = ("all-disabled", "all-1g", "all-balanced", "all-7g")


@dataclass(frozen=True, slots=True)
class Profile:
    name: str  # "3g.40gb"
    compute: int  # compute slices (the "3g")
    memory: int  # memory slices of 8
    max_count: int  # instances of this profile one GPU can hold
    lgip_id: int | None = None  # the id `nvidia-smi mig -lgip` prints (read from the GPU when known)


def _table(rows: Iterable[tuple[str, int, int, int, int]]) -> dict[str, Profile]:
    return {n: Profile(n, c, m, k, i) for n, c, m, k, i in rows}


# FACTS §2 (GPU Operator default mig-parted config; H100 -lgip ids from the recorded -lgip).
TABLES: dict[str, dict[str, Profile]] = {
    "H100 80GB": _table((("1g.10gb", 1, 1, 7, 19), ("1g.10gb+me", 1, 1, 1, 20), ("1g.20gb", 1, 2, 4, 15),
                         ("2g.20gb", 2, 2, 3, 14), ("3g.40gb", 3, 4, 2, 9), ("4g.40gb", 4, 4, 1, 5),
                         ("7g.80gb", 7, 8, 1, 0))),
    "H200 141GB": _table((("1g.18gb", 1, 1, 7, 19), ("1g.18gb+me", 1, 1, 1, 20), ("1g.35gb", 1, 2, 4, 15),
                          ("2g.35gb", 2, 2, 3, 14), ("3g.71gb", 3, 4, 2, 9), ("4g.71gb", 4, 4, 1, 5),
                          ("7g.141gb", 7, 8, 1, 0))),
}
_SMALLEST = {"H100 80GB": ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"),
             "H200 141GB": ("1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb")}


def family(model: str | None) -> str | None:
    """The profile table for a GPU model name (NVML/nvidia-smi ``name``, or the GPU Operator's
    ``nvidia.com/gpu.product`` label), or None. The model number must stand alone: a Grace Hopper
    "NVIDIA GH200 480GB" is not an H200 (its MIG profiles differ, and FACTS has no table for them)."""
    if not model:
        return None
    m = model.upper().replace("-", " ")
    if re.search(r"(?<![A-Z0-9])H200(?![A-Z0-9])", m):  # H200, H200 NVL
        return "H200 141GB"
    if re.search(r"(?<![A-Z0-9])H100(?![A-Z0-9])", m) and "80GB" in m.replace(" ", ""):
        return "H100 80GB"
    return None


class MigLayoutSpec(msgspec.Struct, gc=False, kw_only=True, forbid_unknown_fields=True):
    """A named layout in config: ``[mig_layouts.NAME] devices = {"1g.10gb" = 5, "2g.20gb" = 1}``
    (the mig-parted ``mig-devices`` form), per GPU. The name is also the ``nvidia.com/mig.config``
    value on GPU Operator nodes, so the operator's ConfigMap must define it too."""

    devices: dict[str, int]
    description: str = ""


@dataclass(frozen=True, slots=True)
class Layout:
    """A layout resolved for one GPU family."""

    name: str
    family: str | None
    enabled: bool  # MIG mode on
    profiles: tuple[str, ...]  # GPU instances to create on each GPU, largest first
    label: str  # nvidia.com/mig.config value for the GPU Operator

    def summary(self) -> str:
        if not self.enabled:
            return "MIG disabled (whole GPU)"
        counts = Counter(self.profiles)
        return " + ".join(f"{n}×{p}" for p, n in counts.items())


class LayoutError(ValueError):
    pass


def check_profiles(name: str, profiles: Sequence[str], table: Mapping[str, Profile], where: str) -> list[str]:
    """Why ``profiles`` cannot be created on one GPU of ``table`` (empty list: it fits)."""
    errors: list[str] = []
    counts = Counter(profiles)
    unknown = [p for p in counts if p not in table]
    if unknown:
        errors.append(f"layout {name!r}: {', '.join(repr(p) for p in unknown)} not a MIG profile of {where} "
                      f"(known: {', '.join(table)})")
        return errors
    for p, n in counts.items():
        if n > table[p].max_count:
            errors.append(f"layout {name!r}: {n}×{p} but {where} holds at most {table[p].max_count}")
    compute = sum(table[p].compute for p in profiles)
    memory = sum(table[p].memory for p in profiles)
    if compute > COMPUTE_SLICES:
        errors.append(f"layout {name!r}: needs {compute} compute slices, {where} has {COMPUTE_SLICES}")
    if memory > MEMORY_SLICES:
        errors.append(f"layout {name!r}: needs {memory} memory slices, {where} has {MEMORY_SLICES}")
    if any(table[p].compute == COMPUTE_SLICES for p in profiles) and len(profiles) > 1:
        errors.append(f"layout {name!r}: a 7g instance takes the whole GPU and cannot share it")
    return errors


def _order(profiles: Iterable[str], table: Mapping[str, Profile]) -> tuple[str, ...]:
    """Largest first: how mig-parted creates them, so placement succeeds where it can."""
    return tuple(sorted(profiles, key=lambda p: (-table[p].compute, -table[p].memory, p)))


def family_of_profiles(profiles: Iterable[str]) -> list[str]:
    """The families whose table knows every one of ``profiles``."""
    names = set(profiles)
    return [f for f, t in TABLES.items() if names <= t.keys()]


def validate_config_layouts(layouts: Mapping[str, MigLayoutSpec]) -> list[str]:
    """One line per problem, naming the layout: config load fails on any."""
    errors: list[str] = []
    for name, spec in layouts.items():
        where = f"mig_layouts.{name}"
        if name in PRESETS:
            errors.append(f"{where}: {name!r} is a built-in preset; pick another name")
            continue
        if not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", name):
            errors.append(f"{where}: the name must be a valid Kubernetes label value (letters, digits, -_.)")
            continue
        if not spec.devices:
            errors.append(f"{where}: devices is empty (use the preset all-disabled for MIG off)")
            continue
        bad = [f"{p}={n}" for p, n in spec.devices.items() if n < 1]
        if bad:
            errors.append(f"{where}: counts must be >= 1 ({', '.join(bad)})")
            continue
        profiles = [p for p, n in spec.devices.items() for _ in range(n)]
        fams = family_of_profiles(profiles)
        if not fams:
            errors.append(f"{where}: {', '.join(spec.devices)} are not the MIG profiles of one GPU model "
                          f"(H100 80GB: {', '.join(TABLES['H100 80GB'])}; H200 141GB: {', '.join(TABLES['H200 141GB'])})")
            continue
        for f in fams:
            errors.extend(f"{where}: {e.split(': ', 1)[1]}" for e in check_profiles(name, profiles, TABLES[f], f))
    return errors


def available(fam: str | None, config: Mapping[str, MigLayoutSpec] | None = None) -> list[str]:
    """Layout names that can be picked for a GPU family (presets first)."""
    out = list(PRESETS) if fam else ["all-disabled"]
    for name, spec in (config or {}).items():
        profiles = [p for p, n in spec.devices.items() for _ in range(n)]
        if fam and fam in family_of_profiles(profiles):
            out.append(name)
    return out


def resolve(name: str, fam: str | None, config: Mapping[str, MigLayoutSpec] | None = None,
            table: Mapping[str, Profile] | None = None, *, model: str | None = None) -> Layout:
    """``name`` for a GPU family (``table``: the GPU's own -lgip list, when read; ``model``: the GPU
    model name, for the refusal when there is no table). Raises LayoutError."""
    name = name.strip()
    if table is None and fam is not None:
        table = TABLES[fam]
    where = fam or "this GPU"
    if name == "all-disabled":
        return Layout(name, fam, False, (), "all-disabled")
    if table is None:
        raise LayoutError(f"layout {name!r}: no MIG profile table for {model or 'this GPU model'} (only H100 80GB "
                          "and H200 141GB are known, and no `nvidia-smi mig -lgip` was read from it)")
    if name in PRESETS:
        small = _SMALLEST.get(fam or "") or _smallest_from(table)
        one, two, three, seven = small
        profiles: list[str] = {"all-1g": [one] * 7, "all-balanced": [three, two, one, one],
                               "all-7g": [seven]}[name]
        label = {"all-1g": f"all-{one}", "all-balanced": "all-balanced", "all-7g": f"all-{seven}"}[name]
    elif config and name in config:
        profiles = [p for p, n in config[name].devices.items() for _ in range(n)]
        label = name
    else:
        known = ", ".join([*PRESETS, *(config or {})])
        raise LayoutError(f"unknown layout {name!r} (known: {known})")
    errors = check_profiles(name, profiles, table, where)
    if errors:
        raise LayoutError("; ".join(errors))
    return Layout(name, fam, True, _order(profiles, table), label)


def _smallest_from(table: Mapping[str, Profile]) -> tuple[str, str, str, str]:
    """1g/2g/3g/7g profile names of an -lgip list (the smallest memory of each compute size)."""
    out = []
    for c in (1, 2, 3, 7):
        cands = sorted((p for p in table.values() if p.compute == c and "+" not in p.name), key=lambda p: p.memory)
        if not cands:
            raise LayoutError(f"this GPU's -lgip list has no {c}g profile")
        out.append(cands[0].name)
    return out[0], out[1], out[2], out[3]


# -- nvidia-smi mig -lgip ------------------------------------------------------------------------

_LGIP_ROW = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([\d.]+)\s+")


def parse_lgip(text: str) -> dict[int, dict[str, Profile]]:
    """``nvidia-smi mig -lgip`` → per GPU index, its profile table (ids and counts from the GPU).
    Memory slices from the memory column (relative to the largest profile); the compute slices
    from the name. Rows that do not parse are skipped."""
    rows: dict[int, list[tuple[str, int, int, float]]] = {}
    for line in text.splitlines():
        m = _LGIP_ROW.match(line)
        if not m:
            continue
        gpu, name, pid, _free, total, mem = m.groups()
        rows.setdefault(int(gpu), []).append((name, int(pid), int(total), float(mem)))
    out: dict[int, dict[str, Profile]] = {}
    for gpu, items in rows.items():
        biggest = max(mem for *_, mem in items) or 1.0
        table: dict[str, Profile] = {}
        for name, pid, total, mem in items:
            c = re.match(r"(\d+)g\.", name)
            if not c:
                continue
            table[name] = Profile(name, int(c.group(1)), max(1, round(MEMORY_SLICES * mem / biggest)), total, pid)
        out[gpu] = table
    return out


# -- the exact commands ----------------------------------------------------------------------------

def apply_commands(gpus: Sequence[int], enabled: bool, profiles: Sequence[str], mode_change: Iterable[int],
                   ids: Mapping[str, int] | None = None) -> list[str]:
    """nvidia-smi commands that put ``profiles`` (or MIG off) on each GPU of ``gpus`` (FACTS §2):
    mode change + GPU reset only where the mode changes; compute instances destroyed before GPU
    instances; GPU instances created with their default compute instance (``-C``). ``ids``: the
    -lgip profile ids read from the node (names are used where an id is not known)."""
    change = set(mode_change)
    out: list[str] = []
    for i in gpus:
        if enabled:
            if i in change:
                out += [f"nvidia-smi -i {i} -mig 1", f"nvidia-smi -i {i} -r"]
            out += [f"nvidia-smi mig -i {i} -dci", f"nvidia-smi mig -i {i} -dgi"]
            spec = ",".join(str(ids[p]) if ids and p in ids else p for p in profiles)
            out.append(f"nvidia-smi mig -i {i} -cgi {spec} -C")
        else:
            if i in change:
                out += [f"nvidia-smi mig -i {i} -dci", f"nvidia-smi mig -i {i} -dgi",
                        f"nvidia-smi -i {i} -mig 0", f"nvidia-smi -i {i} -r"]
    return out


def gres_lines(node: str, gpus: Sequence[int], layout: Layout, other_gpus: int = 0) -> list[str]:
    """What gres.conf / slurm.conf must say after the change (FACTS §2): slurmd does not follow MIG
    changes by itself. AutoDetect=nvml finds the MIG devices (their /dev/nvidia-caps files) itself."""
    lines = [f"# {node}: slurmd must match the new layout, then restart slurmd and `scontrol reconfigure`",
             "# gres.conf (recommended):  AutoDetect=nvml   (slurmd finds the MIG devices and their",
             "#   /dev/nvidia-caps/nvidia-capN files itself; check with `slurmd -G`)"]
    if not layout.enabled:
        lines += [f"NodeName={node} Name=gpu File=/dev/nvidia[{gpus[0]}-{gpus[-1]}]" if len(gpus) > 1
                  else f"NodeName={node} Name=gpu File=/dev/nvidia{gpus[0]}",
                  f"# slurm.conf: NodeName={node} Gres=gpu:{len(gpus)}" + (
                      f"  (plus the GRES of the {other_gpus} GPU(s) not changed)" if other_gpus else "")]
        return lines
    counts = Counter(layout.profiles)
    lines.append("# or explicit lines, one per profile (the cap numbers from /proc/driver/nvidia-caps/mig-minors):")
    for p, n in counts.items():
        lines.append(f"NodeName={node} Name=gpu Type={p} Count={n * len(gpus)} "
                     "File=/dev/nvidia-caps/nvidia-cap[<first>-<last>]")
    gres = ",".join(f"gpu:{p}:{n * len(gpus)}" for p, n in counts.items())
    lines.append(f"# slurm.conf: NodeName={node} Gres={gres}" + (
        f"  (plus the GRES of the {other_gpus} GPU(s) not changed)" if other_gpus else ""))
    return lines


# -- the parameters an apply step carries (the wizard resolves, the backends re-check) ---------------

def apply_params(layout: Layout, gpus: Sequence[int] | None) -> dict[str, str]:
    return {"layout": layout.name, "mig": "on" if layout.enabled else "off", "profiles": ",".join(layout.profiles),
            "gpus": ",".join(str(g) for g in gpus) if gpus else "all", "label": layout.label}


def layout_from_params(params: Mapping[str, str]) -> Layout:
    profiles = tuple(p for p in params.get("profiles", "").split(",") if p)
    enabled = params.get("mig", "on") != "off"
    fams = family_of_profiles(profiles) if profiles else []
    return Layout(params.get("layout", "?"), fams[0] if fams else None, enabled, profiles,
                  params.get("label", params.get("layout", "?")))


def gpus_from_params(params: Mapping[str, str], n_gpus: int) -> list[int]:
    """The GPU indexes to change; raises LayoutError for a bad list."""
    raw = params.get("gpus", "all").strip()
    if raw in ("", "all"):
        return list(range(n_gpus))
    out: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            rng = range(int(lo), int(hi) + 1) if sep else range(int(lo), int(lo) + 1)
        except ValueError:
            raise LayoutError(f"gpus: {part!r} is not a GPU index (e.g. gpus=0,1 or gpus=0-3)") from None
        out.extend(rng)
    bad = [g for g in out if not 0 <= g < n_gpus]
    if bad:
        raise LayoutError(f"gpus: no GPU {bad[0]} (the node has {n_gpus}: 0-{n_gpus - 1})")
    return sorted(set(out))
