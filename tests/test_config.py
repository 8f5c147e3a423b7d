"""Config loading: a bad file is one line naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpctui.core.config import ConfigError, DemoSettings, load_config, pick_cluster, source_settings
from hpctui.sources.slurm.settings import SlurmSettings

GOOD = """
default_cluster = "prod"
theme = "wall"
read_only = true

[thresholds]
gpu_temp_warn_c = 80

[clusters.prod]
node_map = { strip_suffix = ".cluster.local", explicit = { "k8s-a" = "gpu01" } }

[[clusters.prod.sources]]
kind = "slurm"
backend = "cli"
interval_s = 10
slurm_conf = "/etc/slurm/slurm.conf"

[clusters.lab]
[[clusters.lab.sources]]
kind = "demo"
size = 8
seed = 3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_good_config_is_typed(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.theme == "wall" and config.read_only
    assert config.thresholds.gpu_temp_warn_c == 80 and config.thresholds.gpu_temp_crit_c == 88
    assert pick_cluster(config, None) == "prod"
    assert pick_cluster(config, "lab") == "lab"
    slurm = source_settings(config, "prod", 0)
    assert isinstance(slurm, SlurmSettings) and slurm.backend == "cli" and slurm.interval_s == 10
    demo = source_settings(config, "lab", 0)
    assert isinstance(demo, DemoSettings) and demo.size == 8
    assert config.clusters["prod"].node_map.explicit == {"k8s-a": "gpu01"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("theme = [", "invalid TOML"),
        ("thme = 'dark'", "thme"),
        ("[thresholds]\ngpu_temp_warn_c = 'hot'", "thresholds.gpu_temp_warn_c"),
        ("[clusters.a]\n[[clusters.a.sources]]\nkind = 'slurm'\nbackend = 'carrier-pigeon'", "clusters.a.sources[0].backend"),
        ("[clusters.a]\n[[clusters.a.sources]]\nkind = 'slurm'\nintervl_s = 3", "clusters.a.sources[0].intervl_s"),
        ("[clusters.a]\n[[clusters.a.sources]]\nkind = 'slurm'\nbackend = 'rest'", "needs rest_url"),
        ("[clusters.a]\n[[clusters.a.sources]]\nkind = 'toaster'", "unknown source kind 'toaster'"),
        ("[clusters.a]\n[[clusters.a.sources]]\nsize = 3", "clusters.a.sources[0].kind: missing"),
        ("[clusters.a]\n[[clusters.a.sources]]\nkind = 'k8s'\nin_cluster = true\ncontext = 'x'", "in_cluster = true takes no kubeconfig or context"),
        ("default_cluster = 'nope'\n[clusters.a]\nsources = [{ kind = 'demo' }]", "default_cluster: no cluster named 'nope'"),
        ("audit_keep = 0", "audit_keep: expected `int` >= 1"),
        ("audit_max_bytes = -1", "audit_max_bytes: expected `int` >= 0"),
        ("audit_tail_bytes = 10", "audit_tail_bytes: expected `int` >= 4096"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path)  # a directory


def test_cluster_choice_errors(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[clusters.a]\nsources = [{ kind = 'demo' }]\n"
                                           "[clusters.b]\nsources = [{ kind = 'demo' }]\n"))
    with pytest.raises(ConfigError, match="pick one with --cluster"):
        pick_cluster(config, None)
    with pytest.raises(ConfigError, match=r"no cluster named 'c' \(known: a, b\)"):
        pick_cluster(config, "c")


def test_audit_rotation_and_tail_settings(tmp_path: Path) -> None:
    """issue #19: audit_max_bytes / audit_keep (rotation) and audit_tail_bytes (what readers read)
    have defaults and reach the runtime's AuditLog."""
    from hpctui.core.runtime import runtime_from_config

    default = load_config(write(tmp_path, "[clusters.a]\nsources = [{ kind = 'demo' }]\n"))
    assert (default.audit_max_bytes, default.audit_keep, default.audit_tail_bytes) == (64 << 20, 5, 4 << 20)
    config = load_config(write(tmp_path, f"audit_log = '{tmp_path / 'a.jsonl'}'\naudit_max_bytes = 1000000\n"
                                         "audit_keep = 9\naudit_tail_bytes = 65536\n"
                                         "[clusters.a]\nsources = [{ kind = 'demo' }]\n"))
    audit = runtime_from_config(config, "a").executor.audit
    assert audit is not None and audit.path == tmp_path / "a.jsonl"
    assert (audit.max_bytes, audit.keep, audit.tail_bytes) == (1_000_000, 9, 65536)
