#!/usr/bin/python3
# Sign requests with botocore's SigV4Auth, the AWS SDK for Python, as an
# independent check of floe's signer (tests/unit/test_sigv4.c).
# Usage: botosign.py CASES.json -- a JSON array of requests:
#   {"akid", "secret", "token" (or null), "region", "service", "time" (epoch
#    seconds), "method", "host", "path" (as sent), "query" (as sent, no '?'),
#    "headers": [[name, value], ...], "body", "content_sha256": bool}
# Prints a JSON array of {"authorization", "canonical", "headers"} in order.
# The query goes to botocore decoded (parse_qsl: '+' is a space, %XX a
# byte), as AWS's servers read it; botocore re-encodes and sorts it.
import datetime
import hashlib
import json
import sys
import types
from urllib.parse import parse_qsl

import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def sign(c):
    fixed = datetime.datetime.utcfromtimestamp(c["time"])

    class Fixed(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return fixed

    # add_auth reads the clock itself: give it the case's time.
    botocore.auth.datetime = types.SimpleNamespace(datetime=Fixed)
    body = c.get("body", "").encode()
    req = AWSRequest(method=c["method"], url="https://" + c["host"] + c["path"],
                     data=body,
                     params=parse_qsl(c.get("query", ""), keep_blank_values=True))
    req.headers["Host"] = c["host"]
    for name, value in c.get("headers", []):
        req.headers[name] = value
    if c.get("content_sha256"):
        req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    creds = Credentials(c["akid"], c["secret"], c.get("token"))
    auth = SigV4Auth(creds, c["service"], c["region"])
    auth.add_auth(req)
    authz = req.headers["Authorization"]
    headers = sorted([k.lower(), v] for k, v in req.headers.items())
    # The canonical request as signed: without the Authorization it made.
    del req.headers["Authorization"]
    return {
        "authorization": authz,
        "canonical": auth.canonical_request(req),
        "headers": headers,
    }


with open(sys.argv[1]) as f:
    cases = json.load(f)
json.dump([sign(c) for c in cases], sys.stdout)
