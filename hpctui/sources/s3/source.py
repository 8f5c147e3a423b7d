"""The S3 probe: one endpoint every ``interval_s``, through MinIO's S3 client (``minio``), in a thread.

A probe lists the canary prefix of the configured bucket, then puts a small object under it, reads it back
(compared byte for byte) and deletes it, timing each call. Requests are signed by the library (AWS
Signature V4); nothing here builds a signature. Why ``minio`` and not boto3: botocore pins
``python-dateutil<3`` while the Kubernetes client (``kubernetes>=37``) needs ``>=3``; one environment cannot
hold both. MinIO's client speaks plain S3 to any endpoint (AWS, Ceph RGW, MinIO) and depends on urllib3.

An endpoint that refuses, times out or answers wrongly is *data*, not a source failure: the probe returns an
:class:`~hpctui.model.storage.S3Probe` saying why (reachability, TLS, auth, bucket, quota), and the findings
read it. Only a probe that cannot start (credentials unreadable) fails the source. Credentials are read from
their file or environment variable at every probe and appear in no message: every text from the library or
the endpoint passes :func:`redact` with both of them before it is kept.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.model import SourceResult
from hpctui.model.storage import S3Failure, S3Probe, S3Step
from hpctui.sources.base import SourceError
from hpctui.sources.http_client import read_secret
from hpctui.sources.s3.settings import S3Settings

AUTH_CODES = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken",
                        "ExpiredToken", "InvalidSecurity", "AuthorizationHeaderMalformed", "AccountProblem"})
BUCKET_CODES = frozenset({"NoSuchBucket"})
QUOTA_CODES = frozenset({"QuotaExceeded", "XMinioAdminBucketQuotaExceeded", "EntityTooLarge"})
MAX_MESSAGE = 300


class S3ProbeError(SourceError):
    """The probe could not start (credentials unreadable)."""


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` without any of ``secrets`` (replaced by ``***``), URL userinfo redacted, sanitised, one line."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return clean_text(redact_url(" ".join(text.split())))[:MAX_MESSAGE]


def classify_code(code: str | None) -> S3Failure:
    """The failure an S3 error code means."""
    if code in AUTH_CODES:
        return S3Failure.AUTH
    if code in BUCKET_CODES:
        return S3Failure.BUCKET
    if code in QUOTA_CODES:
        return S3Failure.QUOTA
    return S3Failure.ERROR


def _chain(exc: BaseException) -> list[BaseException]:
    out, seen = [], set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        e = getattr(e, "reason", None) if isinstance(getattr(e, "reason", None), BaseException) else (
            e.__cause__ or e.__context__)
    return out


def classify_exception(exc: BaseException) -> tuple[S3Failure, str, str]:
    """(failure, code, message) of what one call raised: an S3 error answer, a TLS failure, no connection."""
    from minio.error import InvalidResponseError, S3Error, ServerError
    from urllib3.exceptions import SSLError as Urllib3SSLError

    if isinstance(exc, S3Error):
        code = exc.code or "S3Error"
        message = exc.message if exc.message and exc.message != code else ""  # RGW sends <Message></Message>
        return classify_code(code), code, message
    if isinstance(exc, ServerError):
        return S3Failure.ERROR, f"HTTP{exc.status_code}", str(exc)
    if isinstance(exc, InvalidResponseError):
        return S3Failure.ERROR, "InvalidResponse", str(exc)
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, ssl.SSLError | Urllib3SSLError):
            return S3Failure.TLS, type(e).__name__, str(e)
    for e in chain:
        if isinstance(e, TimeoutError | socket.timeout) or "Timeout" in type(e).__name__:
            return S3Failure.UNREACHABLE, "Timeout", str(exc)
    return S3Failure.UNREACHABLE, type(exc).__name__, str(exc)


class S3Source:
    """A Source for one S3 endpoint (``kind = "s3"``)."""

    kind = "s3"

    def __init__(self, settings: S3Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.clock = clock
        parts = urlsplit(settings.endpoint)
        self.secure = parts.scheme == "https"
        self.host = parts.netloc  # host[:port]
        self.endpoint = f"{parts.scheme}://{parts.netloc}"
        self._http: object | None = None

    async def close(self) -> None:
        http = self._http
        self._http = None
        if http is not None:
            await asyncio.to_thread(http.clear)  # type: ignore[attr-defined]

    def _credentials(self) -> tuple[str, str]:
        s = self.settings
        key = read_secret(s.access_key_id_file, None if s.access_key_id_file else s.access_key_id_env,
                          "access key id", S3ProbeError)
        secret = read_secret(s.secret_access_key_file, None if s.secret_access_key_file else s.secret_access_key_env,
                             "secret access key", S3ProbeError)
        if not key or not secret:
            raise S3ProbeError(f"{self.name}: access key id or secret access key is empty")
        return key, secret

    def _pool(self) -> object:
        import urllib3

        if self._http is None:
            s = self.settings
            kw: dict[str, object] = {}
            if self.secure:
                if not s.verify_tls:
                    kw["cert_reqs"] = "CERT_NONE"
                else:
                    kw["cert_reqs"] = "CERT_REQUIRED"
                    if s.ca_file:
                        kw["ca_certs"] = str(Path(s.ca_file).expanduser())
                    else:
                        import certifi

                        kw["ca_certs"] = certifi.where()
            self._http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=s.timeout_s, read=s.timeout_s),
                                             retries=False, maxsize=2, **kw)  # type: ignore[arg-type]
        return self._http

    async def collect(self) -> SourceResult:
        key, secret = self._credentials()
        probe = await asyncio.to_thread(self.probe, key, secret)
        return SourceResult(source=self.name, time=probe.time, object_stores={self.name: probe})

    def probe(self, access_key: str, secret_key: str) -> S3Probe:
        """One round trip, blocking (run in a thread). Never raises for what the endpoint does."""
        from minio import Minio

        s = self.settings
        secrets = (access_key, secret_key)
        t = self.clock()
        client = Minio(self.host, access_key=access_key, secret_key=secret_key, secure=self.secure,
                       region=s.region, http_client=self._pool(), cert_check=s.verify_tls)  # type: ignore[arg-type]
        steps: list[S3Step] = []
        key = f"{s.canary_prefix}{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"
        body = os.urandom(s.canary_bytes)

        def step(op: str, call: Callable[[], object]) -> object:
            started = time.perf_counter()
            try:
                out = call()
            except Exception as exc:
                failure, code, message = classify_exception(exc)
                steps.append(S3Step(op=op, ok=False, ms=(time.perf_counter() - started) * 1000, code=code))
                raise _Failed(failure, code, f"{op}: {code}" + (f": {message}" if message else "")) from None
            steps.append(S3Step(op=op, ok=True, ms=(time.perf_counter() - started) * 1000))
            return out

        def get() -> bytes:
            resp = client.get_object(s.bucket, key)
            try:
                return resp.read()
            finally:
                resp.close()
                resp.release_conn()

        started = time.perf_counter()
        try:
            step("list", lambda: sum(1 for _ in zip(range(10), client.list_objects(s.bucket, prefix=s.canary_prefix),
                                                    strict=False)))
            if s.write:
                step("put", lambda: client.put_object(s.bucket, key, io.BytesIO(body), len(body)))
                back: object = b""
                get_failed: _Failed | None = None
                try:
                    back = step("get", get)
                except _Failed as f:
                    get_failed = f
                try:  # the object exists (the put worked): never leave it behind, even when the get failed
                    step("delete", lambda: client.remove_object(s.bucket, key))
                except _Failed:
                    if get_failed is None:
                        raise
                if get_failed is not None:
                    raise get_failed
                if back != body:
                    size = len(back) if isinstance(back, bytes) else 0
                    raise _Failed(S3Failure.ERROR, "BadContent",
                                  f"get: the canary object read back differs ({size} of {len(body)} bytes)")
        except _Failed as f:
            return S3Probe(name=self.name, endpoint=self.endpoint, bucket=s.bucket, time=t, ok=False,
                           failure=f.failure, code=clean_text(f.code)[:80], message=redact(f.message, secrets),
                           steps=tuple(steps), latency_warn_ms=s.latency_warn_ms)
        total = (time.perf_counter() - started) * 1000
        return S3Probe(name=self.name, endpoint=self.endpoint, bucket=s.bucket, time=t, ok=True, steps=tuple(steps),
                       latency_ms=total, latency_warn_ms=s.latency_warn_ms)


class _Failed(Exception):
    def __init__(self, failure: S3Failure, code: str, message: str) -> None:
        super().__init__(message)
        self.failure, self.code, self.message = failure, code, message


__all__ = ["S3ProbeError", "S3Source", "classify_code", "classify_exception", "redact"]
