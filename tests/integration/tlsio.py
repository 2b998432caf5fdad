#!/usr/bin/env python3
# TLS clients that put floe's TLS reads and writes on their edges.
#
#   tlsio.py behind PORT PATH CONNS VERSION
#     CONNS fresh connections (VERSION 1.2 or 1.3), each sending its
#     client Finished and two pipelined requests for PATH (two records) in
#     one segment, so that they arrive with the end of the handshake.
#     Prints one JSON line: how many connections got both answers (200),
#     how many hung (no answer within 5 s), how many failed otherwise.
#   tlsio.py slow PORT BIG SMALL OUTDIR
#     One connection with a 16 KiB receive buffer and a 1448-byte MSS:
#     BIG and SMALL pipelined in one record, both read slowly, then BIG
#     again on the same connection. The bodies go to OUTDIR/1, 2, 3; prints
#     the three statuses.
import json
import socket
import ssl
import sys
import time


def context(version):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    v = ssl.TLSVersion.TLSv1_3 if version == "1.3" else ssl.TLSVersion.TLSv1_2
    ctx.minimum_version = ctx.maximum_version = v
    return ctx


def request(path):
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


class Answers:
    """HTTP/1.1 answers (Content-Length or chunked) from a recv function."""

    def __init__(self, recv):
        self.recv = recv
        self.buf = b""

    def more(self):
        d = self.recv()
        if not d:
            raise EOFError("closed")
        self.buf += d

    def next(self):
        while b"\r\n\r\n" not in self.buf:
            self.more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        n, chunked = 0, False
        for line in lines[1:]:
            k, _, v = line.partition(":")
            k = k.strip().lower()
            if k == "content-length":
                n = int(v)
            elif k == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if not chunked:
            return status, self.take(n)
        body = b""
        while True:
            while b"\r\n" not in self.buf:
                self.more()
            size, self.buf = self.buf.split(b"\r\n", 1)
            n = int(size.split(b";")[0], 16)
            body += self.take(n)
            if self.take(2) != b"\r\n":
                raise ValueError("bad chunk")
            if n == 0:
                return status, body

    def take(self, n):
        while len(self.buf) < n:
            self.more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def behind(port, path, conns, version):
    ctx = context(version)
    res = {"ok": 0, "hung": 0, "failed": 0}
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(5)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        o = ctx.wrap_bio(inc, out)
        try:
            while True:
                try:
                    o.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    if out.pending:
                        s.sendall(out.read())
                    d = s.recv(65536)
                    if not d:
                        raise EOFError("closed in the handshake")
                    inc.write(d)
            # The Finished (1.3), then two records: one segment.
            o.write(request(path))
            o.write(request(path))
            s.sendall(out.read())

            def recv():
                while True:
                    try:
                        return o.read(65536)
                    except ssl.SSLWantReadError:
                        d = s.recv(65536)
                        if not d:
                            return b""
                        inc.write(d)

            a = Answers(recv)
            st = [a.next()[0], a.next()[0]]
            res["ok" if st == [200, 200] else "failed"] += 1
        except socket.timeout:
            res["hung"] += 1
        except (OSError, EOFError, ssl.SSLError):
            res["failed"] += 1
        s.close()
    print(json.dumps(res))


def slow(port, big, small, outdir):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    t = context("1.3").wrap_socket(s)
    t.sendall(request(big) + request(small))

    def recv():
        time.sleep(0.002)
        return t.recv(16384)

    a = Answers(recv)
    st = []
    for i in (1, 2):
        code, body = a.next()
        st.append(code)
        open(f"{outdir}/{i}", "wb").write(body)
    t.sendall(request(big))
    code, body = a.next()
    st.append(code)
    open(f"{outdir}/3", "wb").write(body)
    print(" ".join(map(str, st)))
    t.close()


if sys.argv[1] == "behind":
    behind(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
else:
    slow(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
