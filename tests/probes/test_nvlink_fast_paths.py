"""The NVLink parsers' fast paths (the common counter line matched without the lazy label, memos of
lines read before) give exactly what the general pattern gives: compared here with a reference written
from the general pattern alone, on the real recordings and on odd variants, read twice (memo cold, warm)."""

from __future__ import annotations

import re
from pathlib import Path

from hpctui.model.validate import COUNTER, Drops
from hpctui.sources.ssh.probe import parse_gpu as pg

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "probes"
GENERAL = re.compile(r"^GPU (\d+): |^[ \t]+Link (\d+): ([A-Za-z][A-Za-z ]*?)[ \t]*(?:Errors?)?[ \t]*:[ \t]*(\S+)", re.M)


def reference(text: str) -> dict[int, dict[int, dict[str, int]]]:
    out: dict[int, dict[int, dict[str, int]]] = {}
    per_gpu: dict[int, dict[str, int]] | None = None
    for m in GENERAL.finditer(text):
        if m.group(1) is not None:
            gpu = int(m.group(1)) if len(m.group(1)) < 6 and int(m.group(1)) <= 1023 else None
            per_gpu = out.setdefault(gpu, {}) if gpu is not None else None
            continue
        if per_gpu is None or len(m.group(2)) >= 6 or int(m.group(2)) > 255:
            continue
        low = m.group(3).lower()
        kind = "crc" if "crc" in low else "replay" if "replay" in low else "recovery" if "recovery" in low else None
        value = pg.integer(m.group(4))  # the cell conversion itself is not what is compared here
        if kind is None or value is None or not COUNTER.ok(value):
            continue
        counters = per_gpu.setdefault(int(m.group(2)), {})
        counters[kind] = counters.get(kind, 0) + value
    return out


ODD = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)
\t Link 0: Replay Errors: 0
\t Link 0: Recovery Errors: 3\x20
\t Link 0: CRC Errors: 12\r
\t Link 1: CRC Flit Errors: 5
\t Link 1: CRC Data Errors: 7
\t Link 2: Replay Errors:9
\t Link 2: Replay\tErrors: 4
\t Link 3: Data Replay Error: 2
\t Link 3: Replay Errors: -1
\t Link 4: Replay Errors: 99999999999999999999999
\t Link 4: Replay Errors: 0x10
\t Link 5: Errors: 1
\t Link 300: Replay Errors: 1
\t Link 6: Replay Errors: 1 extra
GPU 1: x
    Link 0: CRC Errors: 1
    Link 0: Replay Errors: 0
"""


def test_errors_match_the_general_pattern() -> None:
    texts = [(FIXTURES / "nvidia-smi_nvlink-status_8x-a100-sxm4-80gb.txt").read_text(), ODD]
    busy = (Path(__file__).resolve().parents[1] / "testbed" / "sshfarm" / "streams" / "h100-busy.stream").read_text()
    texts.append(busy.split("@@hpctui section nvlink-err 0 0 \n", 1)[1].split("@@hpctui section", 1)[0])
    for text in texts:
        for _ in range(2):  # memo cold, then warm
            assert pg.parse_nvlink_errors(text, Drops()) == reference(text)


def test_status_read_twice_is_the_same() -> None:
    for name in ("nvidia-smi_nvlink-s_h100-80gb-hbm3_drv590.48.01.txt",
                 "nvidia-smi_nvlink-s_2x-a100-pcie-40gb_drv555.42.02_all-inactive.txt",
                 "nvidia-smi_nvlink-s_h100-mig-enabled_drv590.48.01.txt"):
        text = (FIXTURES / name).read_text()
        first = pg.parse_nvlink_status(text, Drops())
        assert pg.parse_nvlink_status(text, Drops()) == first
    drops = Drops()
    links, _ = pg.parse_nvlink_status("GPU 0: x\n\t Link 0: 26.562 GB/s\n\t Link 1: 9999 GB/s\n", drops)
    assert [(x.link, x.speed_gbps) for x in links[0]] == [(0, 26.562), (1, None)] and drops.warnings()
    drops = Drops()
    links, _ = pg.parse_nvlink_status("GPU 0: x\n\t Link 1: 9999 GB/s\n", drops)  # an implausible speed is never memoised
    assert links[0][0].speed_gbps is None and drops.warnings()
