"""MIG layouts: presets per GPU model, config layouts validated against the profile tables
(7 compute / 8 memory slices), the GPU's own `mig -lgip` list, and the exact commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpctui.core.config import ConfigError, parse_config
from hpctui.model.mig_layouts import (
    TABLES,
    LayoutError,
    MigLayoutSpec,
    apply_commands,
    family,
    gres_lines,
    parse_lgip,
    resolve,
    validate_config_layouts,
)

FIX = Path(__file__).parent / "fixtures" / "mig"


def test_family_from_model_names() -> None:
    assert family("NVIDIA H100 80GB HBM3") == "H100 80GB"
    assert family("NVIDIA H200") == "H200 141GB"
    assert family("NVIDIA H100 NVL") is None  # 94 GB: not in the tables
    assert family(None) is None


@pytest.mark.parametrize(("model", "fam"), [
    ("NVIDIA H200", "H200 141GB"),
    ("NVIDIA H200 NVL", "H200 141GB"),
    ("NVIDIA-H200-NVL", "H200 141GB"),  # the GPU Operator's nvidia.com/gpu.product label
    ("NVIDIA H100 80GB HBM3", "H100 80GB"),
    ("NVIDIA GH200 480GB", None),  # Grace Hopper: other MIG profiles, no table in FACTS §2
    ("NVIDIA-GH200-480GB", None),
    ("NVIDIA GH200 144G HBM3e", None),
    ("NVIDIA GH100 80GB", None),
])
def test_family_needs_the_model_number_on_its_own(model: str, fam: str | None) -> None:
    assert family(model) == fam


def test_a_gh200_is_refused_naming_its_model() -> None:
    with pytest.raises(LayoutError, match="no MIG profile table for NVIDIA GH200 480GB"):
        resolve("all-1g", family("NVIDIA GH200 480GB"), model="NVIDIA GH200 480GB")
    assert resolve("all-disabled", None, model="NVIDIA GH200 480GB").enabled is False  # MIG off needs no table


@pytest.mark.parametrize(("fam", "name", "profiles", "label"), [
    ("H100 80GB", "all-1g", ("1g.10gb",) * 7, "all-1g.10gb"),
    ("H100 80GB", "all-balanced", ("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"), "all-balanced"),
    ("H100 80GB", "all-7g", ("7g.80gb",), "all-7g.80gb"),
    ("H200 141GB", "all-1g", ("1g.18gb",) * 7, "all-1g.18gb"),
    ("H200 141GB", "all-balanced", ("3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"), "all-balanced"),
    ("H200 141GB", "all-7g", ("7g.141gb",), "all-7g.141gb"),
])
def test_presets_per_model(fam: str, name: str, profiles: tuple[str, ...], label: str) -> None:
    layout = resolve(name, fam)
    assert layout.enabled and layout.profiles == profiles and layout.label == label


def test_all_disabled_needs_no_table() -> None:
    layout = resolve("all-disabled", None)
    assert not layout.enabled and layout.profiles == () and layout.summary() == "MIG disabled (whole GPU)"


@pytest.mark.parametrize(("devices", "fam"), [
    ({"4g.40gb": 1, "3g.40gb": 1}, "H100 80GB"),
    ({"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}, "H100 80GB"),
    ({"1g.20gb": 4}, "H100 80GB"),
    ({"2g.35gb": 3, "1g.18gb": 1}, "H200 141GB"),
])
def test_valid_config_layouts(devices: dict[str, int], fam: str) -> None:
    config = {"mine": MigLayoutSpec(devices=devices)}
    assert validate_config_layouts(config) == []
    assert resolve("mine", fam, config).label == "mine"


@pytest.mark.parametrize(("devices", "why"), [
    ({"3g.40gb": 2, "1g.10gb": 1}, "needs 9 memory slices, H100 80GB has 8"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "needs 8 compute slices, H100 80GB has 7"),
    ({"1g.10gb": 8}, "8×1g.10gb but H100 80GB holds at most 7"),
    ({"7g.141gb": 1, "1g.18gb": 1}, "a 7g instance takes the whole GPU"),
    ({"3g.40gb": 1, "3g.71gb": 1}, "are not the MIG profiles of one GPU model"),
    ({"5g.50gb": 1}, "are not the MIG profiles of one GPU model"),
])
def test_invalid_config_layouts_name_layout_and_why(devices: dict[str, int], why: str) -> None:
    errors = validate_config_layouts({"bad-one": MigLayoutSpec(devices=devices)})
    assert errors and errors[0].startswith("mig_layouts.bad-one: ") and why in " ".join(errors)


def test_config_field_error_is_one_line() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config({"mig_layouts": {"big": {"devices": {"3g.40gb": 3}}}}, "cfg.toml")
    assert str(exc.value) == "cfg.toml: mig_layouts.big: 3×3g.40gb but H100 80GB holds at most 2"
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"mig_layouts": {"x": {"devices": {"1g.10gb": 1}, "colour": "red"}}}, "cfg.toml")
    with pytest.raises(ConfigError, match="built-in preset"):
        parse_config({"mig_layouts": {"all-1g": {"devices": {"1g.10gb": 7}}}}, "cfg.toml")
    config = parse_config({"mig_layouts": {"two-3g": {"devices": {"3g.40gb": 2}}}}, "cfg.toml")
    assert config.mig_layouts["two-3g"].devices == {"3g.40gb": 2}


def test_layout_for_the_wrong_model_is_refused() -> None:
    config = {"h100-only": MigLayoutSpec(devices={"3g.40gb": 2})}
    with pytest.raises(LayoutError, match="not a MIG profile of H200 141GB"):
        resolve("h100-only", "H200 141GB", config)
    with pytest.raises(LayoutError, match="unknown layout 'nope'"):
        resolve("nope", "H100 80GB", config)
    with pytest.raises(LayoutError, match="no MIG profile table"):
        resolve("all-1g", None)


def test_lgip_of_a_real_h100_gives_ids_and_counts() -> None:
    tables = parse_lgip((FIX / "nvidia-smi_mig-lgip_4x-h100-sxm5-80gb.txt").read_text())
    assert sorted(tables) == [0, 1, 2, 3]
    t = tables[0]
    assert {p: (v.lgip_id, v.max_count, v.compute, v.memory) for p, v in t.items()} == {
        p: (v.lgip_id, v.max_count, v.compute, v.memory) for p, v in TABLES["H100 80GB"].items()}
    layout = resolve("all-balanced", "H100 80GB", table=t)
    cmds = apply_commands([0], True, layout.profiles, [0], {p: v.lgip_id or 0 for p, v in t.items()})
    assert cmds == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r", "nvidia-smi mig -i 0 -dci",
                    "nvidia-smi mig -i 0 -dgi", "nvidia-smi mig -i 0 -cgi 9,14,19,19 -C"]


def test_disable_destroys_ci_then_gi_then_mode_and_reset() -> None:
    assert apply_commands([3], False, (), [3]) == [
        "nvidia-smi mig -i 3 -dci", "nvidia-smi mig -i 3 -dgi", "nvidia-smi -i 3 -mig 0", "nvidia-smi -i 3 -r"]
    assert apply_commands([3], False, (), []) == []  # already off


def test_gres_lines_name_profiles_and_autodetect() -> None:
    lines = gres_lines("gpu01", [0, 1], resolve("all-balanced", "H100 80GB"), other_gpus=6)
    text = "\n".join(lines)
    assert "AutoDetect=nvml" in text
    assert "NodeName=gpu01 Name=gpu Type=1g.10gb Count=4 File=/dev/nvidia-caps/nvidia-cap[" in text
    assert "# slurm.conf: NodeName=gpu01 Gres=gpu:3g.40gb:2,gpu:2g.20gb:2,gpu:1g.10gb:4" in text
