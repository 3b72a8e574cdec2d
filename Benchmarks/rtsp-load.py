#!/usr/bin/env python3
"""RTSP server under load with two media (issue #42): `h264kit stream --loop FILE rtsp://...`
serving a file with sound as one live stream, played by CLIENTS clients over TCP interleaved
(both media set up: SETUP trackID=0 and trackID=1 in one session) that join over the first
seconds, then a burst of BURST more in the same second, SILENT of the first ones never reading.
All keep playing for SECONDS. Each reading client counts the RTP packets of each medium (by
interleaved channel) and the time of its first; the server's peak RSS (/proc VmHWM) is read at
the end. Printed: clients that got both media (and the least packets of each among them), the
ones short of either, join latency p50/p95/max (PLAY sent to the first RTP packet), and the peak
RSS against issue #17's bar of 32 MB + 4 MB a client.

Usage: Benchmarks/rtsp-load.py BIN FILE [--clients 250] [--burst 100] [--silent 20] [--seconds 20]
Loopback only; the port is chosen free."""
import argparse, asyncio, os, socket, statistics, subprocess, sys, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


class Client:
    def __init__(self, url, reads):
        self.url, self.reads = url, reads
        self.packets = [0, 0]
        self.first = None
        self.played = None
        self.error = None

    async def run(self, port, until):
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
            writer.write(f"DESCRIBE {self.url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n".encode())
            status, _, body = await asyncio.wait_for(response(reader), 30)
            if " 200 " not in status + " " or b"m=audio" not in body:
                raise RuntimeError(f"DESCRIBE: {status}, audio described: {b'm=audio' in body}")
            writer.write(f"SETUP {self.url}/trackID=0 RTSP/1.0\r\nCSeq: 2\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n".encode())
            status, headers, _ = await asyncio.wait_for(response(reader), 30)
            session = headers.get("session", "").split(";")[0]
            writer.write(f"SETUP {self.url}/trackID=1 RTSP/1.0\r\nCSeq: 3\r\nSession: {session}\r\nTransport: RTP/AVP/TCP;unicast;interleaved=2-3\r\n\r\n".encode())
            status2, _, _ = await asyncio.wait_for(response(reader), 30)
            if " 200 " not in status + " " or " 200 " not in status2 + " ":
                raise RuntimeError(f"SETUP: {status} / {status2}")
            writer.write(f"PLAY {self.url} RTSP/1.0\r\nCSeq: 4\r\nSession: {session}\r\n\r\n".encode())
            self.played = time.monotonic()
            status, _, _ = await asyncio.wait_for(response(reader), 30)
            if not self.reads:
                await asyncio.sleep(max(0, until - time.monotonic()))  # holds both media, never reads
                writer.close()
                return
            buffer = b""
            while time.monotonic() < until:
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), max(0.1, until - time.monotonic()))
                except asyncio.TimeoutError:
                    break
                if not chunk:
                    break
                buffer += chunk
                while len(buffer) >= 4:
                    if buffer[0] != 0x24:  # an RTSP message in between (none expected): skip to the next frame
                        at = buffer.find(b"$")
                        buffer = buffer[at:] if at >= 0 else b""
                        continue
                    length = int.from_bytes(buffer[2:4], "big")
                    if len(buffer) < 4 + length:
                        break
                    channel = buffer[1]
                    if channel in (0, 2):
                        self.packets[channel // 2] += 1
                        if self.first is None:
                            self.first = time.monotonic()
                    buffer = buffer[4 + length:]
            writer.close()
        except Exception as error:  # noqa: BLE001 (reported per client)
            self.error = f"{type(error).__name__}: {error}"


def vmhwm(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("file")
    parser.add_argument("--clients", type=int, default=250)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--silent", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    port = free_port()
    url = f"rtsp://127.0.0.1:{port}/live"
    server = subprocess.Popen([args.bin, "stream", "--loop", args.file, url], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        start = time.monotonic()
        until = start + args.seconds + 5
        clients = [Client(url, reads=index >= args.silent) for index in range(args.clients)]
        tasks = []
        for index, client in enumerate(clients):  # the first ones over 3 s
            tasks.append(asyncio.create_task(client.run(port, until)))
            await asyncio.sleep(3 / args.clients)
        await asyncio.sleep(2)
        burst = [Client(url, reads=True) for _ in range(args.burst)]  # then a burst in the same second
        tasks += [asyncio.create_task(client.run(port, until)) for client in burst]
        await asyncio.gather(*tasks)
        peak = vmhwm(server.pid)
    finally:
        server.terminate()
        server.wait(10)
    everyone = clients + burst
    readers = [c for c in everyone if c.reads]
    failed = [c for c in everyone if c.error]
    both = [c for c in readers if c.packets[0] > 0 and c.packets[1] > 0]
    joins = sorted((c.first - c.played) * 1000 for c in readers if c.first and c.played)
    total = len(everyone)
    print(f"{total} clients ({args.clients} over 3 s, {args.silent} of them never reading, then {args.burst} in one second), {args.seconds:.0f} s+")
    print(f"  readers with both media: {len(both)}/{len(readers)}; failed: {len(failed)}"
          + (f" (first: {failed[0].error})" if failed else ""))
    if both:
        print(f"  least packets a reader got: video {min(c.packets[0] for c in both)}, audio {min(c.packets[1] for c in both)}; "
              f"median video {statistics.median(c.packets[0] for c in both):.0f}, audio {statistics.median(c.packets[1] for c in both):.0f}")
    if joins:
        print(f"  PLAY to first RTP packet: p50 {statistics.median(joins):.0f} ms, p95 {joins[int(0.95 * (len(joins) - 1))]:.0f} ms, max {joins[-1]:.0f} ms")
    bar = 32 + 4 * total
    print(f"  server peak RSS {peak:.1f} MB (bar: 32 MB + 4 MB x {total} clients = {bar} MB)")
    sys.exit(0 if len(both) == len(readers) and not failed and peak <= bar else 1)


if __name__ == "__main__":
    asyncio.run(main())
