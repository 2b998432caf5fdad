#!/usr/bin/env python3
# Clients that do not take their answers, for the output budget tests.
#
#   hold.py PORT PATH CONNS PIPELINE GO_FILE
#
# Opens CONNS connections to 127.0.0.1:PORT (each with a 16 KiB receive
# buffer and a 1448-byte MSS, so that the kernel holds little of what
# floe sends), writes
# PIPELINE requests for PATH on each at once, prints "sent" and reads
# nothing until GO_FILE exists (checked every 50 ms, for at most 120 s).
# Then it reads every connection to the end of its PIPELINE answers (60 s
# at most) and prints one JSON line: how many answers of each status, and
# how many connections got all of theirs. A GO_FILE holding "close"
# closes the connections without reading instead.
import json
import os
import selectors
import socket
import sys
import time

port, path, conns, pipeline, go = (int(sys.argv[1]), sys.argv[2],
                                   int(sys.argv[3]), int(sys.argv[4]),
                                   sys.argv[5])
req = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").encode()
socks = []
for i in range(conns):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    # A real network's segment size: loopback's 64 KiB one lets the
    # kernel buffer megabytes per socket, which would hide floe's own.
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(req * pipeline)
    socks.append(s)
print("sent", flush=True)

deadline = time.time() + 120
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.05)
if not os.path.exists(go) or open(go).read().strip() == "close":
    for s in socks:
        s.close()
    print(json.dumps({"closed": conns}), flush=True)
    sys.exit(0)


class Conn:
    """One connection's answers, framed by Content-Length."""

    def __init__(self, s):
        self.s = s
        self.buf = bytearray()
        self.need = None  # body bytes still to come, or None: in a head
        self.answers = 0
        self.status = {}

    def feed(self, data):
        i, n = 0, len(data)
        while i < n:
            if self.need is not None:
                take = min(self.need, n - i)
                i += take
                self.need -= take
                if self.need == 0:
                    self.need = None
                    self.answers += 1
                continue
            self.buf += data[i:]
            i = n
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            data, i, n = bytes(self.buf[end + 4:]), 0, len(self.buf) - end - 4
            self.buf = bytearray()
            st = head[0].split(" ")[1]
            self.status[st] = self.status.get(st, 0) + 1
            self.need = 0
            for h in head[1:]:
                k, _, v = h.partition(":")
                if k.strip().lower() == "content-length":
                    self.need = int(v.strip())
            if self.need == 0:
                self.need = None
                self.answers += 1


sel = selectors.DefaultSelector()
state = {}
for s in socks:
    s.setblocking(False)
    c = Conn(s)
    state[s.fileno()] = c
    sel.register(s, selectors.EVENT_READ, c)
open_n = conns
deadline = time.time() + 60
while open_n > 0 and time.time() < deadline:
    for key, _ in sel.select(timeout=0.5):
        c = key.data
        try:
            data = c.s.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            data = b""
        if data:
            c.feed(data)
        if not data or c.answers >= pipeline:
            sel.unregister(c.s)
            c.s.close()
            open_n -= 1
status = {}
complete = 0
for c in state.values():
    for k, v in c.status.items():
        status[k] = status.get(k, 0) + v
    if c.answers >= pipeline:
        complete += 1
print(json.dumps({"status": status, "complete": complete}), flush=True)
