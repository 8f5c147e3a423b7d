"""Log reads (issue 26): Slurm filename patterns, the tail and journal parsers, pod log timestamps,
the journal lines' way into the event timeline and the incident report. Pure: no peer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpctui.core.logs import LogService, journal_severity
from hpctui.core.store import Store
from hpctui.model.common import Severity
from hpctui.model.output import NodeOutput
from hpctui.report.incident import build_report
from hpctui.sources.k8s.source import split_log_timestamps
from hpctui.sources.slurm.outpath import NO_VAL, JobPathFacts, expand_pattern, paths_from_scontrol
from hpctui.sources.ssh.logs import (
    grep_lines,
    journal_argv,
    oldest_first,
    parse_journal,
    parse_tail,
    tail_argv,
    wrap_preamble,
)

FIX = Path(__file__).parent / "fixtures" / "logs"
JOB = JobPathFacts(job_id=128, name="train", user="alice", batch_host="gpu01.lab", work_dir="/home/alice/run")


# -- sbatch filename patterns ----------------------------------------------------------------------
@pytest.mark.parametrize(("pattern", "path"), [
    ("job%J.out", "/home/alice/run/job128.out"),  # the batch step: no ".0"
    ("job%4j.out", "/home/alice/run/job0128.out"),  # the man page's example
    ("/scratch/%u/%x-%j.%N.out", "/scratch/alice/train-128.gpu01.out"),  # %N: the short host name
    ("%x_%A_%a.log", f"/home/alice/run/train_128_{NO_VAL}.log"),  # not an array: %A is the job, %a NO_VAL
    ("100%%-%s-%n-%t.txt", "/home/alice/run/100%-batch-0-0.txt"),
    ("/tmp/a\\\\%j.out", "/tmp/a%j.out"),  # a backslash: no symbol is processed
    ("/tmp/%q-%j", "/tmp/%q-128"),  # not a symbol: kept
])
def test_expand_pattern_follows_sbatch_man_page(pattern: str, path: str) -> None:
    assert expand_pattern(pattern, JOB) == path


def test_expand_pattern_array_task_and_padding() -> None:
    task = JobPathFacts(job_id=3, array_job_id=2, array_task_id=17, name="sweep", work_dir="/w")
    assert expand_pattern("%x_%A_%a_%3a_%b.log", task) == "/w/sweep_2_17_017_7.log"
    pending = JobPathFacts(job_id=9, name="x")  # %N unknown until the job has a batch host: kept
    assert expand_pattern("/o/%N-%j", pending) == "/o/%N-9"


def test_the_man_page_fixture_lists_every_symbol_we_fill() -> None:
    text = (FIX / "sbatch_filename_pattern_22.05.man").read_text()
    for symbol in ("%%", "%A", "%a", "%J", "%j", "%N", "%n", "%s", "%t", "%u", "%x"):
        assert f"\\fB{symbol}\\fR" in text


def test_paths_from_real_scontrol_give_the_files_slurmd_wrote() -> None:
    """22.05's scontrol fills %x %j %u %A %a but not %N nor %4j: the rest is ours (fixtures/logs/README.md)."""
    lines = (FIX / "scontrol_show_job_outpaths_22.05.txt").read_text().splitlines()
    hello = paths_from_scontrol(lines[0])
    assert hello is not None and hello.job == "1" and hello.host == "cpu01"
    assert hello.stdout == "/tmp/hpctui-slurmlab-_wa18c3t/jobs/hello-1.cpu01.out"
    assert hello.stderr == "/tmp/hpctui-slurmlab-_wa18c3t/jobs/err-root-0001.txt"
    sweep = paths_from_scontrol(lines[1])
    assert sweep is not None and sweep.job == "2_0"
    assert sweep.stdout == "/tmp/hpctui-slurmlab-_wa18c3t/jobs/sweep_2_0.log" and sweep.stderr is None
    assert hello.work_dir == sweep.work_dir == "/tmp/hpctui-slurmlab-_wa18c3t/jobs"  # WorkDir= (job detail's quota)
    assert paths_from_scontrol("") is None


def test_paths_from_real_scontrol_24_11() -> None:
    """24.11 fills the padded %4j itself, still not %N: the files slurmd wrote either way."""
    lines = (FIX / "scontrol_show_job_outpaths_24.11.txt").read_text().splitlines()
    hello, sweep = paths_from_scontrol(lines[0]), paths_from_scontrol(lines[1])
    assert hello is not None and sweep is not None
    assert hello.stdout is not None and hello.stdout.endswith("/jobs/hello-1.cpu01.out")
    assert hello.stderr is not None and hello.stderr.endswith("/jobs/err-root-0001.txt")
    assert sweep.job == "2_0" and sweep.stdout is not None and sweep.stdout.endswith("/jobs/sweep_2_0.log")


def test_raw_squeue_json_patterns_expand_to_the_same_files() -> None:
    for job, want in zip(json.loads((FIX / "squeue_json_outpaths_22.05.json").read_text()),
                         ("hello-1.cpu01.out", "sweep_2_0.log"), strict=True):
        facts = JobPathFacts(job_id=job["job_id"], array_job_id=job.get("array_job_id"),
                             array_task_id=job.get("array_task_id"), name=job["name"], user=job["user_name"],
                             batch_host=job["batch_host"], work_dir=job["current_working_directory"])
        assert expand_pattern(job["standard_output"], facts).endswith("/" + want)


# -- the tail read ---------------------------------------------------------------------------------
def _out(text: str, **kw: object) -> NodeOutput:
    return NodeOutput(label="n1", output=text, rc=0, **kw)  # type: ignore[arg-type]


def test_parse_tail_errors_are_plain_words() -> None:
    assert parse_tail(_out("HPCTUI-LOG error=no such file"), "n1:/x", None).error == "no such file"
    assert parse_tail(_out("HPCTUI-LOG error=permission denied"), "n1:/x", None).error == "permission denied"
    assert parse_tail(NodeOutput(label="n1", error="connection refused"), "n1:/x", None).error == "connection refused"
    assert parse_tail(_out("sh: 1: tail: not found"), "n1:/x", None).error == "unexpected answer: sh: 1: tail: not found"


def test_parse_tail_whole_file_cut_and_restart() -> None:
    whole = parse_tail(_out("HPCTUI-LOG size=12 start=0 restart=0\na\nb"), "n1:/x", None)
    assert whole.lines == ("a", "b") and whole.offset == 12 and not whole.cut
    cut = parse_tail(_out("HPCTUI-LOG size=900 start=100 restart=0\nrtial\nc\nd"), "n1:/x", None)
    assert cut.lines == ("c", "d") and cut.cut  # the first line began mid-line
    follow = parse_tail(_out("HPCTUI-LOG size=20 start=12 restart=0\ne"), "n1:/x", 12)
    assert follow.lines == ("e",) and follow.offset == 20 and not follow.cut
    shrunk = parse_tail(_out("HPCTUI-LOG size=3 start=0 restart=1\nnew"), "n1:/x", 20)
    assert shrunk.restarted and shrunk.lines == ("new",)


def test_tail_argv_keeps_the_path_one_word() -> None:
    argv = tail_argv("/home/a b/$(id);x.out", None, 1000)
    assert argv[-3:] == ["/home/a b/$(id);x.out", "-1", "1000"] and argv[0] == "sh"
    assert wrap_preamble(argv, "") == argv
    wrapped = wrap_preamble(["journalctl", "-k"], "PATH=/shim:$PATH")
    assert wrapped[:2] == ["sh", "-c"] and wrapped[-2:] == ["journalctl", "-k"]


# -- the journal -----------------------------------------------------------------------------------
def test_journal_argv_window_and_units() -> None:
    argv = journal_argv(1000.5, 2000.2, kernel=True, units=("nvidia-fabricmanager", "slurmd.service"), max_lines=50)
    assert argv[:5] == ["journalctl", "--no-pager", "-q", "-o", "short-unix"]
    assert "--since=@1000" in argv and "--until=@2001" in argv and argv[argv.index("-n") + 1] == "50" and "-r" in argv
    assert "-k" in argv and argv.count("-u") == 2
    with pytest.raises(ValueError, match="not a systemd unit"):
        journal_argv(0, 1, units=("x; rm -rf /",))


def test_parse_journal_short_unix_lines() -> None:
    text = ("-- No entries --\n"
            "1764644401.123456 gpu01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n"
            "1764644402.000000 gpu01 nv-fabricmanager[2211]: request to query NVSwitch failed\n"
            "1764644403.5 gpu01 kernel: evil \x1b]0;title\x07 text\n"
            "garbage line\n")
    lines = parse_journal(text, "gpu01")
    assert [(ln.time, ln.ident) for ln in lines] == [(1764644401.123456, "kernel"), (1764644402.0, "nv-fabricmanager"),
                                                     (1764644403.5, "kernel")]
    assert lines[0].message.startswith("NVRM: Xid (PCI:0000:18:00): 79")
    assert "\x1b" not in lines[2].message and "\x07" not in lines[2].message
    assert grep_lines(["a Xid b", "nothing"], "xid") == ["a Xid b"] and grep_lines(["x"], None) == ["x"]
    assert journal_severity(lines[0].message) is Severity.WARNING
    assert journal_severity("Started Session 4 of user root.") is Severity.INFO


class _Reader:
    name = "ssh"
    log_host = None

    async def read_file(self, host: str, path: str, offset: int | None = None, max_bytes: int = 0) -> object:
        raise AssertionError

    async def journal(self, hosts: object, since: float, until: float, **kw: object) -> list[NodeOutput]:
        line = f"{since + 10:.6f} {{h}} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
        return [NodeOutput(label="gpu01", output=line.format(h="gpu01"), rc=0),
                NodeOutput(label="gpu02", output=line.format(h="gpu02"), rc=0),
                NodeOutput(label="gpu03", error="connection refused")]


async def test_journal_fans_out_folds_and_feeds_the_timeline_and_report() -> None:
    store = Store("c")
    service = LogService(lambda: [_Reader()], lambda: store)
    read = await service.journal(["gpu01", "gpu02", "gpu03"], 1_764_644_000.0, 1_764_644_600.0, grep="xid")
    assert read is not None and read.where == "gpu[01-03]" and read.added_events == 2
    assert read.folded.count("----------------") == 4  # two blocks (each line names its host)
    assert "FAILED gpu03 (1): connection refused" in read.folded
    again = await service.journal(["gpu01", "gpu02"], 1_764_644_000.0, 1_764_644_600.0)
    assert again is not None and again.added_events == 0  # each line once in the timeline
    snap = store.snapshot()
    journal = [e for e in snap.events if e.source == "journal"]
    assert {e.object for e in journal} == {"node/gpu01", "node/gpu02"}
    assert all(e.severity is Severity.WARNING for e in journal)
    doc = build_report(snap, nodes=["gpu01"], jobs=[], since_s=3600, now=1_764_644_700.0)
    rows = [r for r in doc["timeline"] if r["source"] == "journal"]
    assert len(rows) == 1 and rows[0]["object"] == "node/gpu01" and "Xid" in rows[0]["message"]


async def test_no_node_reader_means_none_not_an_error() -> None:
    service = LogService(list, lambda: Store("c"))
    assert await service.journal(["a"], 0, 1) is None
    chunk = await service.read_file("a", "/x")
    assert chunk.error is not None and "no SSH source" in chunk.error
    assert await service.job_output_paths("1") is None and await service.pod_log_lines("ns", "p") is None


# -- pod logs --------------------------------------------------------------------------------------
def test_pod_log_timestamps_split_and_follow_from_the_last() -> None:
    text = ("2026-12-02T03:00:00.1Z first\n"
            "2026-12-02T03:00:00.12Z second\n"  # Go trims zeros: .1 < .12 although it sorts after as text
            "2026-12-02T03:00:01Z third\x1b[31m\n")
    lines, last = split_log_timestamps(text)
    assert lines == ["first", "second", "third\ufffd"] and last == "2026-12-02T03:00:01Z"
    again, last2 = split_log_timestamps(text, since="2026-12-02T03:00:00.1Z")
    assert again == ["second", "third\ufffd"] and last2 == "2026-12-02T03:00:01Z"
    none, last3 = split_log_timestamps(text, since=last)
    assert none == [] and last3 == last


# -- real journalctl 252 output (tests/fixtures/logs/README.md) and the shim against it -------------
def test_parse_real_journalctl_short_unix() -> None:
    lines = parse_journal((FIX / "journalctl_short_unix_252.txt").read_text(), "gpu01")
    assert len(lines) == 7 and [ln.ident for ln in lines].count("kernel") == 6
    assert lines[2].time == 1764644402.5 and lines[2].message.startswith("NVRM: Xid (PCI:0000:9b:00): 119,")
    assert lines[-1].ident == "nv-fabricmanager" and lines[-1].host == "gpu01"


def test_reverse_window_read_is_put_back_in_time_order() -> None:
    raw = (FIX / "journalctl_short_unix_window_reverse_252.txt").read_text().rstrip("\n")
    out = oldest_first(NodeOutput(label="gpu01", output=raw, rc=0))
    times = [ln.time for ln in parse_journal(out.output, "gpu01")]
    assert times == [1764644403.75, 1764644405.0, 1764644406.25]  # the newest 3 of the window, in order
    failed = NodeOutput(label="gpu01", output="b\na", rc=1)
    assert oldest_first(failed) is failed


def test_the_journalctl_shim_prints_what_the_real_one_printed(tmp_path: Path) -> None:
    """The shim's window mode on a node whose kernel log holds the real lines: byte-equal to journalctl 252."""
    import shutil
    import subprocess

    real = (FIX / "journalctl_short_unix_252.txt").read_text()
    shim = Path(__file__).parent / "testbed" / "nodeshims" / "bin"
    node = tmp_path / "nodes" / "gpu01"
    (node / "faults").mkdir(parents=True)
    (node / "kmsg").write_text("".join(ln + "\n" for ln in real.splitlines() if " kernel: " in ln))
    env = {"PATH": "/usr/bin:/bin", "HPCTUI_SHIM_ROOT": str(tmp_path), "HPCTUI_SHIM_NODE": "gpu01"}
    argv = ["sh", str(shim / "journalctl"), "--no-pager", "-q", "-o", "short-unix", "-k"]
    window = subprocess.run([*argv, "--since=@1764644401", "--until=@1764644410", "-n", "3", "-r"], env=env,
                            capture_output=True, text=True, check=True).stdout
    assert window == (FIX / "journalctl_short_unix_window_reverse_252.txt").read_text()
    empty = subprocess.run([*argv, "--since=@1", "--until=@2", "-r", "-n", "3"], env=env, capture_output=True,
                           text=True, check=True)
    assert empty.stdout == "" and empty.returncode == 0
    assert shutil.which("sh")


def test_paths_from_real_rest_job_answers() -> None:
    """slurmrestd's job record carries the raw patterns (v0.0.38 plain numbers, v0.0.42 {set, number})."""
    from hpctui.sources.slurm.outpath import paths_from_job_json

    slurm = Path(__file__).parent / "fixtures" / "slurm"
    v38 = paths_from_job_json(json.loads((slurm / "rest_v0.0.38_job_1.json").read_text()))
    assert v38 is not None and v38.job == "1" and v38.host == "gpu01"
    assert v38.stdout == "/tmp/slurmlab/jobs/train-llm-1.out" and v38.stderr is None  # "" = with stdout
    assert v38.work_dir == "/tmp/slurmlab/jobs"  # current_working_directory
    v42 = paths_from_job_json(json.loads((slurm / "rest_24.11_v0.0.42_jobs.json").read_text()))
    assert v42 is not None and v42.job == "1" and v42.stdout == "/dev/null"
    assert paths_from_job_json({"jobs": []}) is None and paths_from_job_json([1]) is None
