#!/usr/bin/python3
# Check AWS SigV4 signatures as a catalog behind floe would, recomputing
# each with botocore's SigV4Auth (the AWS SDK for Python, Debian's
# python3-botocore): an independent check of what floe signs and sends.
# The test catalog (tests/catalog/catalog.js --sigv4 FILE) runs it once and
# talks to it a line at a time.
#
# Usage: sigcheck.py CREDS.json -- {"akid", "secret", "token" (or null),
#                                   "region", "service"}
# stdin:  one JSON object a line: {"method", "url" (path?query as received),
#         "headers": {lower-case name: value}, "body": base64}
# stdout: one JSON object a line: {"ok": bool, "why": text}
# A request is refused when its Authorization is not SigV4 for these
# credentials, region and service; when host, x-amz-date (or the session
# token, if there is one) are not signed; when X-Amz-Date is more than 5
# minutes off; when an X-Amz-Content-Sha256 does not match the body; and
# when the signature is not the one botocore computes.
import base64
import datetime
import hashlib
import hmac
import json
import re
import sys
import time
import types
from urllib.parse import parse_qsl

import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)"
                  r"/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?"
                  r"Signature=([0-9a-f]{64})$")
SKEW = 300

creds = json.load(open(sys.argv[1]))


def expected(method, url, headers, signed, body, when):
    """The Authorization botocore computes for the request at WHEN."""
    fixed = datetime.datetime.strptime(when, "%Y%m%dT%H%M%SZ")

    class Fixed(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return fixed

    botocore.auth.datetime = types.SimpleNamespace(datetime=Fixed)
    path, _, query = url.partition("?")
    req = AWSRequest(method=method, url="https://" + headers["host"] + path,
                     data=body,
                     params=parse_qsl(query, keep_blank_values=True))
    # Only the headers the request says it signed; botocore adds
    # X-Amz-Date and X-Amz-Security-Token itself.
    for name in signed:
        if name not in ("x-amz-date", "x-amz-security-token"):
            req.headers[name] = headers[name]
    auth = SigV4Auth(Credentials(creds["akid"], creds["secret"],
                                 creds.get("token")),
                     creds["service"], creds["region"])
    auth.add_auth(req)
    return req.headers["Authorization"]


def check(r):
    h = r["headers"]
    body = base64.b64decode(r.get("body", ""))
    m = AUTH.match(h.get("authorization", ""))
    if not m:
        return "no SigV4 Authorization"
    akid, day, region, service, signed, _ = m.groups()
    signed = signed.split(";")
    if akid != creds["akid"]:
        return "unknown access key id"
    if region != creds["region"] or service != creds["service"]:
        return "wrong scope %s/%s" % (region, service)
    when = h.get("x-amz-date", "")
    try:
        t = datetime.datetime.strptime(when, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return "X-Amz-Date %r is malformed" % when
    if abs(t - time.time()) > SKEW:
        return "stale: X-Amz-Date is %ds off" % (t - time.time())
    if not when.startswith(day):
        return "X-Amz-Date %r is not of the credential's day" % when
    for need in ("host", "x-amz-date"):
        if need not in signed:
            return "%s is not signed" % need
    if creds.get("token"):
        if h.get("x-amz-security-token") != creds["token"]:
            return "wrong or missing X-Amz-Security-Token"
        if "x-amz-security-token" not in signed:
            return "x-amz-security-token is not signed"
    for name in signed:
        if name not in h:
            return "signed header %s is not sent" % name
    sha = h.get("x-amz-content-sha256")
    if sha is not None and sha != hashlib.sha256(body).hexdigest():
        return "X-Amz-Content-Sha256 does not match the body"
    want = expected(r["method"], r["url"], h, signed, body, when)
    if not hmac.compare_digest(want, h["authorization"]):
        return "signature mismatch"
    return None


for line in sys.stdin:
    try:
        why = check(json.loads(line))
    except Exception as e:  # a broken request is a refusal, not a crash
        why = "cannot check: %s" % e
    sys.stdout.write(json.dumps({"ok": why is None, "why": why or ""}) + "\n")
    sys.stdout.flush()
