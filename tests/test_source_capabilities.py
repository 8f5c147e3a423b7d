"""Each source kind declares its abilities in the registry, and the built source has exactly those.

A kind's source is built from its default settings (what ``kind = "x"`` alone gives) with sockets
forbidden: building constructs, the first ``collect`` connects.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import msgspec
import pytest

from hpctui.core.config import ConfigError, parse_config
from hpctui.core.runtime import Runtime
from hpctui.model.accounting import AccountingInfo
from hpctui.sources.registry import CAPABILITIES, SOURCE_KINDS, SourceContext


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("building a source must not connect")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("kind", sorted(SOURCE_KINDS))
def test_each_kind_provides_exactly_what_it_declares(kind: str, no_network: None) -> None:
    entry = SOURCE_KINDS[kind]
    assert set(entry.provides) <= set(CAPABILITIES), "declare only known capabilities"
    source = entry.build(msgspec.convert({}, entry.settings_type), SourceContext())
    try:
        for protocol in CAPABILITIES:
            declared = protocol in entry.provides
            assert isinstance(source, protocol) is declared, (
                f"{kind}: {'declares' if declared else 'does not declare'} {protocol.__name__}")
    finally:
        asyncio.run(source.close())


def test_the_registry_names_its_abilities() -> None:
    provides = {k: {p.__name__ for p in e.provides} for k, e in SOURCE_KINDS.items()}
    assert provides["prometheus"] == {"HistoryProvider", "DetailFocus"}
    assert provides["k8s"] == {"ActionBackend", "PodInspector", "PodShell", "PodLogFollower"}
    assert provides["slurm"] == {"ActionBackend", "AccountingProvider", "JobAccounting", "JobShell", "JobOutputResolver",
                                 "JobOutlookProvider"}
    assert provides["demo"] == {"ActionBackend", "AccountingProvider", "JobAccounting", "JobOutlookProvider"}
    assert provides["ssh"] == {"NodeShell", "NodeLogReader"}
    assert provides["loki"] == {"LogQuerier"}
    assert provides["nvml"] == set()


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"clusters": {"a": {"sources": [{"kind": "lsf"}]}}})
    message = str(err.value)
    assert "unknown source kind 'lsf'" in message
    assert all(kind in message for kind in SOURCE_KINDS)


class _Accounting:
    """A source with accounting and a kind that is not ``slurm``: found by the Protocol, not the kind."""

    name = "acct"
    kind = "other"
    interval_s = 1.0

    def __init__(self) -> None:
        self.asked: list[tuple[str | None, str | None]] = []

    async def collect(self) -> Any:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    async def accounting(self, user: str | None = None, account: str | None = None) -> AccountingInfo:
        self.asked.append((user, account))
        return AccountingInfo(available=False, detail="test")


def test_runtime_accounting_finds_the_provider_by_protocol(tmp_path: Any) -> None:
    source = _Accounting()
    runtime = Runtime("t", [source], audit_path=tmp_path / "audit.jsonl")
    info = asyncio.run(runtime.accounting("alice", None))
    assert info is not None and info.detail == "test" and source.asked == [("alice", None)]
    bare = Runtime("t", [], audit_path=tmp_path / "audit2.jsonl")
    assert asyncio.run(bare.accounting(None, None)) is None
