#!/usr/bin/env python3
"""A TLS front for a plain catalog that says how each connection ended.

    tlsclose.py CERT KEY CATALOG_PORT LOG

Binds 127.0.0.1 on a free port and prints "ready PORT". Every connection
accepted is piped both ways to the catalog; when it ends, one JSON line
goes to LOG: its number, the first line of its first request, whether it
resumed a TLS session, and how the client ended it:
  "close_notify"  the client sent a close_notify, then closed;
  "eof"           the client closed its socket without one;
  "catalog"       the catalog closed first;
  "error: ..."    anything else (a handshake that failed, a reset).
SIGTERM stops it.
"""
import json
import select
import signal
import socket
import ssl
import sys
import threading

cert, key, cat_port, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
log_lock = threading.Lock()


def record(entry):
    with log_lock, open(log_path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def pipe(s, cat, entry):
    """Copy both ways until one side ends; return how it ended."""
    while True:
        if s.pending() == 0:
            ready, _, _ = select.select([s, cat], [], [])
        else:
            ready = [s]
        if s in ready:
            try:
                data = s.recv(65536)
            except ssl.SSLWantReadError:
                continue
            except ssl.SSLEOFError:
                return "eof"
            if not data:
                return "close_notify"
            if "request" not in entry:
                entry["request"] = data.split(b"\r\n", 1)[0].decode("latin-1")
            cat.sendall(data)
        if cat in ready:
            data = cat.recv(65536)
            if not data:
                return "catalog"
            s.sendall(data)


def serve(n, raw):
    entry = {"conn": n}
    s = raw
    try:
        s = ctx.wrap_socket(raw, server_side=True, suppress_ragged_eofs=False)
        entry["resumed"] = s.session_reused
        with socket.create_connection(("127.0.0.1", cat_port)) as cat:
            entry["end"] = pipe(s, cat, entry)
    except (OSError, ssl.SSLError) as e:
        entry["end"] = "error: %s" % e
    finally:
        s.close()
    record(entry)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print("ready", ls.getsockname()[1], flush=True)
    n = 0
    while True:
        raw, _ = ls.accept()
        n += 1
        threading.Thread(target=serve, args=(n, raw), daemon=True).start()


main()
