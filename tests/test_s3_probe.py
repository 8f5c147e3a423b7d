"""The S3 probe against recorded radosgw answers (tests/fixtures/ceph/rgw-*.txt) replayed by a loopback HTTP
server: the real client library (minio) signs and sends, reads the recorded status and XML, and the probe
classifies what it got. Plus the settings' checks and the credentials' redaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import msgspec
import pytest

from hpctui.findings.storage import s3_findings
from hpctui.model.storage import S3Failure
from hpctui.sources.s3.settings import S3Settings
from hpctui.sources.s3.source import S3ProbeError, S3Source, redact

FIX = Path(__file__).parent / "fixtures" / "ceph"
LIST_OK = (200, {"Content-Type": "application/xml"},
           b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
           b"<Name>b</Name><Prefix>hpctui-canary/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
           b"<IsTruncated>false</IsTruncated></ListBucketResult>")


def recorded(name: str) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one recorded answer; status 0: the server never answered."""
    text = (FIX / name).read_text()
    head, _, body = text.partition("\n\n")
    lines = head.splitlines()
    status = lines[0].removeprefix("HTTP ")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    headers.pop("Content-Length", None)
    return (int(status) if status.isdigit() else 0), headers, body.strip().encode()


class Replay(ThreadingHTTPServer):
    """Answers list/put/get/delete like a healthy RGW, except the one op given a recorded answer."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.objects: dict[str, bytes] = {}
        self.seen: list[tuple[str, str]] = []
        self.release = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    server: Replay
    protocol_version = "HTTP/1.1"

    def _op(self) -> str:
        if self.command == "GET":
            return "list" if "list-type" in self.path or "prefix" in self.path else "get"
        return {"PUT": "put", "DELETE": "delete"}.get(self.command, self.command.lower())

    def _answer(self) -> None:
        op = self._op()
        self.server.seen.append((op, self.headers.get("Authorization", "")))
        body_in = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "PUT" else b""
        if op in self.server.answers:
            status, headers, body = self.server.answers[op]
            if status == 0:  # RGW with a full data pool: no answer at all
                self.server.release.wait(30)
                return
        elif op == "list":
            status, headers, body = LIST_OK
        elif op == "put":
            self.server.objects[self.path] = body_in
            status, headers, body = 200, {"ETag": '"x"'}, b""
        elif op == "get":
            status, headers, body = 200, {"Content-Type": "application/octet-stream"}, self.server.objects[self.path]
        else:
            status, headers, body = 204, {}, b""
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_DELETE = do_HEAD = _answer

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def replay() -> Iterator[Replay]:
    server = Replay()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


ACCESS, SECRET = "AKIATESTACCESS000001", "s3cr3t-test-secret-key-0000000000000001"


def source(server: Replay, tmp_path: Path, **kw: object) -> S3Source:
    (tmp_path / "a").write_text(ACCESS + "\n")
    (tmp_path / "s").write_text(SECRET + "\n")
    settings = S3Settings(name="rgw", endpoint=f"http://127.0.0.1:{server.server_address[1]}", bucket="err-bucket",
                          access_key_id_file=str(tmp_path / "a"), secret_access_key_file=str(tmp_path / "s"),
                          **kw)  # type: ignore[arg-type]
    return S3Source(settings)


def probe_with(server: Replay, tmp_path: Path, op: str, sample: str, **kw: object):
    server.answers[op] = recorded(sample)
    return asyncio.run(source(server, tmp_path, **kw).collect()).object_stores["rgw"]  # type: ignore[index]


def test_round_trip_against_the_replay(replay: Replay, tmp_path: Path) -> None:
    probe = asyncio.run(source(replay, tmp_path).collect()).object_stores["rgw"]  # type: ignore[index]
    assert probe.ok and [s.op for s in probe.steps] == ["list", "put", "get", "delete"]
    assert [op for op, _ in replay.seen] == ["list", "put", "get", "delete"]
    assert all(auth.startswith("AWS4-HMAC-SHA256 Credential=" + ACCESS) for _, auth in replay.seen)  # signed, V4
    assert s3_findings(probe) == []


@pytest.mark.parametrize(("op", "sample", "failure", "code", "finding"), [
    ("list", "rgw-error-unknown-access-key.txt", S3Failure.AUTH, "InvalidAccessKeyId", "s3_auth"),
    ("list", "rgw-error-bad-signature.txt", S3Failure.AUTH, "SignatureDoesNotMatch", "s3_auth"),
    ("list", "rgw-error-no-such-bucket.txt", S3Failure.BUCKET, "NoSuchBucket", "s3_bucket_missing"),
    ("put", "rgw-error-quota-exceeded.txt", S3Failure.QUOTA, "QuotaExceeded", "s3_quota"),
    ("get", "rgw-error-no-such-key.txt", S3Failure.ERROR, "NoSuchKey", "s3_error"),
])
def test_recorded_errors(replay: Replay, tmp_path: Path, op: str, sample: str, failure: S3Failure, code: str,
                         finding: str) -> None:
    probe = probe_with(replay, tmp_path, op, sample)
    assert not probe.ok and probe.failure is failure and probe.code == code
    assert probe.steps[-1].op in (op, "delete") and not next(s for s in probe.steps if s.op == op).ok
    if op == "get":  # the object was put: it is deleted even though the get failed
        assert [s.op for s in probe.steps] == ["list", "put", "get", "delete"]
    (f,) = s3_findings(probe)
    assert f.code == finding and code in f.message and f.object == f"s3/rgw/{failure.value}"
    assert SECRET not in repr(probe) + repr(f) and ACCESS not in repr(probe) + repr(f)


def test_put_into_a_full_data_pool_times_out(replay: Replay, tmp_path: Path) -> None:
    """rgw-put-data-pool-full.txt: RGW never answers a PUT into a full data pool; the read timeout ends it."""
    probe = probe_with(replay, tmp_path, "put", "rgw-put-data-pool-full.txt", timeout_s=1)
    assert probe.failure is S3Failure.UNREACHABLE and probe.code == "Timeout"
    assert [s.op for s in probe.steps] == ["list", "put"]
    assert "does not answer" in s3_findings(probe)[0].message


def test_nobody_listening_is_unreachable(tmp_path: Path) -> None:
    server = Replay()
    port = server.server_address[1]
    server.server_close()
    (tmp_path / "a").write_text(ACCESS)
    (tmp_path / "s").write_text(SECRET)
    s = S3Source(S3Settings(endpoint=f"http://127.0.0.1:{port}", access_key_id_file=str(tmp_path / "a"),
                            secret_access_key_file=str(tmp_path / "s"), timeout_s=2))
    probe = asyncio.run(s.collect()).object_stores["s3"]  # type: ignore[index]
    assert probe.failure is S3Failure.UNREACHABLE and [f.code for f in s3_findings(probe)] == ["s3_unreachable"]


def test_tls_to_a_plain_http_server_is_a_tls_failure(replay: Replay, tmp_path: Path) -> None:
    s = source(replay, tmp_path, timeout_s=2)
    s.settings = msgspec.structs.replace(s.settings, endpoint=s.settings.endpoint.replace("http:", "https:"))
    s.__init__(s.settings)  # type: ignore[misc]
    probe = asyncio.run(s.collect()).object_stores["rgw"]  # type: ignore[index]
    assert probe.failure is S3Failure.TLS and [f.code for f in s3_findings(probe)] == ["s3_tls"]


def test_slow_round_trip(replay: Replay, tmp_path: Path) -> None:
    probe = asyncio.run(source(replay, tmp_path, latency_warn_ms=0.001).collect()).object_stores["rgw"]  # type: ignore[index]
    (f,) = s3_findings(probe)
    assert probe.ok and f.code == "s3_slow" and "slowest" in f.message


def test_missing_credentials_fail_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HPCTUI_TEST_S3_KEY", raising=False)
    s = S3Source(S3Settings(access_key_id_env="HPCTUI_TEST_S3_KEY", secret_access_key_file=str(tmp_path / "none")))
    with pytest.raises(S3ProbeError) as err:
        asyncio.run(s.collect())
    assert "HPCTUI_TEST_S3_KEY" in str(err.value)


def test_redact() -> None:
    text = f"failed for {ACCESS} with {SECRET} at http://u:{SECRET}@h/x\n\x1b[2J"
    out = redact(text, (ACCESS, SECRET))
    assert ACCESS not in out and SECRET not in out and "\n" not in out and "\x1b" not in out


@pytest.mark.parametrize(("kw", "why"), [
    ({"endpoint": "ftp://x"}, "endpoint"), ({"endpoint": "http://h/path"}, "without path"),
    ({"endpoint": "http://u:p@h"}, "credentials"), ({"bucket": "Bad_Bucket"}, "bucket"),
    ({"access_key_id_env": None}, "access_key_id"), ({"timeout_s": 0}, "> 0"), ({"canary_bytes": 0}, "canary_bytes"),
])
def test_settings_refuse(kw: dict[str, object], why: str) -> None:
    with pytest.raises((ValueError, msgspec.ValidationError), match=why):
        msgspec.convert(kw, S3Settings)
