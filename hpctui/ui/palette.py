"""Theme variables → Rich styles for Line-API widgets (render_line).

CSS cannot colour individual cells of a heatmap, so those widgets read the
current theme's variables once, build their styles, and rebuild on theme change.
"""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color as RichColor
from rich.style import Style
from textual.app import App
from textual.color import Color, ColorParseError

from hpctui.ui.themes import DEFAULT_VARIABLES


@lru_cache(maxsize=256)
def _parse(value: str) -> RichColor | None:
    try:
        return Color.parse(value).rich_color
    except ColorParseError:
        return None


class Palette:
    """Resolved colours of one theme; cheap to build, rebuilt on every theme change."""

    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = variables

    @classmethod
    def from_app(cls, app: App[object]) -> Palette:
        variables = dict(app.theme_variables) or app.get_css_variables()
        return cls(variables)

    def color(self, name: str) -> RichColor | None:
        value = self.variables.get(name) or DEFAULT_VARIABLES.get(name)
        return None if value is None else _parse(value)

    def solid(self, name: str) -> Color | None:
        """A variable's colour blended over the background (variables may carry alpha)."""
        value = self.variables.get(name) or DEFAULT_VARIABLES.get(name)
        if value is None:
            return None
        try:
            colour = Color.parse(value)
            background = Color.parse(self.variables.get("background", "#000000"))
        except ColorParseError:
            return None
        return background + colour

    def on(self, name: str, bold: bool = False) -> Style:
        """Background ``name`` with a readable (contrasting) text colour."""
        bg = self.solid(name)
        if bg is None:
            return Style(reverse=True, bold=bold or None)
        return Style(bgcolor=bg.rich_color, color=bg.get_contrast_text(1.0).rich_color, bold=bold or None)

    def bg(self, name: str, fg: str | None = None, bold: bool = False) -> Style:
        return Style(bgcolor=self.color(name), color=self.color(fg) if fg else None, bold=bold or None)

    def fg(self, name: str, bold: bool = False) -> Style:
        return Style(color=self.color(name), bold=bold or None)
