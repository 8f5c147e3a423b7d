"""The TOML configuration: clusters, their sources, thresholds, name mapping.

Validation is typed (msgspec) so that a bad file yields one line naming the file
and the offending key, never a traceback.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Annotated, Any

import msgspec
import platformdirs

from hpctui.actions.checks.settings import HealthCheckSettings
from hpctui.actions.custom import CustomActionSettings, check_actions, idle_notify_actions
from hpctui.actions.plans import ActionSettings
from hpctui.actions.shells import ShellSettings
from hpctui.core.heatmap_settings import HeatmapSettings, validate_heatmap
from hpctui.core.notify import NotifySettings
from hpctui.core.wall_settings import ServeSettings, WallSettings
from hpctui.findings.health import Thresholds
from hpctui.findings.idle import IdleSettings
from hpctui.model.mig_layouts import MigLayoutSpec, validate_config_layouts
from hpctui.sources.demo.settings import DemoSettings
from hpctui.sources.registry import SOURCE_KINDS

APP_NAME = "hpctui"
PRECEDENCE_PARTS = ("gpus", "ib", "mounts", "resources", "services")


class ConfigError(Exception):
    """A config problem, already phrased as one line for the user."""


class NodeMapSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How Kubernetes node names map to Slurm node names (the join key)."""

    strip_suffix: str = ""
    """Cut from every Kubernetes node name to get its Slurm name, e.g. ".cluster.local"."""
    explicit: dict[str, str] = msgspec.field(default_factory=dict)
    """Kubernetes node name → Slurm node name, for names the suffix rule does not join."""


class ClusterConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    sources: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """The cluster's sources, ``[[clusters.NAME.sources]]``: each a table with a ``kind`` and that kind's keys."""
    node_map: NodeMapSettings = msgspec.field(default_factory=NodeMapSettings)
    """How Kubernetes node names join Slurm node names."""
    read_only: bool | None = None
    """Overrides the top-level ``read_only`` for this cluster."""
    shells: bool | None = None
    """Shell keys on this cluster (``s``: ssh, kubectl exec, srun --pty); default: ``[shells] enabled``."""
    precedence: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """When two sources deliver one part for a node: part ("gpus", "ib", "mounts", "resources",
    "services") → source names, highest first, e.g. ``{gpus = ["prometheus", "ssh"]}``."""


class AppConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    default_cluster: str | None = None
    """The cluster shown first when ``--cluster`` is not given (needed when there are several)."""
    theme: str = "dark"
    """dark, light, wall, or the name of a theme in ``~/.config/hpctui/themes/``."""
    read_only: bool = False
    """No action runs: keys that act are hidden, ``act`` refuses (same as ``--read-only``)."""
    audit_log: str | None = None
    """Path of the audit log; default ``~/.local/state/hpctui/audit.jsonl``."""
    audit_max_bytes: Annotated[int, msgspec.Meta(ge=0)] = 64 << 20
    """The audit log rotates once a record would take it past this size (0: never)."""
    audit_keep: Annotated[int, msgspec.Meta(ge=1, le=99)] = 5
    """Rotated audit files kept (``audit.jsonl.1`` newest … ``.N``)."""
    audit_tail_bytes: Annotated[int, msgspec.Meta(ge=4096)] = 4 << 20
    """Readers (Events view, reports, ``:audit``) read at most the newest this many bytes, across the rotated
    files (hpctui.actions.audit)."""
    thresholds: Thresholds = msgspec.field(default_factory=Thresholds)
    """Alert thresholds of the health rules."""
    clusters: dict[str, ClusterConfig] = msgspec.field(default_factory=dict)
    """The clusters, ``[clusters.NAME]``, each with its sources."""
    custom_actions: list[CustomActionSettings] = msgspec.field(default_factory=list)
    """Your own commands on the selection, ``[[custom_actions]]`` (hpctui.actions.custom)."""
    mig_layouts: dict[str, MigLayoutSpec] = msgspec.field(default_factory=dict)
    """Named MIG layouts for the MIG wizard, ``[mig_layouts.NAME]``."""
    heatmap: HeatmapSettings = msgspec.field(default_factory=HeatmapSettings)
    """The heatmap's grouping, racks and palette."""
    wall: WallSettings = msgspec.field(default_factory=WallSettings)
    """The ``--wall`` display."""
    serve: ServeSettings = msgspec.field(default_factory=ServeSettings)
    """``hpctui serve``: the app in a browser."""
    keymap: dict[str, str] = msgspec.field(default_factory=dict)
    """Binding id → key(s), e.g. ``{"node.drain" = "ctrl+t"}``; ids and keys are checked by hpctui.ui.keymap."""
    actions: ActionSettings = msgspec.field(default_factory=ActionSettings)
    """Where and how ``drain``/``resume`` act on nodes known to both Slurm and Kubernetes."""
    notify: NotifySettings = msgspec.field(default_factory=NotifySettings)
    """[notify]: who is told about new problems (terminal bell, desktop notification, webhook), and when."""
    health_checks: HealthCheckSettings = msgspec.field(default_factory=HealthCheckSettings)
    """[health_checks]: DCGM/NCCL/NHC/custom checks on nodes, and the gate that wants a passing one before resume."""
    checks_dir: str | None = None
    """Where health-check results and critical-finding marks are kept (one file per cluster); default: a
    ``checks`` directory beside the audit log."""
    idle: IdleSettings = msgspec.field(default_factory=IdleSettings)
    """[idle]: when allocated GPUs count as idle (threshold, duration, grace) and how owners are notified."""
    shells: ShellSettings = msgspec.field(default_factory=ShellSettings)
    """[shells]: interactive sessions from the TUI: ssh to a node, kubectl exec into a pod, srun into a job."""


SourceSettings = msgspec.Struct  # one of the registry's settings types
__all__ = ["DemoSettings", "SourceSettings"]


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP_NAME))


def _key_path(exc: msgspec.ValidationError, prefix: str = "") -> str:
    """``"Expected int, got str - at `$.a.b`"`` → ``"a.b: expected int, got str"``."""
    text = str(exc)
    message, _, where = text.partition(" - at `")
    key = where.rstrip("`").removeprefix("$").removeprefix(".") if where else ""
    unknown = re.match(r"Object contains unknown field `([^`]+)`", message)
    if unknown:
        key = f"{key}.{unknown.group(1)}" if key else unknown.group(1)
        message = "unknown key"
    full = ".".join(k for k in (prefix, key) if k).replace(".[", "[")
    return f"{full}: {message[:1].lower()}{message[1:]}" if full else message


MAX_CONFIG_BYTES = 1024 * 1024  # a config is a few KB; /dev/zero or a log file is not a config


def read_small_file(path: Path, what: str, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit``; one-line errors for anything else.

    Opened non-blocking and checked with fstat before reading: a FIFO never hangs us,
    ``/dev/zero`` never fills the memory, a directory is named as such.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(f"{path}: cannot read {what}: {what} file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ConfigError(f"{path}: cannot read {what}: {kind}")
        if st.st_size > limit:
            raise ConfigError(f"{path}: {what} too large ({st.st_size:,} bytes; at most {limit:,})")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise ConfigError(f"{path}: {what} too large (more than {limit:,} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def decode_toml(raw: bytes, origin: str, what: str = "config") -> dict[str, Any]:
    """UTF-8 TOML → dict, every failure as one line (bad bytes with their offset, nesting too deep)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{origin}: {what} is not UTF-8 (invalid byte 0x{raw[exc.start]:02x} at byte offset "
                          f"{exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: invalid TOML: {exc}") from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{origin}: invalid TOML: nested too deeply") from None


def load_config(path: Path) -> AppConfig:
    """Read and validate a config file; raise ConfigError with one readable line."""
    return parse_config(decode_toml(read_small_file(path, "config"), str(path)), str(path))


def parse_config(data: dict[str, Any], origin: str = "<config>") -> AppConfig:
    try:
        return _parse_config(data, origin)
    except ConfigError:
        raise
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply") from None
    except Exception as exc:  # any other convert error is still one line, never a traceback
        raise ConfigError(f"{origin}: {type(exc).__name__}: {exc}") from None


def _parse_config(data: dict[str, Any], origin: str) -> AppConfig:
    try:
        config = msgspec.convert(data, AppConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{origin}: {_key_path(exc)}") from None
    for cname, cluster in config.clusters.items():
        if not cluster.sources:
            raise ConfigError(f"{origin}: clusters.{cname}.sources: no source configured "
                              f"(add at least one, e.g. kind = \"slurm\")")
        for i, _ in enumerate(cluster.sources):
            source_settings(config, cname, i, origin)  # validate eagerly
        for part in cluster.precedence:
            if part not in PRECEDENCE_PARTS:
                raise ConfigError(f"{origin}: clusters.{cname}.precedence.{part}: not a per-node part "
                                  f"(one of {', '.join(PRECEDENCE_PARTS)})")
    try:
        check_actions(config.custom_actions)
        check_actions(idle_notify_actions(config.idle))  # [idle] notify_command: the same rules (placeholders)
    except ValueError as exc:
        raise ConfigError(f"{origin}: {exc}") from None
    heatmap_error = validate_heatmap(config.heatmap, origin)
    if heatmap_error is not None:
        raise ConfigError(heatmap_error)
    if config.default_cluster is not None and config.default_cluster not in config.clusters:
        raise ConfigError(f"{origin}: default_cluster: no cluster named {config.default_cluster!r}")
    mig_errors = validate_config_layouts(config.mig_layouts)
    if mig_errors:
        raise ConfigError(f"{origin}: {mig_errors[0]}")
    return config


def source_settings(config: AppConfig, cluster: str, index: int, origin: str = "<config>") -> SourceSettings:
    """The typed settings of one configured source (validated by its ``kind``)."""
    entry = dict(config.clusters[cluster].sources[index])
    where = f"clusters.{cluster}.sources[{index}]"
    kind = entry.pop("kind", None)
    if kind is None:
        raise ConfigError(f"{origin}: {where}.kind: missing (one of {', '.join(SOURCE_KINDS)})")
    if not isinstance(kind, str):
        raise ConfigError(f"{origin}: {where}.kind: expected a string, got {type(kind).__name__}")
    entry_kind = SOURCE_KINDS.get(kind)
    if entry_kind is None:
        raise ConfigError(f"{origin}: {where}.kind: unknown source kind {kind!r} (one of {', '.join(SOURCE_KINDS)})")
    try:
        settings: SourceSettings = msgspec.convert(entry, entry_kind.settings_type)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{origin}: {_key_path(exc, where)}") from None
    return settings


def pick_cluster(config: AppConfig, requested: str | None, origin: str = "<config>") -> str:
    if requested is not None:
        if requested not in config.clusters:
            known = ", ".join(sorted(config.clusters)) or "none"
            raise ConfigError(f"{origin}: no cluster named {requested!r} (known: {known})")
        return requested
    if config.default_cluster:
        return config.default_cluster
    if len(config.clusters) == 1:
        return next(iter(config.clusters))
    if not config.clusters:
        raise ConfigError(f"{origin}: clusters: no cluster configured")
    raise ConfigError(f"{origin}: several clusters and no default_cluster: pick one with --cluster")


