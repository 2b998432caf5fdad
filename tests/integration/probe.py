#!/usr/bin/env python3
# Latency probes: one keep-alive connection to 127.0.0.1:PORT, a GET of
# PATH every INTERVAL_MS, COUNT times (or until STOP_FILE exists, when
# given: STOP_FILE.ready is made once the first answer is in). Prints one
# JSON line: each answer's status counts and the latencies in ms (max,
# p50, p99, and all of them).
#
#   probe.py PORT PATH INTERVAL_MS COUNT [STOP_FILE]
import json
import os
import socket
import sys
import time

port, path, interval, count = (int(sys.argv[1]), sys.argv[2],
                               float(sys.argv[3]) / 1000, int(sys.argv[4]))
stop = sys.argv[5] if len(sys.argv) > 5 else None
req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
lat, status = [], {}
buf = b""


def answer():
    """Read one answer (Content-Length framed); its status."""
    global buf
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise EOFError
        buf += d
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    n = 0
    for h in lines[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            n = int(v)
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise EOFError
        buf += d
    buf = buf[n:]
    return lines[0].split(" ")[1]


for i in range(count):
    if stop and os.path.exists(stop):
        break
    t0 = time.monotonic()
    s.sendall(req)
    st = answer()
    ms = (time.monotonic() - t0) * 1000
    lat.append(round(ms, 2))
    status[st] = status.get(st, 0) + 1
    if stop and i == 0:
        open(stop + ".ready", "w").close()
    time.sleep(interval)
srt = sorted(lat)
print(json.dumps({
    "status": status, "n": len(lat), "max": srt[-1] if srt else -1,
    "p50": srt[len(srt) // 2] if srt else -1,
    "p99": srt[min(len(srt) - 1, int(len(srt) * 0.99))] if srt else -1,
    "lat": lat}), flush=True)
