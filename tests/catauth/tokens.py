#!/usr/bin/python3
# A test OAuth2 token server for floe's token holder (tests/unit/test_token.c):
# the client-credentials grant at /oauth/tokens and Google's JWT-bearer
# grant at /google/token, whose RS256 assertion is verified with PyJWT
# (Debian's python3-jwt), independently of floe's OpenSSL code.
#
# Usage: tokens.py --client-id ID --secret-file FILE
#                  [--google-pub PEM --google-email EMAIL] [--port P]
# Binds 127.0.0.1 on port P (default: one the kernel picks; give the same
# one again to bring a stopped server back) and prints "ready PORT".
# SIGTERM stops it. Behaviour is set over HTTP:
#   POST /control {"lifetime": s, "refuse": status|0, "delay_ms": n,
#                  "expires_in": "int"|"string"|"none", "reset": true}
#   GET  /stats   {"requests", "issued", "refused", "last_error",
#                  "last_auth": "form"|"basic"|"jwt"}
#   GET  /introspect (Authorization: Bearer T) 200 {"active", "expires_in"}
#                  for a token it issued that has not expired, else 401.
import argparse
import base64
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_plus

import jwt

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLOUD = "https://www.googleapis.com/auth/cloud-platform"

lock = threading.Lock()
state = {}
issued = {}  # token -> expiry (time.time())


def reset():
    state.clear()
    state.update(lifetime=3600, refuse=0, delay_ms=0, expires_in="int",
                 requests=0, issued=0, refused=0, last_error="",
                 last_auth="", last_scope="", last_audience="")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, status, error, description):
        with lock:
            state["refused"] += 1
            state["last_error"] = error + ": " + description
        self.reply(status, {"error": error, "error_description": description})

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n).decode()

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                self.reply(200, dict(state))
            return
        if self.path == "/introspect":
            auth = self.headers.get("Authorization", "")
            tok = auth[7:] if auth.startswith("Bearer ") else ""
            with lock:
                exp = issued.get(tok)
            if exp is None or exp <= time.time():
                self.reply(401, {"active": False})
            else:
                self.reply(200, {"active": True,
                                 "expires_in": exp - time.time()})
            return
        self.reply(404, {"error": "not_found"})

    def do_POST(self):
        body = self.body()
        if self.path == "/control":
            c = json.loads(body)
            with lock:
                if c.pop("reset", False):
                    reset()
                state.update(c)
            self.reply(200, {"ok": True})
            return
        if self.path not in ("/oauth/tokens", "/google/token"):
            self.reply(404, {"error": "not_found"})
            return
        with lock:
            state["requests"] += 1
            delay, refuse = state["delay_ms"], state["refuse"]
        if delay:
            time.sleep(delay / 1000)
        if self.headers.get("Content-Type") != \
                "application/x-www-form-urlencoded":
            return self.refuse(400, "invalid_request", "not a form")
        form = {k: v[0] for k, v in
                parse_qs(body, keep_blank_values=True).items()}
        if refuse:
            return self.refuse(refuse, "invalid_client", "refused for the test")
        if self.path == "/oauth/tokens":
            ok = self.client_credentials(form)
        else:
            ok = self.jwt_bearer(form)
        if not ok:
            return
        with lock:
            life = state["lifetime"]
            tok = "tok-%d-%s" % (state["issued"] + 1, secrets.token_urlsafe(12))
            issued[tok] = time.time() + life
            state["issued"] += 1
            style = state["expires_in"]
        answer = {"access_token": tok, "token_type": "bearer",
                  "issued_token_type":
                  "urn:ietf:params:oauth:token-type:access_token"}
        if style == "int":
            answer["expires_in"] = life
        elif style == "string":
            answer["expires_in"] = str(life)
        self.reply(200, answer)

    # RFC 6749 4.4, the client authenticated by form fields or HTTP Basic
    # (2.3.1: id and secret form-encoded before base64).
    def client_credentials(self, form):
        if form.get("grant_type") != "client_credentials":
            self.refuse(400, "unsupported_grant_type", "want client_credentials")
            return False
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            raw = base64.b64decode(auth[6:]).decode()
            cid, _, sec = raw.partition(":")
            cid, sec, how = unquote_plus(cid), unquote_plus(sec), "basic"
            if "client_secret" in form:
                self.refuse(400, "invalid_request", "two client credentials")
                return False
        else:
            cid, sec, how = form.get("client_id"), form.get("client_secret"), "form"
        with lock:
            state["last_auth"] = how
            state["last_scope"] = form.get("scope", "")
            state["last_audience"] = form.get("audience", "")
        if cid != args.client_id or sec != SECRET:
            self.refuse(401, "invalid_client", "unknown client or wrong secret")
            return False
        return True

    # RFC 7523, as Google's token endpoint checks it.
    def jwt_bearer(self, form):
        if form.get("grant_type") != JWT_BEARER:
            self.refuse(400, "unsupported_grant_type", "want jwt-bearer")
            return False
        assertion = form.get("assertion", "")
        aud = "http://127.0.0.1:%d/google/token" % port
        try:
            hdr = jwt.get_unverified_header(assertion)
            claims = jwt.decode(assertion, GOOGLE_PUB, algorithms=["RS256"],
                                audience=aud, issuer=args.google_email,
                                options={"require": ["iat", "exp", "iss",
                                                     "aud", "scope"]})
        except jwt.InvalidTokenError as e:
            self.refuse(400, "invalid_grant", "Invalid JWT: %s" % e)
            return False
        with lock:
            state["last_auth"] = "jwt"
            state["last_scope"] = claims["scope"]
        if hdr.get("typ") != "JWT" or hdr.get("kid") != "kid-1":
            self.refuse(400, "invalid_grant", "bad header %r" % hdr)
            return False
        if claims["exp"] - claims["iat"] != 3600 or \
                abs(claims["iat"] - time.time()) > 60:
            self.refuse(400, "invalid_grant", "bad iat/exp")
            return False
        if claims["scope"] != CLOUD:
            self.refuse(400, "invalid_scope", claims["scope"])
            return False
        return True


p = argparse.ArgumentParser()
p.add_argument("--client-id", required=True)
p.add_argument("--secret-file", required=True)
p.add_argument("--google-pub")
p.add_argument("--google-email")
p.add_argument("--port", type=int, default=0)
args = p.parse_args()
with open(args.secret_file) as f:
    SECRET = f.read().strip()
GOOGLE_PUB = open(args.google_pub).read() if args.google_pub else None
reset()
class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    # A client that hung up (floe cancelling a slow request) is no error.
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError,
                                              ConnectionResetError)):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", args.port), Handler)
port = server.server_address[1]
print("ready %d" % port, flush=True)
server.serve_forever()
