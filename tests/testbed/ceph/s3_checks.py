"""S3 round trip against the bed's radosgw, timed, plus raw error bodies.

Run with the bed's venv:  eval "$(bed.sh info)"; export S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
  $PYTHON s3_checks.py roundtrip          # twice: the first run creates RGW's bucket pools
  $PYTHON s3_checks.py errors OUTDIR      # raw error responses: missing bucket/key, bad signature, unknown key
  $PYTHON s3_checks.py put BUCKET KEY OUTFILE [TIMEOUT]   # one raw presigned PUT, response saved
Prints one JSON line per call with its wall time.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
from botocore.config import Config

EP = os.environ["S3_ENDPOINT"]
AK = os.environ["AWS_ACCESS_KEY_ID"]
SK = os.environ["AWS_SECRET_ACCESS_KEY"]
CFG = Config(signature_version="s3v4", s3={"addressing_style": "path"},
             retries={"max_attempts": 1, "mode": "standard"},
             connect_timeout=5, read_timeout=15)


def client(ak=AK, sk=SK):
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=ak,
                        aws_secret_access_key=sk, region_name="us-east-1", config=CFG)


def timed(name, fn, *a, **kw):
    t = time.perf_counter()
    err = None
    try:
        r = fn(*a, **kw)
    except Exception as e:  # record, don't stop
        r, err = None, f"{type(e).__name__}: {e}"
    ms = (time.perf_counter() - t) * 1000
    print(json.dumps({"call": name, "ms": round(ms, 1), "error": err}), flush=True)
    return r


def raw(url, method="GET", data=None, timeout=10):
    """Fetch a (presigned or anonymous) URL and return status, headers, body as text."""
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def save(path, st, hd, bd):
    with open(path, "w") as f:
        f.write(f"HTTP {st}\n")
        for k in ("Content-Type", "Content-Length", "x-amz-request-id", "Server"):
            if k in hd:
                f.write(f"{k}: {hd[k]}\n")
        f.write("\n" + bd + ("\n" if not bd.endswith("\n") else ""))


def roundtrip():
    s3 = client()
    bucket, key = "probe-bucket", "obj-1MiB"
    body = os.urandom(1024 * 1024)
    for rnd in (1, 2):
        print(json.dumps({"round": rnd}))
        timed("list_buckets", s3.list_buckets)
        timed("create_bucket", s3.create_bucket, Bucket=bucket)
        timed("head_bucket", s3.head_bucket, Bucket=bucket)
        timed("put_object 1MiB", s3.put_object, Bucket=bucket, Key=key, Body=body)
        r = timed("get_object 1MiB", lambda: s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        assert r == body, "GET returned different bytes"
        timed("list_objects_v2", s3.list_objects_v2, Bucket=bucket)
        timed("delete_object", s3.delete_object, Bucket=bucket, Key=key)
        timed("delete_bucket", s3.delete_bucket, Bucket=bucket)


def errors(out):
    Path(out).mkdir(parents=True, exist_ok=True)
    s3 = client()
    s3.create_bucket(Bucket="err-bucket")
    cases = {
        "rgw-error-no-such-bucket": s3.generate_presigned_url(
            "get_object", Params={"Bucket": "no-such-bucket", "Key": "k"}, ExpiresIn=300),
        "rgw-error-no-such-key": s3.generate_presigned_url(
            "get_object", Params={"Bucket": "err-bucket", "Key": "no-such-key"}, ExpiresIn=300),
        "rgw-error-bad-signature": client(sk="wrong" + SK[5:]).generate_presigned_url(
            "get_object", Params={"Bucket": "err-bucket", "Key": "k"}, ExpiresIn=300),
        "rgw-error-unknown-access-key": client(ak="NOSUCHACCESSKEY00000").generate_presigned_url(
            "list_objects_v2", Params={"Bucket": "err-bucket"}, ExpiresIn=300),
        "rgw-anonymous-list-buckets": EP + "/",
    }
    for name, url in cases.items():
        st, hd, bd = raw(url)
        save(str(Path(out) / f"{name}.txt"), st, hd, bd)
        print(json.dumps({"case": name, "status": st}), flush=True)
    s3.delete_bucket(Bucket="err-bucket")


def put(bucket, key, outfile, timeout=10):
    url = client().generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    t = time.perf_counter()
    try:
        st, hd, bd = raw(url, "PUT", data=b"x" * 4096, timeout=float(timeout))
    except Exception as e:  # e.g. a timeout when the data pool is full
        st, hd, bd = f"no response ({type(e).__name__}: {e})", {}, ""
    print(json.dumps({"put": f"{bucket}/{key}", "status": st, "ms": round((time.perf_counter() - t) * 1000, 1)}))
    save(outfile, st, hd, bd)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "roundtrip"
    {"roundtrip": roundtrip, "errors": errors, "put": put}[cmd](*sys.argv[2:])
