"""Log reads over SSH: a file's tail (a job's output, read where the filesystem is) and a node's
journal for a time window (``journalctl -k`` / ``-u UNIT`` with ``--since``/``--until``).

Both run through :class:`~hpctui.sources.ssh.commands.SshCommandRunner` (the source's ssh_config, keys,
known_hosts, jump host), argv elements quoted one by one: a path or unit name is one literal word on the
far side. Reads are bounded in bytes on the node (``head -c``) and here (the runner's cap), every line
sanitised. The parsers are pure functions, tested on their own.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from hpctui.base.sanitize import clean_text
from hpctui.model.action import CommandRun
from hpctui.model.logs import MAX_LOG_BYTES, LogChunk, LogLine
from hpctui.model.output import NodeOutput

READ_TIMEOUT_S = 20.0
HEADER = "HPCTUI-LOG"

# $1 path, $2 offset (-1: the tail), $3 max bytes. Prints one header line, then the bytes. Only sh,
# wc, tail and head: whatever the node has. The "no such file" / "permission denied" cases are told
# apart before reading, in words a person reads as they are.
TAIL_SCRIPT = r"""f=$1; off=$2; max=$3
if [ ! -e "$f" ]; then
  d=${f%/*}; [ -n "$d" ] || d=/
  if [ -d "$d" ] && [ ! -x "$d" ]; then echo "HPCTUI-LOG error=permission denied (directory $d)"; exit 0; fi
  echo "HPCTUI-LOG error=no such file"; exit 0
fi
[ -d "$f" ] && { echo "HPCTUI-LOG error=is a directory"; exit 0; }
[ -r "$f" ] || { echo "HPCTUI-LOG error=permission denied"; exit 0; }
size=$(wc -c < "$f") || { echo "HPCTUI-LOG error=cannot read"; exit 0; }
size=$((size + 0)); restart=0
if [ "$off" -lt 0 ]; then start=$((size - max))
elif [ "$off" -gt "$size" ]; then restart=1; start=$((size - max))
elif [ $((size - off)) -gt "$max" ]; then start=$((size - max))
else start=$off; fi
[ "$start" -lt 0 ] && start=0
echo "HPCTUI-LOG size=$size start=$start restart=$restart"
[ "$size" -gt "$start" ] && tail -c +$((start + 1)) -- "$f" | head -c $((size - start))
exit 0
"""

_HEADER = re.compile(r"^HPCTUI-LOG (?:error=(?P<error>.*)|size=(?P<size>\d+) start=(?P<start>\d+) "
                     r"restart=(?P<restart>[01]))$")


def tail_argv(path: str, offset: int | None, max_bytes: int = MAX_LOG_BYTES) -> list[str]:
    """The argv that reads ``path`` from ``offset`` (None: its last ``max_bytes``)."""
    return ["sh", "-c", TAIL_SCRIPT, "hpctui-tail", path, str(-1 if offset is None else offset), str(max_bytes)]


def parse_tail(out: NodeOutput, where: str, offset: int | None) -> LogChunk:
    """One tail read's output → the lines (sanitised), the offset to continue from, or the error.

    A read that started mid-file (its tail, or a follow read that fell more than the bound behind) drops
    its first, partial line and says ``cut``. A follow read continues at the size the file had: a line
    being written at that moment shows as two lines (the runner's output keeps no trailing newline)."""
    if out.error is not None:
        return LogChunk(where=where, error=out.error)
    head, _, body = out.output.partition("\n")
    m = _HEADER.match(head)
    if m is None:
        first = clean_text(head)[:200] or f"exit code {out.rc}"
        return LogChunk(where=where, error=f"unexpected answer: {first}")
    if m.group("error") is not None:
        return LogChunk(where=where, error=m.group("error"))
    size, start, restarted = int(m.group("size")), int(m.group("start")), m.group("restart") == "1"
    cut = start > 0 and (offset is None or restarted or start != offset)
    lines = body.split("\n") if body else []
    if cut and lines:
        lines = lines[1:]  # begins mid-line
    return LogChunk(where=where, lines=tuple(lines), offset=size, cut=cut, restarted=restarted)


# -- journal ---------------------------------------------------------------------------------------
_UNIT = re.compile(r"[A-Za-z0-9@_.:\\-]{1,200}")
# journalctl -o short-unix: "1733137201.123456 gpu01 kernel: NVRM: Xid ...", "... nvidia-persistenced[811]: ..."
_SHORT_UNIX = re.compile(r"^(?P<t>\d{1,11}(?:\.\d+)?) (?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[\d+\])?: ?(?P<msg>.*)$")


def journal_argv(since: float, until: float, *, kernel: bool = True, units: Sequence[str] = (),
                 max_lines: int = 2000) -> list[str]:
    """``journalctl`` for a window: kernel messages (``-k``) and/or units (``-u``), at most ``max_lines``, epoch
    seconds in each line (``-o short-unix``). Newest first (``-r``): with ``--since``, ``-n`` alone keeps the
    window's *first* lines (measured, tests/fixtures/logs/README.md); :func:`oldest_first` turns it back."""
    bad = [u for u in units if not _UNIT.fullmatch(u)]
    if bad:
        raise ValueError(f"not a systemd unit name: {bad[0]!r}")
    argv = ["journalctl", "--no-pager", "-q", "-o", "short-unix", f"--since=@{int(since)}",
            f"--until=@{int(until) + 1}", "-r", "-n", str(max_lines)]
    if kernel:
        argv.append("-k")
    for u in units:
        argv += ["-u", u]
    return argv


def oldest_first(out: NodeOutput) -> NodeOutput:
    """A ``-r`` journal read's output in time order (an error or a failed run as it is)."""
    if out.error is not None or out.rc != 0 or not out.output:
        return out
    return NodeOutput(label=out.label, output="\n".join(reversed(out.output.split("\n"))), rc=out.rc,
                      duration_s=out.duration_s)


def parse_journal(text: str, host: str) -> list[LogLine]:
    """``journalctl -o short-unix`` lines → :class:`LogLine` (sanitised); notices ("-- No entries --",
    "-- Boot ... --") and lines that do not parse are skipped. ``host`` is the node it was read on."""
    out: list[LogLine] = []
    for line in text.splitlines():
        m = _SHORT_UNIX.match(line)
        if m is None:
            continue
        out.append(LogLine(time=float(m.group("t")), host=host, ident=clean_text(m.group("ident")),
                           message=clean_text(m.group("msg"))))
    return out


def grep_lines(lines: Sequence[str], pattern: str | None) -> list[str]:
    """The lines holding ``pattern`` (case-insensitive, literal); all of them for no pattern."""
    if not pattern:
        return list(lines)
    p = pattern.lower()
    return [line for line in lines if p in line.lower()]


def wrap_preamble(argv: list[str], preamble: str) -> list[str]:
    """``argv`` run after a shell preamble (the probe's PATH/shim setup) — still one word per element. The
    preamble runs in a function, so its ``set --`` cannot replace the command's own arguments."""
    if not preamble:
        return argv
    return ["sh", "-c", "_hpctui_setup() {\n" + preamble + "\n}\n_hpctui_setup\nexec \"$@\"", "hpctui-log", *argv]


def runs(hosts: Sequence[str], argv: list[str]) -> list[CommandRun]:
    """One run of ``argv`` per host (labels are the host names)."""
    return [CommandRun(label=h, host=h, argv=tuple(argv)) for h in hosts]


def describe_argv(argv: Sequence[str]) -> str:
    """The command as a person would type it (for the viewer's title and the report)."""
    return " ".join(shlex.quote(a) for a in argv)
