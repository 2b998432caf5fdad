#!/usr/bin/env python3
# A client that takes its answer slowly, for the streamed answer tests.
#
#   slowread.py PORT PATH GO_FILE OUT
#
# Opens one connection to 127.0.0.1:PORT with a 64 KiB receive buffer and
# a 1448-byte MSS (a real network's: loopback's 64 KiB one lets the kernel
# buffer megabytes per socket), sends a GET for PATH, reads the head and
# 256 KiB of the body, prints "head", and reads nothing more until GO_FILE
# exists (at most 120 s). Then it reads the rest at full speed, de-chunks
# it into OUT and prints one JSON line: the status, whether the answer
# was chunked and ended with its last chunk, and the body's length.
# With SLOW_TLS_CA set (a CA file), it speaks TLS, verifying against it.
import json
import os
import socket
import ssl
import sys
import time

port, path, go, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)
s.settimeout(60)
s.connect(("127.0.0.1", port))
if os.environ.get("SLOW_TLS_CA"):
    ctx = ssl.create_default_context(cafile=os.environ["SLOW_TLS_CA"])
    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
buf = bytearray()
while b"\r\n\r\n" not in buf or len(buf) < (256 << 10):
    d = s.recv(65536)
    if not d:
        break
    buf += d
print("head", flush=True)
deadline = time.time() + 120
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.05)
while True:
    d = s.recv(1 << 20)
    if not d:
        break
    buf += d
    if buf.endswith(b"\r\n0\r\n\r\n"):
        break
s.close()
end = buf.find(b"\r\n\r\n")
head = bytes(buf[:end]).decode("latin-1").split("\r\n")
chunked = any(h.lower().startswith("transfer-encoding:") and "chunked" in h
              for h in head[1:])
body, at, ended = bytearray(), end + 4, False
while chunked and at < len(buf):
    e = buf.find(b"\r\n", at)
    if e < 0:
        break
    n = int(bytes(buf[at:e]).split(b";")[0], 16)
    if n == 0:
        ended = True
        break
    body += buf[e + 2:e + 2 + n]
    at = e + 2 + n + 2
if not chunked:
    body = buf[end + 4:]
open(out, "wb").write(body)
print(json.dumps({"status": int(head[0].split(" ")[1]), "chunked": chunked,
                  "ended": ended, "length": len(body)}), flush=True)
