"""``sinfo --json`` / REST ``GET nodes`` and ``GET partitions`` → model, v0.0.36–v0.0.44.

One typed schema covers every version: fields that changed shape are unions (``state``
str|list, numbers int|``{set,infinite,number}``, ``features`` str|list). msgspec decodes
only the declared fields and skips the rest, so a 16k-node document stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import msgspec

from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.model.node import SlurmNodeInfo
from hpctui.model.validate import NODE_LIMIT, SLURM_NODE_BOUNDS, Drops, checked
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec, repair_json
from hpctui.sources.slurm.parse.gres import parse_gres, parse_gres_used
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError, check_version, errors_of, version_from_meta
from hpctui.sources.slurm.parse.states import normalize_node_state
from hpctui.sources.slurm.parse.values import IntLike, epoch, num, split_list, text

OnInvalid = Callable[[str], None]


class _Node(msgspec.Struct, kw_only=True, gc=False):
    name: str
    state: str | list[str]
    state_flags: list[str] | None = None  # v0.0.37/38 only
    reason: str | None = None
    reason_set_by_user: str | None = None
    reason_changed_at: IntLike = None
    partitions: list[str] | str | None = None
    features: list[str] | str | None = None
    active_features: list[str] | str | None = None
    cpus: IntLike = None
    alloc_cpus: IntLike = None
    real_memory: IntLike = None
    alloc_memory: IntLike = None
    gres: str | None = None
    gres_used: str | None = None


class _NodesDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    nodes: list[_Node]


_nodes_decoder = msgspec.json.Decoder(_NodesDoc)
_replace = msgspec.structs.replace


def _raise_on_errors(what: str, errs: list[RestError] | None) -> None:
    msgs = errors_of(errs)
    if msgs:
        raise SlurmParseError(f"{what}: slurm reported {'; '.join(msgs)}")


D = TypeVar("D", bound="_Document")


class _Document(Protocol):
    meta: Meta | None
    errors: list[RestError] | None


def decode_document(decoder: msgspec.json.Decoder[D], data: bytes | str, version: str | None, what: str) -> D:
    """Typed decode + version check + Slurm's own ``errors[]``: the preamble of every REST document."""
    check_version(version)
    try:
        doc = decoder.decode(data)
    except msgspec.DecodeError as exc:
        repaired = repair_json(data)
        if repaired is None:
            raise from_msgspec(what, exc) from exc
        try:
            doc = decoder.decode(repaired)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc2:
            raise from_msgspec(what, exc2) from exc2
    except msgspec.ValidationError as exc:
        raise from_msgspec(what, exc) from exc
    check_version(version or version_from_meta(doc.meta))
    _raise_on_errors(what, doc.errors)
    return doc


def node_info(n: _Node) -> SlurmNodeInfo:
    base, flags = normalize_node_state(n.state, n.state_flags)
    gpu_type, gpus_total = parse_gres(n.gres)
    gpus_alloc, _ = parse_gres_used(n.gres_used)
    features = split_list(n.active_features) or split_list(n.features)
    return SlurmNodeInfo(
        base_state=base,
        flags=flags,
        reason=text(n.reason),
        reason_user=text(n.reason_set_by_user),
        reason_time=epoch(n.reason_changed_at),
        partitions=split_list(n.partitions),
        features=features,
        cpus_total=num(n.cpus),
        cpus_alloc=num(n.alloc_cpus),
        memory_total_mb=num(n.real_memory),
        memory_alloc_mb=num(n.alloc_memory),
        gpus_total=gpus_total,
        gpus_alloc=gpus_alloc,
        gpu_type=gpu_type,
        gres=text(n.gres),
        gres_used=text(n.gres_used),
    )


class _Memo(dict[Any, Any]):
    """``fn`` memoized by (hashable) argument for one parse."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.fn(key)
        return value


def _hashable(value: list[str] | str | None) -> tuple[str, ...] | str | None:
    return tuple(value) if isinstance(value, list) else value


def _node_converter() -> Callable[[_Node], SlurmNodeInfo]:
    """:func:`node_info` with per-parse caches by value: a 16k-node cluster has a handful
    of distinct state, GRES, partition and feature strings, so each is parsed once (the
    results are immutable: str, int, tuple, frozenset, so nodes may share them)."""
    gres_memo = _Memo(parse_gres)
    used_memo = _Memo(lambda g: parse_gres_used(g)[0])
    lists = _Memo(lambda v: split_list(list(v) if isinstance(v, tuple) else v))
    texts = _Memo(text)
    states: dict[tuple[Any, Any], tuple[str, frozenset[str]]] = {}

    def convert(n: _Node) -> SlurmNodeInfo:
        skey = (_hashable(n.state), _hashable(n.state_flags))
        st = states.get(skey)
        if st is None:
            st = states[skey] = normalize_node_state(n.state, n.state_flags)
        gpu_type, gpus_total = gres_memo[n.gres]
        gres_t = texts[n.gres]
        info = SlurmNodeInfo(
            base_state=st[0],
            flags=st[1],
            reason=texts[n.reason],
            reason_time=epoch(n.reason_changed_at),
            partitions=lists[_hashable(n.partitions)],
            features=lists[_hashable(n.active_features)] or lists[_hashable(n.features)],
            cpus_total=num(n.cpus),
            cpus_alloc=num(n.alloc_cpus),
            memory_total_mb=num(n.real_memory),
            memory_alloc_mb=num(n.alloc_memory),
            gpus_total=gpus_total,
            gpus_alloc=used_memo[n.gres_used],
            gpu_type=gpu_type,
            gres=gres_t,
            gres_used=texts[n.gres_used],
        )
        # 16 keywords in one call would compile to CALL_FUNCTION_EX (a kwargs dict),
        # several times slower; reason_user is None on all but drained/down nodes.
        reason_user = texts[n.reason_set_by_user]
        return info if reason_user is None else _replace(info, reason_user=reason_user)

    return convert


def check_node_name(name: str, where: str, on_invalid: OnInvalid | None) -> bool:
    """Node names are later used in argv and hostlists: reject anything not a hostname.

    Strict by default (SlurmParseError); with ``on_invalid`` the node is dropped and the
    message handed to the callback, so one odd name does not blank the whole view.
    """
    if is_valid_hostname(name):
        return True
    msg = f"invalid node name {name!r} at {where}"
    if on_invalid is None:
        raise SlurmParseError(msg)
    on_invalid(msg)
    return False


def checked_node(name: str, info: SlurmNodeInfo, drops: Drops | None) -> SlurmNodeInfo:
    """``info`` with implausible counts/memory/GPUs (hpctui.model.validate.SLURM_NODE_BOUNDS) as None,
    recorded in ``drops``. Cheap for a plausible node: one comparison per value, no copy."""
    if drops is None:
        return info
    for v in (info.cpus_total, info.cpus_alloc, info.memory_total_mb, info.memory_alloc_mb, info.gpus_total,
              info.gpus_alloc):
        if v is not None and not 0 <= v < NODE_LIMIT:
            return checked(info, SLURM_NODE_BOUNDS, drops, name)
    return info


def parse_nodes_json(
    data: bytes | str, version: str | None = None, *, on_invalid: OnInvalid | None = None,
    drops: Drops | None = None,
) -> dict[str, SlurmNodeInfo]:
    """``sinfo --json`` or REST ``GET /slurm/vX/nodes`` → {node name: SlurmNodeInfo}.

    ``version`` (e.g. "v0.0.40") is checked against PARSEABLE_REST_VERSIONS; None → read
    from ``meta``. v0.0.36 documents carry no ``state_flags`` (so no DRAIN), no
    ``alloc_*`` and no ``partitions``: those come back as no flag / None / ().
    Implausible counts (a 300-digit CPU count) are None, recorded in ``drops``.
    """
    try:
        doc = decode_document(_nodes_decoder, data, version, "slurm nodes JSON")
    except SlurmParseError:
        if is_node_sets_document(data):
            raise NodeSetsDocument("slurm nodes JSON: sinfo --json of Slurm 23.02+ lists node sets "
                                   "(\"sinfo\"), not nodes") from None
        raise
    convert = _node_converter()
    out: dict[str, SlurmNodeInfo] = {}
    for i, n in enumerate(doc.nodes):
        if check_node_name(n.name, f"$.nodes[{i}]", on_invalid):
            out[n.name] = checked_node(n.name, convert(n), drops)
    return out


class NodeSetsDocument(SlurmParseError):
    """``sinfo --json`` from Slurm 23.02 on: its top-level ``sinfo`` array holds one record per
    set of nodes alike in state, partition and resources, with the set's totals (CPUs, memory,
    GRES used), so per-node allocation cannot be read from it. ``scontrol --json show nodes``
    has the per-node ``nodes`` array (the REST schema): read that instead."""


class _NodeSetsDoc(msgspec.Struct, kw_only=True):
    sinfo: list[msgspec.Raw]


_node_sets_decoder = msgspec.json.Decoder(_NodeSetsDoc)


def is_node_sets_document(data: bytes | str) -> bool:
    """The document is 23.02+'s ``sinfo --json`` (a top-level ``sinfo`` array)."""
    try:
        _node_sets_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


class _PartNodes(msgspec.Struct, kw_only=True):
    configured: str | None = None


class _Partition(msgspec.Struct, kw_only=True):
    name: str
    nodes: str | _PartNodes | None = None  # str ≤ v0.0.38; {"configured": ...} v0.0.39+


class _PartitionsDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    partitions: list[_Partition]


_partitions_decoder = msgspec.json.Decoder(_PartitionsDoc)


def parse_partitions_json(data: bytes | str, version: str | None = None) -> dict[str, tuple[str, ...]]:
    """REST ``GET partitions`` → {partition: node names}; fills partitions for v0.0.36 nodes."""
    doc = decode_document(_partitions_decoder, data, version, "slurm partitions JSON")
    out: dict[str, tuple[str, ...]] = {}
    for i, p in enumerate(doc.partitions):
        expr = p.nodes.configured if isinstance(p.nodes, _PartNodes) else p.nodes
        try:
            out[p.name] = tuple(expand(expr or ""))
        except HostlistError as exc:
            raise SlurmParseError(f"slurm partitions JSON: {exc} at $.partitions[{i}].nodes") from exc
    return out


def fill_partitions(
    nodes: dict[str, SlurmNodeInfo], partitions: dict[str, tuple[str, ...]]
) -> dict[str, SlurmNodeInfo]:
    """Nodes without a partition list (v0.0.36, text fallbacks) get it from partitions."""
    by_node: dict[str, list[str]] = {}
    for part, names in partitions.items():
        for name in names:
            by_node.setdefault(name, []).append(part)
    return {
        name: info if info.partitions or name not in by_node else msgspec.structs.replace(
            info, partitions=tuple(by_node[name])
        )
        for name, info in nodes.items()
    }
