"""``squeue --json`` read while it arrives, one job at a time, reusing unchanged jobs.

A 100k-job queue is ~280 MB of JSON. Reading it whole, then decoding it, costs the whole
document in memory plus one long C call (the envelope decode) that holds the GIL for
hundreds of milliseconds. Slurm prints it pretty, one job per object at a fixed indent::

    {
      "meta": {...},
      "errors": [
      ],
      "jobs": [
        {
          "account": "ml",
          ...
        },
        {
    ...

JSON strings cannot hold a raw newline, so ``"\\n" + indent + "}"`` at the jobs' own indent
ends a job and nothing else: the reader cuts the stream there, keeping only the unfinished
tail. A job whose bytes are the same as in the previous document (``JobReuse``: length and
64-bit ``hash()`` of its bytes) is not decoded again: its ``SlurmJob`` object is reused, which
also lets the store and the findings skip it by identity. Where the previous document had
that job at the same place, its length says where it ends, so an unchanged queue is read
without searching for the boundaries at all. The other jobs are decoded one by one right
after they are cut, their bytes still in the CPU cache (measured faster than one msgspec call
for a batch of jobs, which needs them copied and read again), and converted ``BATCH`` at a time.

Anything that is not this shape (compact JSON, REST answers) is kept whole and handed to
:func:`parse_jobs_json` at the end: same result, only not incremental. A document that starts
in the shape but leaves it (a job's braces at another indent than the first job's, one job per
line, a cut that is not a whole job) is read so up to there; from there on its bytes are kept
and the rest of the document (the envelope's head + the jobs not yet read + its tail) is parsed
whole at the end.
"""

from __future__ import annotations

import gc
import re

import msgspec

from hpctui.model.jobs import SlurmJob
from hpctui.model.validate import Drops
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec, repair_json
from hpctui.sources.slurm.parse.jobs import (
    FINISHED,
    Converter,
    OnInvalid,
    _envelope_decoder,
    _Job,
    _job_decoder,
    parse_jobs_json,
)
from hpctui.sources.slurm.parse.nodes import _raise_on_errors
from hpctui.sources.slurm.parse.rest_versions import check_version, version_from_meta

# The jobs array of a pretty document: the key at the top level's indent, then the first
# job's opening brace, whose indent the jobs' closing braces repeat.
_JOBS_KEY = re.compile(rb'\n( *)"jobs": \[')
_WS = re.compile(rb"[ \t\r\n]*")
_OPEN, _END, _COMMA = ord("{"), ord("]"), ord(",")
HEAD_LIMIT = 1 << 20  # a "jobs" key further than this into the document: not Slurm's shape
SPLICE = 64 << 10  # a chunk's bytes joined to the unfinished job before it (see JobsStream._take)
BATCH = 64  # decoded jobs converted by one call


class JobReuse:
    """The previous document's jobs, in document order, with the fingerprint of their bytes.

    For the k-th job of the last document read to its end: ``lengths[k]`` and ``sigs[k]``
    (``hash()`` of its bytes, 64 bits) and ``jobs[k]``, the ``SlurmJob`` made from those
    bytes, :data:`FINISHED` for a finished job that was dropped, or None for an invalid one
    (decoded and reported again). Three flat lists: no per-job tuple for the GC to track.
    """

    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.sigs: list[int] = []
        self.jobs: list[SlurmJob | None] = []
        self._index: dict[int, int] | None = None
        self.hits = 0
        self.misses = 0

    def find(self, sig: int, length: int) -> int:
        """Where the job with these bytes was in the previous document, or -1."""
        if self._index is None:  # only needed when the order changed: built at most once per read
            self._index = dict(zip(self.sigs, range(len(self.sigs)), strict=True))
        k = self._index.get(sig, -1)
        return k if k >= 0 and self.lengths[k] == length else -1

    def replace(self, lengths: list[int], sigs: list[int], jobs: list[SlurmJob | None]) -> None:
        self.lengths, self.sigs, self.jobs, self._index = lengths, sigs, jobs, None


class JobsStream:
    """Feed ``squeue --json`` bytes as they arrive; :meth:`finish` gives the live jobs.

    ``feed`` raises :class:`SlurmParseError` on a job that does not decode (the caller stops
    reading); ``finish`` checks the envelope (version, ``errors``) once the document ends.
    """

    def __init__(self, reuse: JobReuse | None = None, *, include_finished: bool = False,
                 on_invalid: OnInvalid | None = None, drops: Drops | None = None) -> None:
        self.reuse = reuse
        self.include_finished = include_finished
        self.on_invalid = on_invalid
        self.drops = drops  # implausible numbers (None, recorded): see Converter
        self._convert = Converter(include_finished, on_invalid, drops)
        self._buf = b""
        self._whole: list[bytes] = []  # the document, kept whole when it is not Slurm's pretty shape
        self._head = b""  # the document up to the jobs array's "[" (meta, errors)
        self._close = b""  # b"\n    }": a job's last line, at the jobs' indent
        self._sep = b""  # b"\n    },\n    {": one job's end and the next one's start
        self._next = b""  # b",\n    {": what follows a job that is not the last
        self._state = "head"  # head → jobs → tail; "whole" = not the pretty shape
        self._count = 0  # jobs seen (their positions in the document)
        self._after_job = False  # a "," (or the "]") must come next
        self._cursor = 0  # where in the previous document the next job probably is
        # this document's jobs, for the next read (see JobReuse)
        self._lengths: list[int] = []
        self._sigs: list[int] = []
        self._reused: list[SlurmJob | None] = []
        # jobs decoded, to convert: (slot in self.jobs, position in the document, job)
        self._pending: list[tuple[int, int, _Job]] = []
        self.jobs: list[SlurmJob | None] = []  # None: not converted yet, or dropped; or FINISHED
        self.finished_seen = False  # after finish(): the document held a finished job (dropped)

    # -- input --------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        if type(chunk) is not bytes:
            chunk = bytes(chunk)  # hashing a slice needs read-only bytes
        if self._state in ("whole", "rest"):
            self._whole.append(chunk)
            return
        if self._state != "jobs":
            self._buf = self._buf + chunk if self._buf else chunk
            if self._state == "head":
                self._find_jobs()
            if self._state != "jobs":
                return
            chunk, self._buf = self._buf, b""
        gc_was_enabled = gc.isenabled()
        gc.disable()  # 100k fresh objects would trigger repeated full collections
        try:
            self._buf = self._take(chunk)
        finally:
            if gc_was_enabled:
                gc.enable()
        if self._state == "rest":  # the layout changed: keep the rest whole (see finish)
            self._whole, self._buf = [self._buf], b""

    def _take(self, chunk: bytes) -> bytes:
        """Cut the jobs out of the unfinished rest + ``chunk``; the new unfinished rest.

        The rest (one job cut by the pipe) is joined to the chunk's first ``SPLICE`` bytes only,
        not the whole chunk: no 1 MiB copy per piece. The chunk is then read in place.
        """
        rest = self._buf
        if not rest:
            buf = chunk
        elif len(chunk) <= SPLICE:
            buf = rest + chunk
        else:
            joined = rest + chunk[:SPLICE]
            pos = self._cut_jobs(joined)
            if self._state == "jobs" and pos >= len(rest):  # the cut job ended inside the splice
                buf, pos = chunk, pos - len(rest)
            else:  # a job longer than SPLICE, or the array ended: read on in a joined copy
                buf, pos = joined[pos:] + chunk[SPLICE:], 0
            if self._state != "jobs":
                return buf[pos:]
            return buf[self._cut_jobs(buf, pos):]
        if self._state != "jobs":
            return buf
        return buf[self._cut_jobs(buf):]

    def _find_jobs(self) -> None:
        buf = self._buf
        m = _JOBS_KEY.search(buf)
        if m is None:
            if len(buf) > HEAD_LIMIT:
                self._state = "whole"
            return
        p = _WS.match(buf, m.end()).end()  # type: ignore[union-attr]
        if p == len(buf):
            return  # more to come
        if buf[p] == _OPEN:
            nl = buf.rfind(b"\n", m.end(), p)
            indent = bytes(buf[nl:p])
            if nl < 0 or len(indent) <= len(m.group(1)) + 1:  # not deeper than the "jobs" key: unknown shape
                self._state = "whole"
                return
            self._close = indent + b"}"
            self._next = b"," + indent + b"{"
            self._sep = self._close + self._next
        elif buf[p] != _END:
            self._state = "whole"  # compact JSON, or a shape we do not know
            return
        self._head = buf[:m.end()]
        self._buf = buf[m.end():]
        self._state = "jobs"

    def _cut_jobs(self, buf: bytes, pos: int = 0) -> int:
        """Take every complete job in ``buf`` from ``pos``; where the unfinished rest begins.

        A job ends at the first ``close`` (its closing brace at the jobs' indent) after its
        start. Where the previous document had the same job at the same place, its length
        says where this one ends: if the bytes there hash alike, the job is the same (equal
        bytes from a ``{`` are the same JSON object) and is reused without a search. Otherwise
        ``bytes.find`` cuts it out; a job not reused is decoded at once, converted in a batch.
        """
        n = len(buf)
        view = memoryview(buf)
        close, sep, nxt = self._close, self._sep, self._next
        len_close, len_next = len(close), len(nxt)
        reuse = self.reuse
        if reuse is not None:
            prev_lengths, prev_sigs, prev_jobs = reuse.lengths, reuse.sigs, reuse.jobs
        else:
            prev_lengths, prev_sigs, prev_jobs = [], [], []
        n_prev = len(prev_lengths)
        lengths, sigs, reused = self._lengths, self._sigs, self._reused
        slots, pending = self.jobs, self._pending
        decode = _job_decoder.decode
        hits = misses = 0
        try:
            while True:
                p = _WS.match(buf, pos).end()  # type: ignore[union-attr]
                if p == n:
                    pos = p
                    break
                c = buf[p]
                if c == _END:
                    pos = p
                    self._state = "tail"
                    break
                if self._after_job:
                    if c != _COMMA:
                        raise SlurmParseError(f"slurm jobs JSON: {chr(c)!r} after $.jobs[{self._count - 1}]")
                    self._after_job = False
                    pos = p + 1
                    continue
                if c != _OPEN or not close:
                    raise SlurmParseError(f"slurm jobs JSON: {chr(c)!r} where $.jobs[{self._count}] should begin")
                cur = self._cursor
                while True:  # p: a job's "{"; the jobs that follow each other directly
                    if cur < n_prev:
                        # A run of jobs unchanged since the previous document, in its order: each
                        # checked where its old length ends, the run recorded by list slices.
                        run, stop = cur, -1
                        while cur < n_prev:
                            e = p + prev_lengths[cur]
                            if (e > n or prev_jobs[cur] is None or not buf.startswith(close, e - len_close)
                                    or hash(view[p:e]) != prev_sigs[cur]):
                                break
                            cur += 1
                            if not buf.startswith(nxt, e):
                                stop = e  # the last job, or the piece ends here
                                break
                            p = e + len_next - 1
                        if cur > run:
                            lengths.extend(prev_lengths[run:cur])
                            sigs.extend(prev_sigs[run:cur])
                            same = prev_jobs[run:cur]
                            reused.extend(same)
                            slots.extend(same)  # FINISHED markers too: dropped by finish()
                            hits += cur - run
                            self._count += cur - run
                        if stop >= 0:
                            pos = stop
                            self._after_job = True
                            break
                    # p: a job that is not the next one of the previous document (or none was)
                    end = k = -1
                    sig = 0
                    # the job the previous document had here, or the one after it (this one left)
                    if cur < n_prev:
                        e = p + prev_lengths[cur]
                        if e <= n and buf.startswith(close, e - len_close) and hash(view[p:e]) == prev_sigs[cur]:
                            end = e
                            k = cur
                        elif cur + 1 < n_prev:
                            e = p + prev_lengths[cur + 1]
                            if e <= n and buf.startswith(close, e - len_close) and hash(view[p:e]) == prev_sigs[cur + 1]:
                                end = e
                                k = cur + 1
                    if end < 0:
                        e = buf.find(sep, p)
                        if e >= 0:
                            end = e + len_close
                        else:
                            e = buf.find(close, p)  # the last job, or one not complete yet
                            if e < 0:
                                pos = p
                                break
                            end = e + len_close
                        if reuse is not None:
                            sig = hash(view[p:end])
                            if n_prev:
                                k = reuse.find(sig, end - p)
                    else:
                        sig = prev_sigs[k]
                    job = None
                    if k >= 0:
                        cur = k + 1
                        job = prev_jobs[k]
                    self._count += 1
                    if reuse is not None:
                        lengths.append(end - p)
                        sigs.append(sig)
                        reused.append(job)  # a job decoded below is filled in by _flush
                    if job is None:  # not seen before (or invalid before): decode it now, while
                        misses += 1  # its bytes are in the cache (a batch decode later is slower)
                        try:
                            decoded = decode(view[p:end])
                        except (msgspec.DecodeError, msgspec.ValidationError):
                            self._flush()  # the jobs before it first: their faults come first
                            try:
                                decoded = _decode_one(view[p:end], self._count - 1)
                            except _NotWhole:  # not cut at the job's end: not the assumed layout
                                self._count -= 1
                                if reuse is not None:
                                    del lengths[-1], sigs[-1], reused[-1]
                                self._state = "rest"
                                pos = p
                                break
                        pending.append((len(slots), self._count - 1, decoded))
                        slots.append(None)
                        if len(pending) >= BATCH:
                            self._flush()
                    else:
                        hits += 1
                        if job is not FINISHED:
                            slots.append(job)
                    if buf.startswith(nxt, end):
                        p = end + len_next - 1
                        continue
                    pos = end
                    self._after_job = True
                    break
                self._cursor = cur
                if not self._after_job:
                    break  # a job not complete yet
            if pending:
                self._flush()
        finally:
            if reuse is not None:
                reuse.hits += hits
                reuse.misses += misses
        return pos

    def _flush(self) -> None:
        """Convert the decoded pending jobs, ``BATCH`` at a time (one converter call)."""
        pending = self._pending[:]
        self._pending.clear()  # the same list object: _cut_jobs holds it
        out: list[SlurmJob | None] = []
        self._convert.run_marked([(at, job) for _, at, job in pending], out)
        slots, reused = self.jobs, self._reused
        track = self.reuse is not None
        flagged = self._convert.flagged
        bad = {id(j) for j in flagged} if flagged else ()
        flagged.clear()
        for (slot, at, decoded), job in zip(pending, out, strict=True):
            if job is not FINISHED:
                slots[slot] = job
            if track:  # an invalid job, or one with an implausible value, stays None: decoded
                reused[at] = None if bad and id(decoded) in bad else job  # (and reported) again next time

    # -- end ------------------------------------------------------------------------
    def finish(self) -> tuple[SlurmJob, ...]:
        """The live jobs; raises SlurmParseError if the document was cut or reports errors."""
        if self._state in ("head", "whole"):
            return parse_jobs_json(b"".join((self._buf, *self._whole)), include_finished=self.include_finished,
                                   on_invalid=self.on_invalid, drops=self.drops)
        if self._state in ("jobs", "rest"):  # no job end found where the layout said, or a cut went wrong
            return self._finish_rest(self._buf if self._state == "jobs" else b"".join(self._whole))
        envelope = self._head + self._buf  # "[" + "]}" : the jobs array left empty
        try:
            try:
                env = _envelope_decoder.decode(envelope)
            except (msgspec.DecodeError, msgspec.ValidationError):
                repaired = repair_json(envelope)  # odd bytes in meta/errors: as the whole parse does
                if repaired is None:
                    raise
                env = _envelope_decoder.decode(repaired)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise from_msgspec("slurm jobs JSON", exc) from exc
        check_version(version_from_meta(env.meta))
        _raise_on_errors("slurm jobs JSON", env.errors)
        if self.reuse is not None:
            self.reuse.replace(self._lengths, self._sigs, self._reused)
            self._lengths, self._sigs, self._reused = [], [], []
        self.finished_seen = any(job is FINISHED for job in self.jobs)
        return tuple([job for job in self.jobs if job is not None and job is not FINISHED])

    def _finish_rest(self, rest: bytes) -> tuple[SlurmJob, ...]:
        """The jobs read so far + the rest of the document parsed whole (head + remaining jobs +
        tail: a complete document when nothing was lost). The remaining jobs are not kept for
        reuse; the ones read before are, at their positions."""
        body = rest.lstrip()
        if self._after_job and body.startswith(b","):
            body = body[1:]
        try:
            tail = parse_jobs_json(self._head + body, include_finished=self.include_finished,
                                   on_invalid=self.on_invalid, drops=self.drops)
        except SlurmParseError as exc:
            if self._state == "jobs":  # the layout held; the bytes stop before the array does
                raise SlurmParseError("slurm jobs JSON: the document ends inside the jobs array") from exc
            raise
        if self.reuse is not None:
            self.reuse.replace(self._lengths, self._sigs, self._reused)
            self._lengths, self._sigs, self._reused = [], [], []
        return (*[job for job in self.jobs if job is not None and job is not FINISHED], *tail)


class _NotWhole(SlurmParseError):
    """A cut piece is not one JSON value (it ends inside the job): the layout is not Slurm's."""


def _decode_one(piece: memoryview, at: int) -> _Job:
    """One job's bytes → ``_Job``. Slurm copies job names byte for byte: invalid UTF-8 or a raw
    control character costs one odd character (as in the whole-document parse), not the queue.
    Raises :class:`_NotWhole` when the bytes are not a whole JSON value (a wrong cut)."""
    try:
        return _job_decoder.decode(piece)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        repaired = repair_json(bytes(piece))
        try:
            if repaired is None:
                raise exc
            return _job_decoder.decode(repaired)
        except msgspec.DecodeError as final:
            try:
                msgspec.json.decode(repaired if repaired is not None else piece)
            except msgspec.DecodeError:
                raise _NotWhole(f"{from_msgspec('slurm jobs JSON', final)} (in $.jobs[{at}])") from final
            raise SlurmParseError(f"{from_msgspec('slurm jobs JSON', final)} (in $.jobs[{at}])") from final
        except msgspec.ValidationError as final:
            raise SlurmParseError(f"{from_msgspec('slurm jobs JSON', final)} (in $.jobs[{at}])") from final


def parse_jobs_stream(chunks: list[bytes] | tuple[bytes, ...], reuse: JobReuse | None = None, *,
                      on_invalid: OnInvalid | None = None, drops: Drops | None = None) -> tuple[SlurmJob, ...]:
    """The whole stream at once (tests, benchmarks): ``feed`` each chunk, then ``finish``."""
    stream = JobsStream(reuse, on_invalid=on_invalid, drops=drops)
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish()


__all__ = ["JobReuse", "JobsStream", "parse_jobs_stream"]
