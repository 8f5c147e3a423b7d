"""NVSwitch model: the switches of an HGX/DGX baseboard as their kernel log shows them (SXid errors).

The NVSwitch driver logs ``nvidia-nvswitchN: SXid (PCI:…): <sxid>, Fatal|Non-fatal, <detail>`` in
the same kernel log as GPU Xids (FACTS §8). A switch is known to hpctui only once it logged one.
"""

from __future__ import annotations

import msgspec

from hpctui.model.common import Severity


class SxidEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One SXid of one NVSwitch (the headline line of a kernel log event)."""

    time: float
    sxid: int
    switch: str  # "nvidia-nvswitch3": the driver's device name
    pci_bus_id: str
    fatal: bool | None  # what the driver printed ("Fatal" / "Non-fatal"); None: a detail line only
    message: str  # what follows the class word, e.g. "Link 32 egress non-posted PRIV error (First)"

    @property
    def severity(self) -> Severity:
        return sxid_severity(self.sxid, self.fatal)


class NvSwitch(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One NVSwitch of a node, with its recent SXids (newest last)."""

    node: str
    name: str  # "nvidia-nvswitch3"
    pci_bus_id: str
    sxid_events: tuple[SxidEvent, ...] = ()

    @property
    def last(self) -> SxidEvent | None:
        return self.sxid_events[-1] if self.sxid_events else None

    @property
    def worst(self) -> SxidEvent | None:
        """The recent SXid of the highest severity (the newest of equals)."""
        best: SxidEvent | None = None
        for e in self.sxid_events:
            if best is None or e.severity >= best.severity:
                best = e
        return best


def _codes(*items: int | tuple[int, int]) -> frozenset[int]:
    out: set[int] = set()
    for item in items:
        if isinstance(item, tuple):
            out.update(range(item[0], item[1] + 1))
        else:
            out.add(item)
    return frozenset(out)


# FACTS §8 SXid table (Fabric Manager user guide DU-09883-001, as transcribed by gpud).
SXID_ALWAYS_FATAL = _codes(12020, 22003, 22011, (23001, 23017))  # the whole fabric: reboot the host
SXID_PORT_FATAL = _codes(
    11001, 11009, 11013, (11018, 11020), 12001, 12002, 12022, (12024, 12027), 12031, 12032, 14017, 15001,
    15006, 15009, 15010, 15012, 15013, 19047, 19048, 19054, 19056, 19058, 19060, 19061, 19063, 19064,
    19066, 19067, 19069, 19070, 20034, 22012, (24004, 24007))
# Listed non-fatal by the guide, but NVLink traffic through the port stalls (Xid 45 follows): reboot.
SXID_STALL = _codes(11004, 12028, 19084)
SXID_CORRECTED = _codes(11012, (11021, 11023), 12021, 12023, 15008, 15011, 19049, 19055, 19057, 19059,
                        19062, 19065, 19068, 19071, (24001, 24003))

SXID_MEANING: dict[int, str] = {
    11004: "ingress invalid ACL (NVLink traffic stalls; restart the guest/host)",
    12028: "egress non-posted PRIV error (NVLink traffic stalls; restart the guest/host)",
    19084: "AN1 heartbeat timeout (reset all GPUs and NVSwitches)",
    20001: "TX replay error (throughput may drop)",
    20009: "RX short error rate",
    20012: "broken or inconsistent NVLink connection (check cabling)",
    20034: "LTSSM fault up: the link left Active (reset the GPU / restart the VM)",
    22013: "Minion link DLREQ interrupt (ignore)",
    10004: "thermal event start (links may drop to single lane; check cooling)",
    10005: "thermal event end",
}


def sxid_class(sxid: int, fatal: bool | None) -> str:
    """The SXid's class as FACTS §8 names it: always-fatal, fatal, stall, corrected, non-fatal."""
    if sxid in SXID_ALWAYS_FATAL:
        return "always fatal (whole fabric: reboot the host)"
    if sxid in SXID_PORT_FATAL or (fatal and sxid not in SXID_CORRECTED):
        return "fatal (port: reset the GPUs behind it / restart the partition)"
    if sxid in SXID_STALL:
        return "non-fatal, but NVLink traffic stalls (restart the guest/host)"
    if sxid in SXID_CORRECTED:
        return "single-bit ECC, corrected by hardware"
    return "non-fatal"


def sxid_severity(sxid: int, fatal: bool | None) -> Severity:
    """Fatal SXids (by the table or as the driver says) and the stalling ones (gpud: reboot) are
    critical; corrected single-bit ECC is info; any other SXid is a warning."""
    if (sxid in SXID_ALWAYS_FATAL or sxid in SXID_PORT_FATAL or sxid in SXID_STALL
            or (fatal and sxid not in SXID_CORRECTED)):
        return Severity.CRITICAL
    if sxid in SXID_CORRECTED:
        return Severity.INFO
    return Severity.WARNING
