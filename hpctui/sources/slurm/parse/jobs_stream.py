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
ends a job and nothing else: the reader cuts the stream there and decodes each job on its
own, keeping only the unfinished tail. A job whose bytes are the same as in the previous
document (``JobReuse``: length, CRC-32 and Adler-32 of its bytes) is not decoded again: its ``SlurmJob``
object is reused, which also lets the store and the findings skip it by identity.

Anything that is not this shape (compact JSON, REST answers) is kept whole and handed to
:func:`parse_jobs_json` at the end: same result, only not incremental.
"""

from __future__ import annotations

import gc
import re
import zlib

import msgspec

from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec, repair_json
from hpctui.sources.slurm.parse.jobs import (
    LIVE_JOB_STATES,
    Converter,
    OnInvalid,
    _envelope_decoder,
    _job_decoder,
    job_display_state,
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


_FINISHED = SlurmJob(job_id=0, state="COMPLETED")  # "a finished job": dropped again, not decoded


class JobReuse:
    """The previous document's jobs by the fingerprint of their bytes (see ``_one_job``)."""

    def __init__(self) -> None:
        self.prev: dict[int, SlurmJob] = {}
        self.hits = 0
        self.misses = 0


class JobsStream:
    """Feed ``squeue --json`` bytes as they arrive; :meth:`finish` gives the live jobs.

    ``feed`` raises :class:`SlurmParseError` on a job that does not decode (the caller stops
    reading); ``finish`` checks the envelope (version, ``errors``) once the document ends.
    """

    def __init__(self, reuse: JobReuse | None = None, *, include_finished: bool = False,
                 on_invalid: OnInvalid | None = None) -> None:
        self.reuse = reuse
        self.include_finished = include_finished
        self.on_invalid = on_invalid
        self._convert = Converter(include_finished, on_invalid)
        self._buf = b""
        self._whole: list[bytes] = []  # the document, kept whole when it is not Slurm's pretty shape
        self._head = b""  # the document up to the jobs array's "[" (meta, errors)
        self._close: bytes | None = None  # b"\n    }" once the jobs' indent is known
        self._sep = b""  # b"\n    },\n    {": one job's end and the next one's start
        self._state = "head"  # head → jobs → tail; "whole" = not the pretty shape
        self._count = 0  # jobs seen (their positions in the document)
        self._after_job = False  # a "," (or the "]") must come next
        self._next: dict[int, SlurmJob] = {}
        self.jobs: list[SlurmJob] = []

    # -- input --------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        if self._state == "whole":
            self._whole.append(chunk)
            return
        self._buf = self._buf + chunk if self._buf else chunk  # the rest of a job: a small copy
        if self._state == "head":
            self._find_jobs()
        if self._state == "jobs":
            gc_was_enabled = gc.isenabled()
            gc.disable()  # 100k fresh objects would trigger repeated full collections
            try:
                self._cut_jobs()
            finally:
                if gc_was_enabled:
                    gc.enable()

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
            self._sep = self._close + b"," + indent + b"{"
        elif buf[p] != _END:
            self._state = "whole"  # compact JSON, or a shape we do not know
            return
        self._head = buf[:m.end()]
        self._buf = buf[m.end():]
        self._state = "jobs"

    def _cut_jobs(self) -> None:
        """Decode every complete job in the buffer; keep the unfinished rest."""
        buf, close, sep = self._buf, self._close, self._sep
        n, len_close, len_sep = len(buf), len(close or b""), len(sep)
        view = memoryview(buf)
        pos = 0
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
            if c != _OPEN or close is None:
                raise SlurmParseError(f"slurm jobs JSON: {chr(c)!r} where $.jobs[{self._count}] should begin")
            # Jobs followed by a job: "\n    },\n    {" is a longer needle (a faster search)
            # than the closing brace alone, and says where the next job begins.
            e = buf.find(sep, p)
            while e >= 0:
                self._one_job(buf, view, p, e + len_close)
                p = e + len_sep - 1
                e = buf.find(sep, p)
            end = buf.find(close, p)  # the last job (or one not complete yet)
            if end < 0:
                pos = p
                break
            end += len_close
            self._one_job(buf, view, p, end)
            self._after_job = True
            pos = end
        self._buf = buf[pos:]

    def _one_job(self, buf: bytes, view: memoryview, start: int, end: int) -> None:
        index = self._count
        self._count += 1
        piece = view[start:end]
        sig = 0
        reuse = self.reuse
        if reuse is not None:
            # The job's bytes, fingerprinted: length, CRC-32 and Adler-32 (64 bits of checksum;
            # a job id is inside the bytes, so two jobs never share a fingerprint by design).
            sig = (end - start) << 64 | zlib.adler32(piece) << 32 | zlib.crc32(piece)
            prev = reuse.prev.get(sig)
            if prev is not None:
                reuse.hits += 1
                self._next[sig] = prev
                if prev is not _FINISHED:
                    self.jobs.append(prev)
                return
            reuse.misses += 1
        try:
            decoded = _job_decoder.decode(piece)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            # Slurm copies job names byte for byte: invalid UTF-8 or a raw control character
            # costs one odd character (as in the whole-document parse), not the queue.
            repaired = repair_json(bytes(piece))
            try:
                if repaired is None:
                    raise exc
                decoded = _job_decoder.decode(repaired)
            except (msgspec.DecodeError, msgspec.ValidationError) as final:
                raise SlurmParseError(f"{from_msgspec('slurm jobs JSON', final)} (in $.jobs[{index}])") from final
        before = len(self.jobs)
        self._convert.run((decoded,), self.jobs, index)
        if reuse is None:
            return
        if len(self.jobs) > before:
            self._next[sig] = self.jobs[-1]
        elif not self.include_finished and job_display_state(decoded.job_state) not in LIVE_JOB_STATES:
            self._next[sig] = _FINISHED  # skipped next time without a decode
        # else: dropped as invalid; decoded (and reported) again next time

    # -- end ------------------------------------------------------------------------
    def finish(self) -> tuple[SlurmJob, ...]:
        """The live jobs; raises SlurmParseError if the document was cut or reports errors."""
        if self._state in ("head", "whole"):
            return parse_jobs_json(b"".join((self._buf, *self._whole)), include_finished=self.include_finished,
                                   on_invalid=self.on_invalid)
        if self._state == "jobs":
            raise SlurmParseError("slurm jobs JSON: the document ends inside the jobs array")
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
            self.reuse.prev, self._next = self._next, {}
        return tuple(self.jobs)


def parse_jobs_stream(chunks: list[bytes] | tuple[bytes, ...], reuse: JobReuse | None = None, *,
                      on_invalid: OnInvalid | None = None) -> tuple[SlurmJob, ...]:
    """The whole stream at once (tests, benchmarks): ``feed`` each chunk, then ``finish``."""
    stream = JobsStream(reuse, on_invalid=on_invalid)
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish()


__all__ = ["JobReuse", "JobsStream", "parse_jobs_stream"]
