#!/usr/bin/env python3
"""A TLS front for a plain catalog that says how each connection ended.

    tlsclose.py CERT KEY CATALOG_PORT LOG [1.2]

Binds 127.0.0.1 on a free port and prints "ready PORT". Every connection
accepted is piped both ways to the catalog; when it ends, one JSON line
goes to LOG: its number, the first line of its first request, its TLS
version, whether it resumed a session, whether it was slow, and how the
client ended it:
  "close_notify"  the client sent a close_notify, then closed;
  "eof"           the client closed its socket without one;
  "catalog"       the catalog closed first;
  "bye"           the front ended it after an answer (SIGUSR2, below);
  "error: ..."    anything else (a handshake that failed, a reset).
With 1.2 it speaks TLS 1.2 at most (session tickets, as a TLS 1.2 load
balancer would).
SIGUSR1 makes the connections accepted from then on slow readers: a
receive buffer of 256 KiB, 16 KiB a read and a millisecond between reads
(under 16 MB/s), so that a client writing a large request meets a full
socket. (A receive buffer smaller than loopback's 64 KiB segment would
leave the window too small to send into, and the sender waiting for the
persist timer.) SIGUSR2 makes the connections accepted from then on end
after their first answer (by its Content-Length): its last bytes and a
close_notify leave in one TCP segment, so that the client reads both at
once, as when a load balancer closes a connection the moment it goes
idle. SIGTERM stops it.
"""
import json
import select
import signal
import socket
import ssl
import sys
import threading
import time

cert, key, cat_port, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
if sys.argv[5:] == ["1.2"]:
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
log_lock = threading.Lock()
slow = False
bye = False


def record(entry):
    with log_lock, open(log_path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def answer_left(head):
    """The bytes of an answer still to come after HEAD, its first bytes
    (None while its head is not whole or it has no Content-Length)."""
    end = head.find(b"\r\n\r\n")
    if end == -1:
        return None
    for line in head[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value) - (len(head) - end - 4)
    return None


def pipe(s, cat, entry):
    """Copy both ways until one side ends; return how it ended."""
    chunk = 16384 if entry["slow"] else 65536
    head = b""
    while True:
        if s.pending() == 0:
            ready, _, _ = select.select([s, cat], [], [])
        else:
            ready = [s]
        if s in ready:
            if entry["slow"]:
                time.sleep(0.001)
            try:
                data = s.recv(chunk)
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
            if entry["bye"]:
                head += data
                if answer_left(head) == 0:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                    s.sendall(data)
                    s.settimeout(0)  # send a close_notify, wait for none
                    try:
                        s.unwrap()
                    except ssl.SSLWantReadError:
                        pass
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
                    return "bye"
            s.sendall(data)


def serve(n, raw):
    entry = {"conn": n, "slow": slow, "bye": bye}
    s = raw
    try:
        s = ctx.wrap_socket(raw, server_side=True, suppress_ragged_eofs=False)
        entry["version"] = s.version()
        entry["resumed"] = s.session_reused
        with socket.create_connection(("127.0.0.1", cat_port)) as cat:
            entry["end"] = pipe(s, cat, entry)
    except (OSError, ssl.SSLError) as e:
        entry["end"] = "error: %s" % e
    finally:
        s.close()
    record(entry)


def slow_from_now(*_):
    global slow
    slow = True


def bye_from_now(*_):
    global bye
    bye = True


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGUSR1, slow_from_now)
    signal.signal(signal.SIGUSR2, bye_from_now)
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print("ready", ls.getsockname()[1], flush=True)
    n = 0
    while True:
        raw, _ = ls.accept()
        if slow:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 131072)
        n += 1
        threading.Thread(target=serve, args=(n, raw), daemon=True).start()


main()
