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
    """One connection's answers, framed by Content-Length or chunked."""

    def __init__(self, s):
        self.s = s
        self.buf = bytearray()
        self.at = 0  # where in buf the next byte is
        self.need = None  # body (or chunk + CRLF) bytes still to come
        self.state = "head"  # or "size", "trailer": of a chunked body
        self.answers = 0
        self.status = {}

    def feed(self, data):
        if self.at > 0:
            del self.buf[:self.at]
            self.at = 0
        self.buf += data
        while True:
            if self.need is not None:
                take = min(self.need, len(self.buf) - self.at)
                self.at += take
                self.need -= take
                if self.need > 0:
                    return
                self.need = None
                if self.state == "head":
                    self.answers += 1
                continue
            if self.state == "head":
                end = self.buf.find(b"\r\n\r\n", self.at)
                if end < 0:
                    return
                head = bytes(self.buf[self.at:end]).decode("latin-1")
                head = head.split("\r\n")
                self.at = end + 4
                st = head[0].split(" ")[1]
                self.status[st] = self.status.get(st, 0) + 1
                n, chunked = 0, False
                for h in head[1:]:
                    k, _, v = h.partition(":")
                    k = k.strip().lower()
                    if k == "content-length":
                        n = int(v.strip())
                    elif k == "transfer-encoding" and "chunked" in v:
                        chunked = True
                if chunked:
                    self.state = "size"
                elif n > 0:
                    self.need = n
                else:
                    self.answers += 1
                continue
            end = self.buf.find(b"\r\n", self.at)
            if end < 0:
                return
            line = bytes(self.buf[self.at:end])
            self.at = end + 2
            if self.state == "trailer":
                if not line:
                    self.state = "head"
                    self.answers += 1
                continue
            size = int(line.split(b";")[0], 16)
            if size == 0:
                self.state = "trailer"
            else:
                self.need = size + 2


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
