#!/usr/bin/env python3
"""Low-Latency HLS followers: N clients that each follow the live edge of a media playlist the
way an LL-HLS player does (RFC 8216bis §6.2.5.2): a blocking playlist reload for the next part
(_HLS_msn/_HLS_part), then a GET of that part, again and again, each on its own HTTP/1.1
keep-alive connection (asyncio, no library beyond Python's own); over TLS for https:// URLs
(the certificate not checked: a test's own). With --http2 each follower instead opens ONE
HTTP/2 connection (TLS with ALPN h2 for https://, h2c with prior knowledge for http://) and
follows every URL on it at once, as a browser does (Python's h2 for the framing).

For every part a follower gets it records the origin latency: the moment the blocking reload's
answer arrived, less the part's wall-clock end by the playlist (the segment's
EXT-X-PROGRAM-DATE-TIME plus the durations of its parts up to and including this one). The
followers all start within the first second (hundreds joining at once).

Prints one JSON object: followers, seconds, errors (by kind), parts published in the run,
per-follower parts fetched (min, median), the share of published parts the worst follower got,
latency percentiles (ms), requests made, bytes fetched.

    llhls-followers.py URL [URL...] [--followers 300] [--seconds 15] [--gzip] [--http2]

URL is a media playlist (…/index-video.m3u8); with several (a picture's and its sound's,
…/index-audio.m3u8), each follower follows every one at once, as a player with an audio
rendition does (its parts counted per playlist: the worst share is the worst of any).
Loopback only: the script refuses another host.
"""
import argparse
import asyncio
import ssl
import datetime
import gzip
import json
import re
import statistics
import sys
import time
import urllib.parse

PART = re.compile(r'#EXT-X-PART:(.*)')
ATTR = re.compile(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)')


def attributes(text):
    return {k: v.strip('"') for k, v in ATTR.findall(text)}


def pdt_seconds(text):
    value = text.strip().replace('Z', '+00:00')
    return datetime.datetime.fromisoformat(value).timestamp()


class Playlist:
    """What a follower needs of a media playlist: each part's segment number, index, URI and
    wall-clock end; the next part to ask for."""

    def __init__(self, text):
        self.parts = {}  # (msn, index) -> (uri, end)
        self.media_sequence = 0
        self.skipped = 0
        msn = None
        pdt = None
        elapsed = 0.0
        index = 0
        lines = text.splitlines()
        for line in lines:
            if line.startswith('#EXT-X-MEDIA-SEQUENCE:'):
                self.media_sequence = int(line.split(':', 1)[1])
                msn = self.media_sequence
            elif line.startswith('#EXT-X-SKIP:'):
                self.skipped = int(attributes(line.split(':', 1)[1]).get('SKIPPED-SEGMENTS', '0'))
                msn += self.skipped
            elif line.startswith('#EXT-X-PROGRAM-DATE-TIME:'):
                pdt = pdt_seconds(line.split(':', 1)[1])
                elapsed = 0.0
            elif line.startswith('#EXT-X-PART:'):
                a = attributes(line.split(':', 1)[1])
                elapsed += float(a['DURATION'])
                self.parts[(msn, index)] = (a['URI'], None if pdt is None else pdt + elapsed)
                index += 1
            elif line and not line.startswith('#'):
                msn += 1
                index = 0
        self.next_msn = msn
        self.next_part = index
        # The last part listed.
        self.last = max(self.parts) if self.parts else None


class Stats:
    def __init__(self):
        self.errors = {}
        self.latencies = []
        self.requests = 0
        self.bytes = 0
        self.part_numbers = {}

    def error(self, kind):
        self.errors[kind] = self.errors.get(kind, 0) + 1


async def request(reader, writer, host, target, stats, accept_gzip):
    """One GET on the keep-alive connection: (status, headers, body, arrival time)."""
    head = f'GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: llhls-follower\r\n'
    if accept_gzip:
        head += 'Accept-Encoding: gzip\r\n'
    writer.write((head + '\r\n').encode())
    await writer.drain()
    stats.requests += 1
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError('closed')
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b'\r\n', b'\n', b''):
            break
        name, _, value = line.decode('latin-1').partition(':')
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get('content-length', '0'))
    body = await reader.readexactly(length) if length else b''
    arrived = time.time()
    stats.bytes += len(body)
    if headers.get('content-encoding') == 'gzip':
        body = gzip.decompress(body)
    return status, headers, body, arrived


def tls_context(protocol):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([protocol])
    return context


class HTTP1:
    """One HTTP/1.1 keep-alive connection (over TLS for https://)."""

    async def open(self, parsed):
        tls = parsed.scheme == 'https'
        self.reader, self.writer = await asyncio.open_connection(parsed.hostname, parsed.port or (443 if tls else 80),
                                                                 ssl=tls_context('http/1.1') if tls else None)

    async def get(self, host, target, stats, accept_gzip):
        return await request(self.reader, self.writer, host, target, stats, accept_gzip)

    def close(self):
        self.writer.close()


class HTTP2:
    """One HTTP/2 connection that many requests share, each a stream (h2 over TLS by ALPN, or
    h2c with prior knowledge)."""

    async def open(self, parsed):
        import h2.config
        import h2.connection
        self.tls = parsed.scheme == 'https'
        self.reader, self.writer = await asyncio.open_connection(parsed.hostname, parsed.port or (443 if self.tls else 80),
                                                                 ssl=tls_context('h2') if self.tls else None)
        self.connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding='utf-8'))
        self.connection.initiate_connection()
        self.connection.increment_flow_control_window(8 << 20)
        self.streams = {}
        self.writer.write(self.connection.data_to_send())
        await self.writer.drain()
        self.reading = asyncio.ensure_future(self.read())

    async def read(self):
        import h2.events
        error = ConnectionError('closed')
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                for event in self.connection.receive_data(data):
                    stream = self.streams.get(getattr(event, 'stream_id', None))
                    if isinstance(event, h2.events.ResponseReceived) and stream:
                        stream['headers'] = {k.lower(): v for k, v in event.headers}
                    elif isinstance(event, h2.events.DataReceived):
                        if stream:
                            stream['body'] += event.data
                        self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded) and stream:
                        del self.streams[event.stream_id]
                        if not stream['future'].done():
                            stream['future'].set_result((stream['headers'], bytes(stream['body']), time.time()))
                    elif isinstance(event, h2.events.StreamReset) and stream:
                        del self.streams[event.stream_id]
                        if not stream['future'].done():
                            stream['future'].set_exception(ConnectionError(f'reset {event.error_code}'))
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        error = ConnectionError(f'goaway {event.error_code}')
                outgoing = self.connection.data_to_send()
                if outgoing:
                    self.writer.write(outgoing)
        except (OSError, ssl.SSLError) as e:
            error = ConnectionError(str(e))
        for stream in self.streams.values():
            if not stream['future'].done():
                stream['future'].set_exception(error)
        self.streams = {}

    async def get(self, host, target, stats, accept_gzip):
        stream_id = self.connection.get_next_available_stream_id()
        headers = [(':method', 'GET'), (':scheme', 'https' if self.tls else 'http'), (':authority', host), (':path', target),
                   ('user-agent', 'llhls-follower')] + ([('accept-encoding', 'gzip')] if accept_gzip else [])
        future = asyncio.get_running_loop().create_future()
        self.streams[stream_id] = {'headers': {}, 'body': bytearray(), 'future': future}
        self.connection.send_headers(stream_id, headers, end_stream=True)
        self.writer.write(self.connection.data_to_send())
        await self.writer.drain()
        stats.requests += 1
        received, body, arrived = await future
        stats.bytes += len(body)
        if received.get('content-encoding') == 'gzip':
            body = gzip.decompress(body)
        return int(received.get(':status', '0')), received, body, arrived

    def close(self):
        self.reading.cancel()
        self.writer.close()


async def follower(urls, deadline, stats, accept_gzip, start_delay, http2):
    """One follower: every URL on one HTTP/2 connection, or each on an HTTP/1.1 connection of its own."""
    await asyncio.sleep(start_delay)
    if not http2:
        return list(await asyncio.gather(*(follow(url, None, deadline, stats, accept_gzip) for url in urls)))
    connection = HTTP2()
    try:
        await connection.open(urllib.parse.urlsplit(urls[0]))
    except OSError:
        stats.error('connect')
        return [0] * len(urls)
    try:
        return list(await asyncio.gather(*(follow(url, connection, deadline, stats, accept_gzip) for url in urls)))
    finally:
        connection.close()


async def follow(url, shared, deadline, stats, accept_gzip):
    parsed = urllib.parse.urlsplit(url)
    host = parsed.netloc
    directory = parsed.path.rsplit('/', 1)[0] + '/'
    connection = shared or HTTP1()
    if shared is None:
        try:
            await connection.open(parsed)
        except OSError:
            stats.error('connect')
            return 0
    fetched = 0
    try:
        status, _, body, _ = await connection.get(host, parsed.path, stats, accept_gzip)
        if status != 200:
            stats.error(f'status {status}')
            return 0
        playlist = Playlist(body.decode())
        msn, part = playlist.next_msn, playlist.next_part
        while time.time() < deadline:
            target = f'{parsed.path}?_HLS_msn={msn}&_HLS_part={part}'
            status, _, body, arrived = await connection.get(host, target, stats, accept_gzip)
            if status != 200:
                stats.error(f'status {status}')
                return fetched
            playlist = Playlist(body.decode())
            entry = playlist.parts.get((msn, part))
            if entry is None:
                # Past the last part of segment msn: the next segment's first.
                entry = playlist.parts.get((msn + 1, 0))
                if entry is None:
                    stats.error('part not in the answer')
                    return fetched
                msn, part = msn + 1, 0
            uri, end = entry
            if end is not None:
                stats.latencies.append(arrived - end)
            status, _, body, _ = await connection.get(host, directory + uri, stats, False)
            if status != 200 or not body:
                stats.error(f'part status {status}')
                return fetched
            number = re.search(r'(\d+)\.m4s$', uri)
            if number:
                stats.part_numbers.setdefault(url, set()).add(int(number.group(1)))
            fetched += 1
            part += 1
    except (ConnectionError, asyncio.IncompleteReadError, ValueError, KeyError) as error:
        stats.error(type(error).__name__)
    finally:
        if shared is None:
            connection.close()
    return fetched


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('urls', nargs='+')
    parser.add_argument('--followers', type=int, default=300)
    parser.add_argument('--seconds', type=float, default=15)
    parser.add_argument('--gzip', action='store_true')
    parser.add_argument('--http2', action='store_true', help='one HTTP/2 connection a follower, every URL on it')
    args = parser.parse_args()
    for url in args.urls:
        host = urllib.parse.urlsplit(url).hostname
        if host not in ('127.0.0.1', 'localhost', '::1'):
            sys.exit(f'{host}: loopback only')
    stats = Stats()
    start = time.time()
    deadline = start + args.seconds
    tasks = [follower(args.urls, deadline, stats, args.gzip, i / args.followers, args.http2) for i in range(args.followers)]
    fetched = [count for counts in await asyncio.gather(*tasks) for count in counts]
    # Parts published while the followers followed, per playlist: from the first any follower
    # fetched to the last; the worst follower joined up to a second late, so its share counts
    # from its own start. The worst share is the worst of any playlist's.
    per_url = {url: fetched[index::len(args.urls)] for index, url in enumerate(args.urls)}
    shares = []
    for url, counts_of_url in per_url.items():
        numbers = sorted(stats.part_numbers.get(url, ()))
        published_of_url = (numbers[-1] - numbers[0] + 1) if numbers else 0
        shares.append((min(counts_of_url) / published_of_url if published_of_url else 0, published_of_url, min(counts_of_url)))
    worst = min(shares) if shares else (0, 0, 0)
    counts = fetched
    published = worst[1]
    latencies = sorted(stats.latencies)

    def percentile(p):
        return round(1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))], 1) if latencies else None

    print(json.dumps({
        'followers': args.followers,
        'seconds': args.seconds,
        'errors': stats.errors,
        'parts_published': published,
        'parts_fetched_min': worst[2],
        'parts_fetched_median': statistics.median(counts) if counts else 0,
        'worst_share': round(worst[0], 3),
        'latency_ms': {'p50': percentile(50), 'p95': percentile(95), 'p99': percentile(99), 'max': percentile(100)},
        'requests': stats.requests,
        'bytes': stats.bytes,
    }))


if __name__ == '__main__':
    asyncio.run(main())
