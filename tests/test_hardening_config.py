"""Issue #6 §4: no config or theme file reaches a traceback, a hang or silent nonsense.

A corpus of broken files goes through the real command line (a subprocess each, with a
timeout): every one gives exactly one line on stderr and exit code 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpctui.actions.executor import ActionExecutor
from hpctui.core.config import ConfigError, load_config
from hpctui.model.action import ActionKind
from hpctui.sources.demo.source import DemoSource

DEMO = '[clusters.c]\nsources = [{ kind = "demo", size = 4 }]\n'
SLURM = '[clusters.c]\nsources = [{{ kind = "slurm", backend = "cli", {extra} }}]\n'

# name -> file content (str or bytes); special values are made by _make
CONFIGS: dict[str, str | bytes] = {
    "kind_is_a_list": '[clusters.c]\nsources = [{ kind = ["demo"] }]\n',
    "kind_is_a_number": '[clusters.c]\nsources = [{ kind = 5 }]\n',
    "kind_unknown": '[clusters.c]\nsources = [{ kind = "nope" }]\n',
    "kind_missing": '[clusters.c]\nsources = [{ size = 4 }]\n',
    "size_negative": '[clusters.c]\nsources = [{ kind = "demo", size = -5 }]\n',
    "size_zero": '[clusters.c]\nsources = [{ kind = "demo", size = 0 }]\n',
    "size_huge": '[clusters.c]\nsources = [{ kind = "demo", size = 70000 }]\n',
    "size_float": '[clusters.c]\nsources = [{ kind = "demo", size = 4.5 }]\n',
    "seed_negative": '[clusters.c]\nsources = [{ kind = "demo", seed = -1 }]\n',
    "demo_interval_zero": '[clusters.c]\nsources = [{ kind = "demo", interval_s = 0 }]\n',
    "demo_interval_nan": '[clusters.c]\nsources = [{ kind = "demo", interval_s = nan }]\n',
    "slurm_interval_negative": SLURM.format(extra="interval_s = -1"),
    "slurm_interval_tiny": SLURM.format(extra="interval_s = 0.01"),
    "slurm_timeout_inf": SLURM.format(extra="timeout_s = inf"),
    "slurm_timeout_nan": SLURM.format(extra="timeout_s = nan"),
    "slurm_timeout_huge": SLURM.format(extra="timeout_s = 1000"),
    "slurm_interval_string": SLURM.format(extra='interval_s = "5"'),
    "slurm_rest_without_url": '[clusters.c]\nsources = [{ kind = "slurm", backend = "rest" }]\n',
    "slurm_rest_url_scheme": SLURM.format(extra='rest_url = "ftp://x"'),
    "slurm_unknown_key": SLURM.format(extra='bindir = "/x"'),
    "slurm_backend_unknown": '[clusters.c]\nsources = [{ kind = "slurm", backend = "magic" }]\n',
    "thresholds_warn_above_crit": DEMO + "[thresholds]\ngpu_temp_warn_c = 95\ngpu_temp_crit_c = 90\n",
    "thresholds_nan": DEMO + "[thresholds]\nstale_factor = nan\n",
    "thresholds_string": DEMO + '[thresholds]\ngpu_temp_warn_c = "hot"\n',
    "thresholds_negative_ecc": DEMO + "[thresholds]\necc_corrected_warn = -1\n",
    "thresholds_unknown": DEMO + "[thresholds]\ngpu_temp = 80\n",
    "cluster_without_sources": "[clusters.c]\n",
    "cluster_empty_sources": "[clusters.c]\nsources = []\n",
    "no_clusters": 'theme = "dark"\n',
    "default_cluster_missing": 'default_cluster = "x"\n' + DEMO,
    "clusters_wrong_type": 'clusters = "x"\n',
    "sources_wrong_type": '[clusters.c]\nsources = "demo"\n',
    "read_only_string": 'read_only = "yes"\n' + DEMO,
    "unknown_top_key": 'colour = "dark"\n' + DEMO,
    "invalid_toml": "[clusters.c\nsources = \n",
    "not_utf8": b'[clusters.c]\nsources = [{ kind = "demo", name = "d\xff\xfe" }]\n',
    "control_chars_in_value": '[clusters.c]\nsources = [{ kind = "\x1b]0;PWNED\x07" }]\n'.replace("\x1b", "\\u001b").replace("\x07", "\\u0007"),
    "deeply_nested": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "too_big": "# " + "x" * (2 * 1024 * 1024) + "\n" + DEMO,
}
SPECIAL = ("dev_zero", "fifo", "directory", "missing")

# Theme files: put in the user theme dir, then `hpctui --demo` (the TUI path) must refuse to start.
THEME = 'name = "t"\nprimary = "#004578"\n'
THEMES: dict[str, str | bytes] = {
    "theme_bad_textual_variable": THEME + '[variables]\nfooter-key-foreground = "zzz"\n',
    "theme_bad_text_style": THEME + '[variables]\nlink-style = "blinky"\n',
    "theme_luminosity_inf": THEME + "luminosity_spread = inf\n",
    "theme_luminosity_nan": THEME + "luminosity_spread = nan\n",
    "theme_text_alpha_big": THEME + "text_alpha = 7\n",
    "theme_primary_not_a_colour": 'name = "t"\nprimary = "notacolour"\n',
    "theme_missing_name": 'primary = "#004578"\n',
    "theme_not_utf8": b'name = "t\xff"\nprimary = "#004578"\n',
    "theme_invalid_toml": 'name = "t\nprimary = \n',
    "theme_heat_not_colour": THEME + '[variables]\nheat-0 = "warm"\n',
    "theme_deeply_nested": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
}


def _make(tmp_path: Path, name: str) -> Path:
    if name == "dev_zero":
        return Path("/dev/zero")
    path = tmp_path / f"{name}.toml"
    if name == "fifo":
        os.mkfifo(path)
    elif name == "directory":
        path.mkdir()
    elif name == "missing":
        pass
    else:
        content = CONFIGS[name]
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "hpctui.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)


def _one_line_exit_2(proc: subprocess.Popen[bytes], what: str) -> str:
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{what}: hangs") from None
    text = err.decode("utf-8", errors="replace")
    assert proc.returncode == 2, f"{what}: rc {proc.returncode}, stderr {text[-2000:]!r}"
    assert text.endswith("\n") and text.count("\n") == 1, f"{what}: not one line: {text[-2000:]!r}"
    assert "Traceback" not in text and text.startswith("hpctui"), f"{what}: {text!r}"
    assert not any(ord(c) < 32 and c != "\n" for c in text), f"{what}: raw control in {text!r}"
    assert out == b"", what
    return text


def _reap(procs: object) -> None:
    for proc in procs:  # type: ignore[attr-defined]
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_corpus_of_broken_config_files(tmp_path: Path) -> None:
    names = [*CONFIGS, *SPECIAL]
    assert len(names) + len(THEMES) + 1 >= 30
    procs = {}
    for i, name in enumerate(names):
        path = _make(tmp_path, name)
        # global options before or after the subcommand, as users type them
        args = ("--config", str(path), "snapshot") if i % 2 else ("snapshot", "--config", str(path))
        procs[name] = _cli(*args)
    try:
        messages = {name: _one_line_exit_2(proc, name) for name, proc in procs.items()}
    finally:
        _reap(procs.values())
    assert "not UTF-8" in messages["not_utf8"] and "byte offset 50" in messages["not_utf8"]
    assert "not a regular file" in messages["fifo"] and "not a regular file" in messages["dev_zero"]
    assert "too large" in messages["too_big"]
    assert "nested too deeply" in messages["deeply_nested"]
    assert "gpu_temp_warn_c" in messages["thresholds_warn_above_crit"]
    assert "no source configured" in messages["cluster_without_sources"]
    assert "timeout_s" in messages["slurm_timeout_inf"] and "<= 300" in messages["slurm_timeout_inf"]
    assert "interval_s" in messages["demo_interval_zero"] and ">= 0.5" in messages["demo_interval_zero"]
    assert "kind: expected a string" in messages["kind_is_a_list"]


def test_corpus_of_broken_theme_files(tmp_path: Path) -> None:
    procs = {}
    for name, content in THEMES.items():
        xdg = tmp_path / name
        themes = xdg / "hpctui" / "themes"
        themes.mkdir(parents=True)
        (themes / "bad.toml").write_bytes(content if isinstance(content, bytes) else content.encode())
        procs[name] = _cli("--demo", env=dict(os.environ, XDG_CONFIG_HOME=str(xdg)))
    fifo_xdg = tmp_path / "fifo"
    (fifo_xdg / "hpctui" / "themes").mkdir(parents=True)
    os.mkfifo(fifo_xdg / "hpctui" / "themes" / "bad.toml")
    procs["theme_fifo"] = _cli("--demo", env=dict(os.environ, XDG_CONFIG_HOME=str(fifo_xdg)))
    procs["demo_size_huge"] = _cli("--demo", "--demo-size", "70000")
    try:
        messages = {name: _one_line_exit_2(proc, name) for name, proc in procs.items()}
    finally:
        _reap(procs.values())
    assert "footer-key-foreground" in messages["theme_bad_textual_variable"]
    assert "luminosity_spread" in messages["theme_luminosity_nan"]


def test_global_options_before_or_after_the_subcommand(tmp_path: Path) -> None:
    from hpctui.cli.main import split_subcommand

    cfg = tmp_path / "ok.toml"
    cfg.write_text(DEMO)
    assert split_subcommand(["--config", "snapshot", "snapshot"]) == ("snapshot", ["--config", "snapshot"])
    assert split_subcommand(["--demo", "--theme", "wall"]) == (None, ["--demo", "--theme", "wall"])
    for args in (("--config", str(cfg), "snapshot", "--format", "json"), ("snapshot", "--config", str(cfg))):
        proc = subprocess.run([sys.executable, "-m", "hpctui.cli.main", *args], capture_output=True, timeout=120,
                              check=False)
        assert proc.returncode == 0, proc.stderr


def test_an_app_crash_never_exits_0(tmp_path: Path) -> None:
    import pty

    code = ("import sys, hpctui.cli.main as c\nfrom hpctui.ui.app import HpcApp\n"
            "def boom(self): raise RuntimeError('kaboom')\n"
            "HpcApp.on_mount = boom\nsys.exit(c.main(['--demo', '--demo-size', '4']))\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave,
                            env=dict(os.environ, TERM="xterm", XDG_CONFIG_HOME=str(tmp_path)), start_new_session=True)
    os.close(slave)
    try:
        assert proc.wait(timeout=120) not in (0, None)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@pytest.mark.parametrize("reason", ["nl\nx", "esc\x1b[2J", "bidi\u202eevil", "zw\u200bx", "tab\tx"])
async def test_reason_validation_is_the_same_for_every_backend(reason: str, tmp_path: Path) -> None:
    """The demo backend accepted newline and ESC; now the executor applies one rule for all."""
    source = DemoSource(size=4, seed=1)
    ex = ActionExecutor([source], None, cluster="c")
    snap_result = await source.collect()
    from hpctui.core.store import Store

    store = Store("c")
    store.apply(snap_result)
    node = next(iter(store.snapshot().nodes))
    plan = ex.plan(ActionKind.DRAIN_NODES, [node], {"reason": reason}, store.snapshot())
    assert not plan.runnable
    assert "reason must be a single line of printable text" in plan.errors
    direct = source.plan(ActionKind.DRAIN_NODES, (node,), {"reason": reason}, store.snapshot())
    assert not direct.runnable


async def test_reason_is_shown_and_stored_as_slurm_stores_it() -> None:
    source = DemoSource(size=4, seed=1)
    ex = ActionExecutor([source], None, cluster="c")
    from hpctui.core.store import Store

    store = Store("c")
    store.apply(await source.collect())
    node = next(iter(store.snapshot().nodes))
    plan = ex.plan(ActionKind.DRAIN_NODES, [node], {"reason": ' "PSU failure" '}, store.snapshot())
    assert plan.runnable and plan.params["reason"] == "PSU failure"
    assert "reason as Slurm stores it: PSU failure" in plan.notes
    assert any('"PSU failure"' in c for c in plan.commands)  # the command line quotes it once
    result = await ex.execute(plan, confirmation=True)
    assert result.ok
    info = (await source.collect()).slurm_nodes[node]  # type: ignore[index]
    assert info.reason == "PSU failure"


def test_load_config_errors_are_config_errors(tmp_path: Path) -> None:
    for name in ("kind_is_a_list", "size_negative", "deeply_nested", "not_utf8", "fifo", "dev_zero"):
        with pytest.raises(ConfigError):
            load_config(_make(tmp_path, name))
