"""Custom actions: config validation, placeholder quoting, folding, local runs, read-only, audit."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from hpctui.actions.custom import (
    CustomActionSettings,
    CustomRun,
    Invocation,
    check_actions,
    plan_custom,
    show_arg,
)
from hpctui.actions.fold import NodeOutput, clean_output, fold, header, render
from hpctui.core.config import ConfigError, parse_config
from hpctui.core.runtime import demo_runtime
from hpctui.model import ClusterSnapshot, Pod, SlurmJob

HOSTILE = ["; rm -rf /", "$(touch /tmp/hpctui-pwned)", "`id`", "a\nb", "\x1b[31mred\x1b]0;t\x07", "' \" \\ *", "-rf"]
ARGV_DUMP = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))"]


def action(**kw: object) -> CustomActionSettings:
    kw.setdefault("name", "t")
    kw.setdefault("command", ["echo", "{nodes}"])
    return msgspec.convert(kw, CustomActionSettings)


# -- folding -----------------------------------------------------------------------------------------


def test_identical_outputs_fold_into_one_node_set_with_clush_header() -> None:
    outs = [NodeOutput(label=f"gpu{i:04d}", output="driver 550", rc=0) for i in (7, 1, 2, 3, 4)]
    outs.append(NodeOutput(label="gpu0005", output="driver 535", rc=0))
    folds = fold(outs)
    assert [f.labels for f in folds] == [("gpu0001", "gpu0002", "gpu0003", "gpu0004", "gpu0007"), ("gpu0005",)]
    assert folds[0].header == "---------------- gpu[0001-0004,0007] (5) ----------------"
    assert header(["gpu0005"]) == "---------------- gpu0005 (1) ----------------"


def test_fold_order_does_not_depend_on_who_answered_first() -> None:
    outs = [NodeOutput(label=f"n{i}", output="odd" if i % 2 else "even", rc=0) for i in range(1, 12)]
    forward = render(outs)
    backward = render(list(reversed(outs)))
    assert forward == backward
    assert forward.index("n[1,3,5,7,9,11]") < forward.index("n[2,4,6,8,10]")  # natural order, n2 < n10


def test_unreachable_and_timed_out_nodes_are_listed_apart_with_their_error() -> None:
    outs = [NodeOutput(label="gpu01", output="ok", rc=0), NodeOutput(label="gpu02", output="ok", rc=0),
            NodeOutput(label="gpu03", error="connection refused"),
            NodeOutput(label="gpu04", error="timed out after 2 s"),
            NodeOutput(label="gpu05", error="connection refused"),
            NodeOutput(label="gpu06", output="ok", rc=3)]
    text = render(outs)
    assert [f.labels for f in fold(outs)] == [("gpu01", "gpu02", "gpu06")]  # same output; the code is apart
    assert "exit code 3: gpu06 (1)" in text
    assert "FAILED gpu[03,05] (2): connection refused" in text
    assert "FAILED gpu04 (1): timed out after 2 s" in text
    assert "gpu03" not in text.split("FAILED")[0]  # not inside any fold


def test_output_is_sanitised_lines_kept_and_cut() -> None:
    raw = b"line1\x1b[2J\x1b]0;pwn\x07\nline2\r\n\xff\xfe\n"
    text = clean_output(raw)
    assert "\x1b" not in text and "\x07" not in text
    assert text.splitlines()[0].startswith("line1") and text.splitlines()[1] == "line2"
    assert "cut at 10 bytes" in clean_output(b"x" * 100, limit=10)


def test_tabs_are_expanded_not_replaced() -> None:
    # ibstat indents with tabs: they line up as spaces, never as "\ufffd"
    text = clean_output(b"CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\nab\tc\n")
    assert "\ufffd" not in text and "\t" not in text
    assert text.splitlines() == ["CA 'mlx5_0'", "        CA type: MT4129", "        Port 1:",
                                 "                State: Active", "ab      c"]


# -- config -------------------------------------------------------------------------------------------


def _config(**custom: object) -> dict[str, object]:
    return {"clusters": {"c": {"sources": [{"kind": "demo"}]}}, "custom_actions": [{"name": "a", **custom}]}


@pytest.mark.parametrize(("custom", "message"), [
    ({"command": ["echo", "{bogus}"]}, "unknown placeholder {bogus}"),
    ({"command": "echo {job}", "scope": "nodes"}, "placeholder {job} does not fit scope = \"nodes\" (needs scope = \"jobs\")"),
    ({"command": "echo {pod}", "scope": "jobs"}, "does not fit scope = \"jobs\""),
    ({"command": []}, "command: empty"),
    ({"command": ""}, "command: empty"),
    ({"command": "echo 'unclosed"}, "command: No closing quotation"),
    ({"command": "echo {user}", "scope": "jobs", "run": "ssh"}, "cannot be used with run = \"ssh\""),
    ({"command": "echo {node!r}"}, "takes no format spec"),
    ({"command": "echo {node"}, "bad template"),
    ({"command": "{node} x"}, "the program (first element) cannot be a placeholder"),
    ({"command": "echo", "scope": "racks"}, "custom_actions[0].scope"),
    ({"command": "echo", "run": "pdsh"}, "custom_actions[0].run"),
    ({"command": "echo", "typo": 1}, "custom_actions[0].typo: unknown key"),
    ({"command": "echo", "name": "a b"}, "letters, digits"),
    ({"command": "echo", "timeout_s": 0}, "timeout_s"),
])
def test_config_errors_are_one_line(custom: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(_config(**custom), "x.toml")
    text = str(exc.value)
    assert "\n" not in text and text.startswith("x.toml: ") and message in text


def test_config_names_and_keys_are_unique() -> None:
    with pytest.raises(ValueError, match="used twice"):
        check_actions([action(name="x"), action(name="x")])
    with pytest.raises(ValueError, match="taken by 'x'"):
        check_actions([action(name="x", key="ctrl+e"), action(name="y", key="ctrl+e")])
    check_actions([action(name="x", key="ctrl+e"), action(name="y", key="ctrl+e", scope="jobs", command="echo {job}")])


def test_a_valid_config_parses_with_string_and_list_commands() -> None:
    cfg = parse_config(_config(command="dcgmi diag -r 1", run="ssh", key="ctrl+g"))
    assert cfg.custom_actions[0].argv == ("dcgmi", "diag", "-r", "1")


def test_key_taken_on_its_pane_is_a_config_error_of_the_app() -> None:
    from hpctui.ui.keys import CustomKeyError, custom_key_specs

    with pytest.raises(CustomKeyError, match=r"'d' is taken .* node\.drain"):
        custom_key_specs([action(key="d")])
    with pytest.raises(CustomKeyError, match=r"table\.sort"):
        custom_key_specs([action(key="o", scope="jobs", command="echo {job}")])
    with pytest.raises(CustomKeyError, match="cursor movement"):
        custom_key_specs([action(key="down")])
    spec = custom_key_specs([action(name="diag", key="ctrl+g")])[0]
    assert (spec.id, spec.key, spec.scope) == ("custom.diag", "ctrl+g", "heatmap")


def test_the_app_refuses_a_taken_key_with_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.c]\nsources = [{kind = "demo", size = 4}]\n'
                   '[[custom_actions]]\nname = "x"\nkey = "d"\ncommand = "true"\n')
    proc = subprocess.run([sys.executable, "-m", "hpctui", "--config", str(cfg)], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "key 'd' is taken" in proc.stderr


# -- placeholders: one literal argument, whatever they hold ---------------------------------------------


def _job_snapshot(users: list[str]) -> ClusterSnapshot:
    jobs = tuple(SlurmJob(job_id=100 + i, user=u, nodes="gpu01", state="RUNNING") for i, u in enumerate(users))
    pods = tuple(Pod(namespace=u, name=u, node="gpu01") for u in users)
    return ClusterSnapshot(cluster="c", time=0.0, jobs=jobs, pods=pods)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_arrive_as_one_literal_argument_locally(value: str) -> None:
    snap = _job_snapshot([value])
    a = action(scope="jobs", command=[*ARGV_DUMP, "{user}", "x{user}y"])
    plan = plan_custom(a, ["100"], snap)
    assert plan.runnable, plan.errors
    (inv,) = plan.invocations
    assert inv.argv[-2:] == (value, f"x{value}y")
    out = asyncio.run(_local(inv))
    assert json.loads(out.output) == [value, f"x{value}y"]
    assert out.rc == 0
    assert not Path("/tmp/hpctui-pwned").exists()


async def _local(inv: Invocation) -> NodeOutput:
    from hpctui.actions.custom import run_local

    return await run_local(inv, 30, 1 << 20)


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_hostile_values_survive_the_remote_shell_as_one_word(shell: str) -> None:
    """sshd runs the remote command as ``$SHELL -c LINE``: every element must come out literal."""
    snap = _job_snapshot(HOSTILE)
    a = action(scope="jobs", command=[*ARGV_DUMP, "{user}", "{job}:{user}"])
    for i, value in enumerate(HOSTILE):
        (inv,) = plan_custom(a, [str(100 + i)], snap).invocations
        assert shlex.split(inv.remote) == list(inv.argv)
        proc = subprocess.run([shell, "-c", inv.remote], capture_output=True, timeout=30)
        assert json.loads(proc.stdout) == [value, f"{100 + i}:{value}"]
    assert not Path("/tmp/hpctui-pwned").exists()


def test_pod_placeholders_fill_from_the_pod() -> None:
    snap = ClusterSnapshot(cluster="c", time=0.0, pods=(Pod(namespace="ml", name="train-0", node="gpu01"),))
    plan = plan_custom(action(scope="pods", command="kubectl -n {namespace} exec {pod} -- nvidia-smi -L"),
                       ["ml/train-0"], snap)
    assert plan.invocations[0].argv == ("kubectl", "-n", "ml", "exec", "train-0", "--", "nvidia-smi", "-L")
    assert not plan_custom(action(scope="pods", command="echo {pod}"), ["ml/nope"], snap).runnable


class _CountingTuple(tuple):  # type: ignore[type-arg]
    """A snapshot part that counts how often it is walked."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().__iter__()

    def __reversed__(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return iter(tuple.__getitem__(self, slice(None, None, -1)))


def test_job_and_pod_targets_are_looked_up_once_per_plan_not_per_target() -> None:
    jobs = [SlurmJob(job_id=100 + i, user=f"u{i}", nodes=f"gpu{i:02d}", state="RUNNING") for i in range(50)]
    jobs.append(SlurmJob(job_id=900, array_job_id=800, array_task_id=3, user="arr", nodes="gpu77", state="RUNNING"))
    jobs.append(SlurmJob(job_id=100, user="dup", nodes="gpu99", state="RUNNING"))  # a later duplicate id
    pods = [Pod(namespace="ml", name=f"train-{i}", node=f"gpu{i:02d}") for i in range(50)]
    _CountingTuple.walks = 0
    snap = ClusterSnapshot(cluster="c", time=0.0, jobs=_CountingTuple(jobs), pods=_CountingTuple(pods))
    plan = plan_custom(action(scope="jobs", command="echo {job} {user}"),
                       [str(100 + i) for i in range(0, 50, 2)] + ["800_3", "nope"], snap)
    assert plan.errors == ("unknown job 'nope'",)
    assert plan.targets == (*(str(100 + i) for i in range(0, 50, 2)), "800_3")
    assert plan_custom(action(scope="jobs", command="echo {job}"), ["900"], snap).targets == ("800_3",)  # by job id
    assert plan_custom(action(scope="jobs", command="echo {job} {user}"), ["100"], snap).invocations[0].argv \
        == ("echo", "100", "u0")  # the first job in queue order, as before
    pod_plan = plan_custom(action(scope="pods", command="echo {pod} {node}"),
                           [f"ml/train-{i}" for i in range(50)] + ["ml/nope", "train-1"], snap)
    assert pod_plan.errors == ("unknown pod 'ml/nope' (namespace/name)", "unknown pod 'train-1' (namespace/name)")
    assert pod_plan.targets == tuple(f"ml/train-{i}" for i in range(50))
    assert _CountingTuple.walks == 4  # four plans: one walk of the queue (or the pods) each, not one per target


def test_preview_shows_argv_with_control_characters_visible() -> None:
    assert show_arg("a\nb") == "$'a\\nb'"
    assert show_arg("\x1b[31m") == "$'\\x1b[31m'"
    assert show_arg("; rm -rf /") == "'; rm -rf /'"
    snap = _job_snapshot(["\x1b]0;x\x07"])
    plan = plan_custom(action(scope="jobs", command="echo {user}"), ["100"], snap)
    assert all("\x1b" not in c and "\x07" not in c for c in plan.commands())


def test_node_targets_are_hostlists_and_nodes_csv_is_comma_separated() -> None:
    a = action(command=["ansible-playbook", "site.yml", "--limit", "{nodes_csv}", "-e", "set={nodes}"])
    plan = plan_custom(a, ["gpu[01-03]", "gpu07"], None)
    (inv,) = plan.invocations
    assert inv.label == "local"
    assert inv.argv == ("ansible-playbook", "site.yml", "--limit", "gpu01,gpu02,gpu03,gpu07", "-e", "set=gpu[01-03,07]")
    per_node = plan_custom(action(command="echo {node}"), ["gpu[01-02]"], None)
    assert [i.argv for i in per_node.invocations] == [("echo", "gpu01"), ("echo", "gpu02")]
    one = plan_custom(action(command="ibdiagnet -o /tmp/ibdiag-{node}", run="ssh", max_targets=1), ["gpu[01-02]"], None)
    assert one.errors == ("t runs on at most 1 target(s); 2 selected",)
    bad = plan_custom(a, ["gpu[01-"], None)
    assert not bad.runnable and "bad hostlist" in bad.errors[0]


# -- running locally ------------------------------------------------------------------------------------


def _runtime(tmp_path: Path, *actions: CustomActionSettings, read_only: bool = False):  # type: ignore[no-untyped-def]
    rt = demo_runtime(size=8, read_only=read_only, audit_path=tmp_path / "audit.jsonl")
    rt.custom_actions = tuple(actions)
    return rt


def _go(rt, name: str, targets: list[str], confirmation: str | bool = True) -> CustomRun:  # type: ignore[no-untyped-def]
    from hpctui.actions.custom import new_run

    async def main() -> CustomRun:
        await rt.collect_once()
        run = new_run(rt, name, targets, confirmation)
        await run.start()
        await rt.stop()
        return run

    return asyncio.run(main())


PARITY = ["sh", "-c", 'case "$1" in *[13579]) echo odd;; *) echo even; exit 3;; esac', "sh", "{node}"]


def test_local_per_node_run_folds_and_is_audited(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, action(name="parity", command=PARITY))
    run = _go(rt, "parity", ["gpu[0001-0005]"])
    assert run.result is not None and not run.result.ok
    folds = fold(run.result.outputs)
    assert [(f.labels, f.text) for f in folds] == [(("gpu0001", "gpu0003", "gpu0005"), "odd"),
                                                   (("gpu0002", "gpu0004"), "even")]
    records = rt.executor.audit.read(intents=True)  # type: ignore[union-attr]
    assert [r["phase"] for r in records] == ["intent", "outcome"]
    intent, outcome = records
    assert intent["action"] == "custom" and intent["params"]["name"] == "parity" and intent["id"] == outcome["id"]
    assert any("gpu0002 (1): sh -c" in c for c in intent["commands"])
    assert outcome["custom"]["folds"][0] == {"nodes": "gpu[0001,0003,0005]", "count": 3, "output": "odd",
                                            "truncated": False}
    assert outcome["custom"]["exit_codes"] == [{"rc": 0, "nodes": "gpu[0001,0003,0005]", "count": 3},
                                               {"rc": 3, "nodes": "gpu[0002,0004]", "count": 2}]
    assert {r["target"]: r["ok"] for r in outcome["results"]}["gpu0002"] is False


def test_audit_keeps_4kb_of_each_fold(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, action(name="big", command=[sys.executable, "-c", "print('x' * 10000)"]))
    run = _go(rt, "big", ["gpu0001"])
    assert run.result is not None and run.result.ok
    outcome = rt.executor.audit.read()[-1]  # type: ignore[union-attr]
    fold0 = outcome["custom"]["folds"][0]
    assert len(fold0["output"]) == 4096 and fold0["truncated"] is True


def test_audit_record_of_16k_nodes_with_distinct_output_is_bounded() -> None:
    from hpctui.actions.custom import AUDIT_MAX_GROUPS, AUDIT_OUTPUT_BYTES, audit_fields

    n = 16384
    outs = [NodeOutput(label=f"gpu{i:05d}", output=f"serial {i:08d} " + "x" * 1000, rc=i % 300) for i in range(n)]
    outs += [NodeOutput(label=f"cpu{i:05d}", error=f"connect to 10.0.{i // 256}.{i % 256}: refused")
             for i in range(2000)]
    record = audit_fields(outs)
    size = len(msgspec.json.encode(record))
    assert size < 4 * AUDIT_OUTPUT_BYTES, size  # about 16 MB of output (and 2,000 errors) unbounded
    kept = record["folds"]
    assert 0 < len(kept) <= AUDIT_MAX_GROUPS
    assert sum(len(f["output"].encode()) for f in kept) <= AUDIT_OUTPUT_BYTES
    left = record["folds_left_out"]
    assert left["folds"] == n - len(kept) and left["nodes"] == n - len(kept)
    assert left["bytes"] == sum(len(o.output.encode()) for o in outs[len(kept):n])
    assert left["note"] == f"… {n - len(kept):,} more folds ({n - len(kept):,} nodes), {left['bytes']:,} bytes left out"
    assert kept[0]["nodes"] == "gpu00000" and kept[1]["nodes"] == "gpu00001"  # in order, no gap
    # exit codes per code as node sets, not one entry per node
    assert len(record["exit_codes"]) == AUDIT_MAX_GROUPS and record["exit_codes_left_out"]["groups"] == 300 - 64
    assert record["exit_codes"][1] == {"rc": 1, "nodes": record["exit_codes"][1]["nodes"], "count": 55}
    assert record["exit_codes"][1]["nodes"].startswith("gpu[00001,00301,")
    assert len(record["failed"]) == AUDIT_MAX_GROUPS and record["failed_left_out"] == {"groups": 2000 - 64,
                                                                                       "nodes": 2000 - 64}


def test_audit_record_cuts_one_huge_node_set() -> None:
    from hpctui.actions.custom import AUDIT_LABEL_CHARS, audit_fields

    outs = [NodeOutput(label=f"ml/train-{i}-{'abc'[i % 3]}", output="same", rc=0) for i in range(5000)]
    record = audit_fields(outs)  # pods: comma-joined, no hostlist to fold them into
    (f,) = record["folds"]
    assert f["count"] == 5000 and len(f["nodes"]) < AUDIT_LABEL_CHARS + 40 and "more characters" in f["nodes"]
    assert "folds_left_out" not in record


def test_local_timeout_kills_the_whole_group_and_is_listed_apart(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pidfile}; wait"
    rt = _runtime(tmp_path, action(name="hang", command=["sh", "-c", script], timeout_s=1))
    run = _go(rt, "hang", ["gpu0001"])
    assert run.result is not None
    (out,) = run.result.outputs
    assert out.error == "timed out after 1 s"
    assert "FAILED local (1): timed out after 1 s" in render(run.result.outputs)
    grandchild = int(pidfile.read_text())
    for _ in range(50):
        if not Path(f"/proc/{grandchild}").exists() or "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]:
            break
        asyncio.run(asyncio.sleep(0.1))
    else:
        os.kill(grandchild, 9)
        pytest.fail("the timed-out command's child survived")


def test_command_not_found_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, action(name="nope", command="/nonexistent/tool {nodes}"))
    run = _go(rt, "nope", ["gpu0001"])
    assert run.result is not None
    assert run.result.outputs[0].error == "/nonexistent/tool: command not found"


# -- read-only and confirmation ----------------------------------------------------------------------------


def test_read_only_refuses_unless_read_only_ok_and_not_dangerous(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, action(name="plain", command="true"), action(name="diag", command="true", read_only_ok=True),
                  action(name="boom", command="true", read_only_ok=True, dangerous=True), read_only=True)
    plain = _go(rt, "plain", ["gpu0001"])
    assert plain.refused == "read-only mode: plain is not marked read_only_ok"
    assert plain.result is not None and plain.result.outputs == ()
    boom = _go(rt, "boom", ["gpu0001"], "boom-1")
    assert boom.refused == "read-only mode: boom is dangerous"
    diag = _go(rt, "diag", ["gpu0001"])
    assert diag.refused is None and diag.result is not None and diag.result.ok
    refused = [r for r in rt.executor.audit.read() if r["refused"]]  # type: ignore[union-attr]
    assert len(refused) == 2  # refusals are audited too


def test_dangerous_needs_the_typed_word_and_confirm_a_yes(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, action(name="boom", command="true", dangerous=True),
                  action(name="ask", command="true", confirm=True))
    assert _go(rt, "boom", ["gpu[0001-0002]"], True).refused == "not confirmed (type 'boom-2')"
    assert _go(rt, "boom", ["gpu[0001-0002]"], "boom-2").refused is None
    assert _go(rt, "ask", ["gpu0001"], False).refused == "not confirmed"
    assert _go(rt, "ask", ["gpu0001"], True).refused is None
