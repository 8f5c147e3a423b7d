"""Theme files: a small TOML format mapped onto :class:`textual.theme.Theme`.

Themes live outside the code so a site can add a wall-display palette without a
release. A bad file must never take the dashboard down: the loader raises
:class:`ThemeError` with one line naming the file and the key, and
:func:`load_themes` skips (and reports) broken files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import platformdirs
from textual.color import Color, ColorParseError
from textual.css.constants import VALID_STYLE_FLAGS
from textual.theme import Theme

# Textual Theme colours a file may set; "primary" is the only one Textual requires.
THEME_COLOURS = ("primary", "secondary", "accent", "background", "surface", "panel",
                 "foreground", "success", "warning", "error", "boost")
REQUIRED_KEYS = ("name", "primary")

# hpctui's own variables, used by the .tcss and by the heatmap's render_line. A theme
# that omits some still works: the app supplies these defaults (derived from nothing
# but themselves, so they read on dark and light backgrounds alike).
HEAT_LEVELS = 5
DEFAULT_VARIABLES: dict[str, str] = {
    "heat-0": "#1F3B57",
    "heat-1": "#22707A",
    "heat-2": "#4E9F3D",
    "heat-3": "#D99A22",
    "heat-4": "#D64545",
    "heat-na": "#55595E",
    # GPU utilisation (load, not health): never the error red of heat-4
    "util-0": "#1F3B57",
    "util-1": "#22607A",
    "util-2": "#1F8A8A",
    "util-3": "#2E9F6A",
    "util-4": "#4DB84E",
    "sev-ok": "#2F7D4E",
    "sev-info": "#3B76B0",
    "sev-warning": "#C9962A",
    "sev-error": "#D0513E",
    "sev-critical": "#B0206E",
    "sev-critical-text": "#D04A9A",  # critical as text; tables lighten/darken it to 4.5:1 (contrast.readable)
    "cell-text": "#F5F7FA",
    "pane-border": "#6B7580",  # unfocused pane borders: grey that shows on dark and light surfaces
}
_VAR_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


class ThemeError(Exception):
    """A theme file that cannot be used, phrased as one line for the user."""


def find_theme_dirs() -> list[Path]:
    """Where themes come from, lowest priority first (later files override earlier).

    The wheel ships the top-level ``themes/`` as ``hpctui/_themes``; a source
    checkout uses ``themes/`` itself; users add their own under the config dir.
    """
    package_root = Path(__file__).resolve().parent.parent
    dirs: list[Path] = []
    shipped = package_root / "_themes"
    repo = package_root.parent / "themes"
    if shipped.is_dir():
        dirs.append(shipped)
    elif repo.is_dir():
        dirs.append(repo)
    user = Path(platformdirs.user_config_dir("hpctui")) / "themes"
    if user.is_dir():
        dirs.append(user)
    return dirs


def _colour(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{path}: {key}: expected a colour string, got {type(value).__name__}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{path}: {key}: not a colour: {value!r}") from None
    return value


_AUTO = re.compile(r"^auto(?: \d{1,3}%)?$")  # Textual's contrast colour, e.g. "auto 87%"


def _variable(path: Path, key: str, value: str) -> str:
    """A Textual variable: a text style for ``*style*`` names, else a colour (as Textual parses them)."""
    if "style" in key:
        flags = value.split()
        if not flags or any(f not in VALID_STYLE_FLAGS for f in flags):
            raise ThemeError(f"{path}: variables.{key}: not a text style: {value!r} "
                             f"(words from: {', '.join(sorted(VALID_STYLE_FLAGS))})")
        return value
    if _AUTO.match(value) or value in ("initial", "transparent"):
        return value
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{path}: variables.{key}: not a colour: {value!r}") from None
    return value


def load_theme_file(path: Path) -> Theme:
    """Read and validate one theme file; raise ThemeError naming the file and key.

    Validated in full at load (size, regular file, UTF-8, every key and variable, finite
    numbers, and the theme is built once), so a theme never crashes the running app."""
    from hpctui.core.config import ConfigError, decode_toml, read_small_file

    try:
        data = decode_toml(read_small_file(path, "theme", limit=256 * 1024), str(path), "theme")
    except ConfigError as exc:
        raise ThemeError(str(exc)) from None
    for key in REQUIRED_KEYS:
        if key not in data:
            raise ThemeError(f"{path}: {key}: missing")
    known = {"name", "dark", "variables", "luminosity_spread", "text_alpha", *THEME_COLOURS}
    for key in data:
        if key not in known:
            raise ThemeError(f"{path}: {key}: unknown key")
    name = data["name"]
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{path}: name: expected a non-empty string")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{path}: dark: expected true or false, got {type(dark).__name__}")
    colours = {key: _colour(path, key, data[key]) for key in THEME_COLOURS if key in data}
    raw_vars = data.get("variables", {})
    if not isinstance(raw_vars, dict):
        raise ThemeError(f"{path}: variables: expected a table")
    variables: dict[str, str] = {}
    for key, value in raw_vars.items():
        if not _VAR_NAME.match(key):
            raise ThemeError(f"{path}: variables.{key}: bad variable name")
        if key in DEFAULT_VARIABLES:
            variables[key] = _colour(path, f"variables.{key}", value)
        elif isinstance(value, str):
            variables[key] = _variable(path, key, value)  # a Textual variable such as footer-key-foreground
        else:
            raise ThemeError(f"{path}: variables.{key}: expected a string, got {type(value).__name__}")
    numbers = {"luminosity_spread": 0.15, "text_alpha": 0.95}  # Textual's defaults
    for key in numbers:
        if key in data:
            value = data[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ThemeError(f"{path}: {key}: expected a number")
            if not math.isfinite(value) or not 0 <= value <= 1:
                raise ThemeError(f"{path}: {key}: expected a number from 0 to 1, got {value!r}")
            numbers[key] = float(value)
    theme = Theme(name=name.strip(), primary=colours["primary"], dark=dark, variables=variables,
                  luminosity_spread=numbers["luminosity_spread"], text_alpha=numbers["text_alpha"])
    for key, value in colours.items():
        setattr(theme, key, value)
    try:  # build it now, as the app will: a theme that cannot be built is refused here, not on `t`
        theme.to_color_system().generate()
    except Exception as exc:
        raise ThemeError(f"{path}: cannot build theme: {exc}") from None
    return theme


def load_themes(dirs: Iterable[Path] | None = None, errors: list[str] | None = None) -> dict[str, Theme]:
    """All themes found, by name. Broken files are skipped; their messages go to ``errors``."""
    themes: dict[str, Theme] = {}
    for directory in find_theme_dirs() if dirs is None else dirs:
        for path in sorted(Path(directory).glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ThemeError as exc:
                if errors is not None:
                    errors.append(str(exc))
                continue
            themes[theme.name] = theme
    return themes


__all__ = ["DEFAULT_VARIABLES", "HEAT_LEVELS", "ThemeError", "find_theme_dirs", "load_theme_file", "load_themes"]
