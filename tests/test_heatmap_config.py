"""The [heatmap] config table: valid values load, bad ones are one line naming the key."""

from __future__ import annotations

import pytest

from hpctui.core.config import ConfigError, parse_config

CLUSTER = {"clusters": {"demo": {"sources": [{"kind": "demo"}]}}}


def test_heatmap_settings_load() -> None:
    config = parse_config({**CLUSTER, "heatmap": {"group_by": "rack", "racks": {"r01": "gpu[0001-0004]"},
                                                  "palette": "colorblind", "problems_first": True}})
    assert config.heatmap.group_by == "rack"
    assert config.heatmap.rack_of() == {f"gpu000{i}": "r01" for i in range(1, 5)}
    assert config.heatmap.palette == "colorblind" and config.heatmap.problems_first
    assert parse_config(CLUSTER).heatmap.group_by == "none"


@pytest.mark.parametrize(("table", "expected"), [
    ({"group_by": "spine"}, "heatmap.group_by: 'spine' is not one of none, partition, rack, model, switch"),
    ({"palette": "rainbow"}, "heatmap.palette"),
    ({"racks": {"r01": "gpu[0001-"}}, "heatmap.racks.r01: not a hostlist"),
    ({"problems_first": "yes"}, "heatmap.problems_first: expected `bool"),
    ({"zoom": 1}, "heatmap.zoom: unknown key"),
])
def test_bad_heatmap_settings_are_one_line(table: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({**CLUSTER, "heatmap": table}, "cfg.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("cfg.toml: ")
    assert expected.lower() in message.lower(), message


def test_runtime_carries_the_heatmap_settings(tmp_path: object) -> None:
    from hpctui.core.runtime import runtime_from_config

    config = parse_config({**CLUSTER, "audit_log": f"{tmp_path}/audit.jsonl",
                           "heatmap": {"group_by": "model", "palette": "colorblind"}})
    runtime = runtime_from_config(config, "demo")
    assert runtime.heatmap.group_by == "model" and runtime.heatmap.palette == "colorblind"
