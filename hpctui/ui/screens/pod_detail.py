"""One Kubernetes pod in full (its object as YAML and its events) or its last log lines,
fetched on demand from the k8s source that knows it. Everything shown is sanitised text."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from hpctui.base.sanitize import clean_text
from hpctui.model import Pod
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime


class PodDetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss_screen", "Close"), *SCROLL_BINDINGS]
    DEFAULT_CSS = """
    PodDetailScreen { align: center middle; }
    PodDetailScreen > Vertical { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    PodDetailScreen #pod-title { text-style: bold; width: 100%; }
    """

    def __init__(self, runtime: Runtime, pod: Pod, what: str) -> None:
        super().__init__()
        self.runtime = runtime
        self.pod = pod
        self.what = what
        self.text: str | None = None  # what is shown, once loaded (tests read it)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"{self.what} pod {self.pod.namespace}/{self.pod.name}  (esc to close)", id="pod-title",
                        markup=False)
            with VerticalScroll():
                yield Static("loading…", id="pod-body", markup=False)

    def on_mount(self) -> None:
        self._load()

    @work(exclusive=True, group="pod-detail", description="pod detail")
    async def _load(self) -> None:
        method = "describe_pod" if self.what == "describe" else "pod_logs"
        text = f"no configured source can show {self.what}"
        for source in self.runtime.sources:
            fn = getattr(source, method, None)
            if fn is not None and inspect.iscoroutinefunction(fn):
                try:
                    text = await fn(self.pod.namespace, self.pod.name)
                except Exception as exc:  # shown, never raised into the UI
                    text = f"{type(exc).__name__}: {exc}"
                break
        self.text = clean_text(text, keep_newlines=True)
        self.query_one("#pod-body", Static).update(self.text)

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)

    def action_scroll_body(self, dx: int, dy: int) -> None:
        scroll_body(self, dx, dy)
