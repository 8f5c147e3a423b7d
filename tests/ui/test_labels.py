"""Issue #11: heatmap labels stay unique under several naming schemes."""

from __future__ import annotations

import pytest

from hpctui.ui.labels import unique_labels

SCHEMES = {
    "gpu": [f"gpu{i:04d}" for i in range(1, 65)] + [f"cpu{i:02d}" for i in range(1, 17)],
    "hgx": [f"hgx-h100-{i:02d}" for i in range(1, 17)] + [f"hgx-h200-{i:02d}" for i in range(1, 17)],
    "rack": [f"node-a{a:02d}-r{r:02d}" for a in range(1, 4) for r in range(1, 13)],
    "fqdn": [f"dgx-b200-{i:03d}.cluster.local" for i in range(1, 33)],
}


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("width", [3, 5])
def test_labels_are_unique_and_fit(scheme: str, width: int) -> None:
    names = SCHEMES[scheme]
    labels = unique_labels(names, width)
    assert all(len(label) <= width for label in labels)
    shown = [label for label in labels if label]
    assert len(shown) == len(set(shown)), "no two cells share a label"
    if width == 5:
        assert all(labels), f"{scheme}: every node labelled at width 5: {labels}"


def test_classic_labels_kept_where_they_work_and_collisions_avoided() -> None:
    assert unique_labels(["gpu0001", "gpu0002", "cpu01"], 5) == ["g0001", "g0002", "c01"]
    hgx = unique_labels(["hgx-h100-01", "hgx-h200-01"], 5)
    assert hgx[0] != hgx[1] and all(hgx)
    assert unique_labels(SCHEMES["fqdn"], 5)[:2] == ["01", "02"], "common prefix and .cluster.local dropped"
    assert unique_labels(["login"], 5) == ["login"]
    assert unique_labels(["aaaaaaaa1", "bbbbbbbb1"], 1) == ["", ""] or len(set(unique_labels(["aaaaaaaa1", "bbbbbbbb1"], 1))) == 2
