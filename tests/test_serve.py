"""`hpctui serve` without a browser: loopback and read-only by default, a remote host refused unless
the config allows it, the app options passed through to the app each tab runs (the live browser
test is tests/ui/test_serve_browser.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hpctui import cli
from hpctui.config import ConfigError
from hpctui.serve_cmd import add_serve_arguments, plan
from hpctui.ui.wall_settings import is_loopback


def parse(*argv: str) -> argparse.Namespace:
    parser = cli.OneLineParser(prog="hpctui serve")
    add_serve_arguments(parser)
    cli._add_source_options(parser)
    parser.add_argument("--read-only", action="store_true")
    return parser.parse_args(list(argv))


def write_config(tmp_path: Path, serve: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[serve]\n{serve}\n[clusters.lab]\nsources = [{{ kind = "demo", size = 8 }}]\n')
    return path


def test_defaults_are_loopback_and_read_only() -> None:
    host, port, read_only, argv = plan(parse("--demo"))
    assert (host, port, read_only) == ("127.0.0.1", 8765, True)
    assert argv == ["--demo", "--demo-size", "64", "--seed", "0", "--read-only"]


def test_options_pass_through_to_the_app(tmp_path: Path) -> None:
    config = write_config(tmp_path, "port = 9100")
    host, port, read_only, argv = plan(parse("--config", str(config), "--cluster", "lab", "--wall", "--theme", "light",
                                             "--port", "9200"))
    assert (host, port, read_only) == ("127.0.0.1", 9200, True)
    assert argv == ["--config", str(config.resolve()), "--cluster", "lab", "--theme", "light", "--wall", "--read-only"]


def test_actions_only_when_explicitly_allowed(tmp_path: Path) -> None:
    assert plan(parse("--demo", "--allow-actions"))[2] is False
    assert plan(parse("--demo", "--allow-actions", "--wall"))[2] is True, "the wall stays read-only"
    config = write_config(tmp_path, "allow_actions = true")
    _host, _port, read_only, argv = plan(parse("--config", str(config)))
    assert read_only is False and "--read-only" not in argv


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_a_remote_host_is_refused_without_allow_remote(host: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a loopback address and textual-serve has no authentication"):
        plan(parse("--demo", "--host", host))
    config = write_config(tmp_path, "allow_remote = true")
    assert plan(parse("--config", str(config), "--host", host))[0] == host


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "gpu01"))


def test_cli_refusals_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["serve", "--demo", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to serve on '0.0.0.0'" in err and "allow_remote = true" in err
    assert cli.main(["serve", "--demo", "--port", "70000"]) == 2
    assert "not a TCP port" in capsys.readouterr().err
    assert cli.main(["serve", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    assert cli.split_subcommand(["--demo", "serve", "--wall"]) == ("serve", ["--demo", "--wall"])
