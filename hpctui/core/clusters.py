"""Several clusters in one config, switchable at run time (``:cluster NAME``).

UI-free: it only knows the configured names and how to build one cluster's Runtime
(its own sources, store and health). The app stops the old runtime and starts the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hpctui.core.config import AppConfig
    from hpctui.core.runtime import Runtime


class ClusterSet:
    def __init__(self, names: list[str], build: Callable[[str], Runtime]) -> None:
        self.names = list(names)
        self._build = build
        self.prepare: Callable[[Runtime], None] | None = None  # each new runtime, before the app starts it

    def build(self, name: str) -> Runtime:
        if name not in self.names:
            raise KeyError(name)
        runtime = self._build(name)
        if self.prepare is not None:
            self.prepare(runtime)
        return runtime

    @classmethod
    def from_config(cls, config: AppConfig, *, read_only: bool | None = None,
                    theme: str | None = None) -> ClusterSet:
        from hpctui.core.runtime import runtime_from_config

        return cls(list(config.clusters), lambda name: runtime_from_config(config, name, read_only=read_only,
                                                                          theme=theme))
