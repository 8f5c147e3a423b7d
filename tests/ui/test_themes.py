"""Theme files: the shipped ones load; broken ones fail with one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpctui.ui.themes import DEFAULT_VARIABLES, ThemeError, find_theme_dirs, load_theme_file, load_themes

REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"


def test_builtin_themes_load_with_all_variables() -> None:
    themes = load_themes([REPO_THEMES])
    assert {"dark", "light", "wall"} <= set(themes)
    for theme in themes.values():
        assert set(DEFAULT_VARIABLES) <= set(theme.variables), theme.name
    assert themes["light"].dark is False and themes["wall"].background == "#000000"


def test_repo_themes_dir_is_found() -> None:
    assert any(d.resolve() == REPO_THEMES.resolve() for d in find_theme_dirs())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "expected"), [
    ('name = "x"\nprimary = "#112233"\n[variables\n', "invalid TOML"),
    ('primary = "#112233"\n', "name: missing"),
    ('name = "x"\n', "primary: missing"),
    ('name = "x"\nprimary = 12\n', "primary: expected a colour string, got int"),
    ('name = "x"\nprimary = "#112233"\ndark = "yes"\n', "dark: expected true or false"),
    ('name = "x"\nprimary = "not-a-colour"\n', "primary: not a colour"),
    ('name = "x"\nprimary = "#112233"\n[variables]\nheat-0 = 3\n', "variables.heat-0: expected a colour string"),
    ('name = "x"\nprimary = "#112233"\nvariables = 3\n', "variables: expected a table"),
    ('name = "x"\nprimary = "#112233"\nprimery = "#000000"\n', "primery: unknown key"),
])
def test_bad_theme_files(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    message = str(info.value)
    assert str(path) in message and expected in message
    assert "\n" not in message


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ThemeError, match="cannot read theme"):
        load_theme_file(tmp_path / "missing.toml")


def test_load_themes_skips_broken_and_reports(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('name = "good"\nprimary = "#112233"\n')
    (tmp_path / "bad.toml").write_text("name = \n")
    errors: list[str] = []
    themes = load_themes([tmp_path], errors=errors)
    assert list(themes) == ["good"]
    assert len(errors) == 1 and "bad.toml" in errors[0]


def test_user_theme_overrides_shipped(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text('name = "dark"\nprimary = "#FF0000"\n')
    themes = load_themes([REPO_THEMES, tmp_path])
    assert themes["dark"].primary == "#FF0000"
