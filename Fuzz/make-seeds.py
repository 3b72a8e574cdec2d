#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the committed fixtures and small files made here
with ffmpeg/x264 (installed by scripts/setup-debian.sh). Usage: make-seeds.py OUTDIR"""
import glob, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = sys.argv[1]
targets = ["FuzzAnnexB", "FuzzParameterSets", "FuzzAVCC", "FuzzSampleBuffers", "FuzzMovie", "FuzzY4M", "FuzzRTP", "FuzzSDP", "FuzzRTSP", "FuzzTransportStream", "FuzzAudio"]
for t in targets:
    os.makedirs(os.path.join(out, t), exist_ok=True)

def put(target, name, data):
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)

work = tempfile.mkdtemp(prefix="h264kit-seeds-")
streams = sorted(glob.glob(os.path.join(root, "Tests/Fixtures/*.264")) + glob.glob(os.path.join(root, "Samples/Media/*.264")))
# Small streams of the kinds the fixtures lack: B-frames, interlaced, 4:2:2/4:4:4, intra-only, VUI timing.
made = {
    "bframes": ["-c:v", "libx264", "-bf", "2", "-pix_fmt", "yuv420p"],
    "interlaced": ["-c:v", "libx264", "-flags", "+ilme+ildct", "-pix_fmt", "yuv420p"],
    "high422": ["-c:v", "libx264", "-pix_fmt", "yuv422p"],
    "high444": ["-c:v", "libx264", "-pix_fmt", "yuv444p"],
    "intra": ["-c:v", "libx264", "-g", "1", "-pix_fmt", "yuv420p"],
    "baseline-slices": ["-c:v", "libx264", "-profile:v", "baseline", "-x264-params", "slices=4:aud=1", "-pix_fmt", "yuv420p"],
}
for name, args in made.items():
    path = os.path.join(work, name + ".264")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-frames:v", "6", *args, "-f", "h264", path)
    streams.append(path)

def nal_units(data):
    """Payloads of the Annex-B NAL units in data."""
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for n, s in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(data)
        while end > s and data[end - 1] == 0:
            end -= 1
        units.append(data[s:end])
    return units

for path in streams:
    name = os.path.splitext(os.path.basename(path))[0]
    data = open(path, "rb").read()[:16384]  # small inputs run fast: the first pictures
    put("FuzzAnnexB", name, bytes([0x40]) + data)
    put("FuzzSampleBuffers", name, bytes([0x00, 0x00]) + data)
    put("FuzzSampleBuffers", name + "-avc3-2byte-fragmented", bytes([0x05, 0x02]) + data)
    record = b""
    for unit in nal_units(data):
        if not unit:
            continue
        kind = unit[0] & 0x1F
        keep = unit if kind in (6, 7, 8) else unit[:48] if kind in (1, 5) else b""
        if keep:
            record += len(keep).to_bytes(2, "big") + keep
    put("FuzzParameterSets", name, record[:16384])

# Movies of each layout, a MOV with a timecode track, and the committed MP4.
movies = [os.path.join(root, "Tests/Fixtures/androidx-sample_with_invalid_nalu.mp4")]
layouts = {
    "progressive.mp4": [],
    "faststart.mp4": ["-movflags", "+faststart"],
    "fragmented.mp4": ["-movflags", "frag_keyframe+empty_moov+default_base_moof"],
    "timecode.mov": ["-timecode", "01:00:00:00"],
    "metadata.mov": ["-metadata", "title=seed", "-movflags", "use_metadata_tags"],
}
for path in streams[-6:]:
    name = os.path.splitext(os.path.basename(path))[0]
    for suffix, args in layouts.items():
        movie = os.path.join(work, name + "-" + suffix)
        ffmpeg("-r", "25", "-f", "h264", "-i", path, "-c", "copy", *args, movie)
        movies.append(movie)
for movie in movies:
    data = open(movie, "rb").read()
    put("FuzzMovie", os.path.basename(movie), data)
    i = data.find(b"avcC")
    if i >= 4:
        size = int.from_bytes(data[i - 4:i], "big")
        record = data[i + 4:i - 4 + size]
        sample = b"\x00\x00\x00\x05\x65\x88\x84\x00\x20\x00\x00\x00\x02\x41\x9a"
        put("FuzzAVCC", os.path.basename(movie), len(record).to_bytes(2, "big") + record + sample)

# Movies with sound: AAC in an MP4, G.711 in a MOV (a byte a sample, read as runs).
for name, args in [("sound-aac.mp4", ["-c:a", "aac"]), ("sound-ulaw.mov", ["-c:a", "pcm_mulaw", "-ac", "1"]), ("sound-alaw.mov", ["-c:a", "pcm_alaw", "-ac", "2"])]:
    movie = os.path.join(work, name)
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-f", "lavfi", "-i", "sine=sample_rate=8000", "-t", "0.5",
           "-c:v", "libx264", "-preset", "ultrafast", *args, movie)
    if os.path.exists(movie):
        put("FuzzMovie", name, open(movie, "rb").read())

# Transport streams FFmpeg writes from the movies (188 and 192-byte packets, two programs), the
# first 60 kB of each, after the target's two option bytes.
for movie in movies[1:4]:
    name = os.path.splitext(os.path.basename(movie))[0]
    for suffix, args in [(".ts", []), (".m2ts", ["-f", "mpegts", "-mpegts_m2ts_mode", "1"])]:
        ts = os.path.join(work, name + suffix)
        ffmpeg("-i", movie, "-c", "copy", *args, ts)
        if os.path.exists(ts):
            put("FuzzTransportStream", name + suffix, bytes([0x00, 0x00]) + open(ts, "rb").read()[:60000])
            put("FuzzTransportStream", name + "-roundtrip" + suffix, bytes([0x0C, 0x04]) + open(ts, "rb").read()[:30000])
two = os.path.join(work, "two-programs.ts")
ffmpeg("-i", movies[1], "-i", movies[2], "-map", "0:v", "-map", "1:v", "-c", "copy", "-program", "program_num=1:st=0", "-program", "program_num=2:st=1", two)
if os.path.exists(two):
    put("FuzzTransportStream", "two-programs", bytes([0x20, 0x02]) + open(two, "rb").read()[:60000])

for fmt, extra in [("yuv420p", []), ("yuv422p", []), ("yuv444p", []), ("gray", ["-strict", "-1"]), ("yuv420p10le", ["-strict", "-1"])]:
    path = os.path.join(work, fmt + ".y4m")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=8x6:rate=30000/1001", "-frames:v", "2", "-pix_fmt", fmt, *extra, "-f", "yuv4mpegpipe", path)
    put("FuzzY4M", fmt, open(path, "rb").read())

# RTP as ffmpeg sends it (over loopback UDP to a socket here), each datagram after a 2-byte
# length; the SDP it announces.
import socket
def rtp_datagrams(*args, url_args):
    """The datagrams ffmpeg's RTP muxer sends to a socket here, each after a 2-byte length."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(1)
    port = receiver.getsockname()[1]
    ffmpeg(*args, f"rtp://127.0.0.1:{port}?{url_args}")
    data = b""
    try:
        while len(data) < 30000:
            datagram = receiver.recv(65536)
            data += len(datagram).to_bytes(2, "big") + datagram
    except socket.timeout:
        pass
    receiver.close()
    return data

for path in streams[-6:]:
    name = os.path.splitext(os.path.basename(path))[0]
    for flags, url_args in [("mode1", "pkt_size=200"), ("mode0", "pkt_size=60000")]:
        sdp = os.path.join(work, f"{name}-{flags}.sdp")
        extra = ["-rtpflags", "h264_mode0"] if flags == "mode0" else []
        data = rtp_datagrams("-r", "25", "-f", "h264", "-i", path, "-c", "copy", *extra, "-f", "rtp", "-sdp_file", sdp, url_args=url_args)
        put("FuzzRTP", f"{name}-{flags}", bytes([0x00, 0x10]) + data)
        put("FuzzSDP", f"{name}-{flags}", open(sdp, "rb").read())
# AAC over RTP as ffmpeg sends it (RFC 3640, frames gathered and, at 200 bytes, fragmented):
# the AAC path of FuzzRTP (first byte 0x80: AAC, second 0x00: AAC-hbr's layout, third: the
# reorder depth), and the SDP with its mpeg4-generic medium.
aac = os.path.join(work, "seed-aac.m4a")
ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "1", "-ac", "2", "-c:a", "aac", aac)
for flags, url_args in [("aac", "pkt_size=1472"), ("aac-fragments", "pkt_size=200")]:
    sdp = os.path.join(work, f"{flags}.sdp")
    data = rtp_datagrams("-i", aac, "-c", "copy", "-f", "rtp", "-sdp_file", sdp, url_args=url_args)
    put("FuzzRTP", flags, bytes([0x80, 0x00, 0x10]) + data)
    put("FuzzSDP", flags, open(sdp, "rb").read())
# LATM (RFC 6416) as ffmpeg's -rtpflags latm sends it: the AAC path's layout byte 0x60 picks it.
sdp = os.path.join(work, "latm.sdp")
data = rtp_datagrams("-i", aac, "-c", "copy", "-rtpflags", "latm", "-f", "rtp", "-sdp_file", sdp, url_args="pkt_size=200")
put("FuzzRTP", "latm", bytes([0x80, 0x60, 0x10]) + data)
put("FuzzSDP", "latm", open(sdp, "rb").read())
put("FuzzSDP", "camera", b"v=0\r\no=- 1 1 IN IP4 192.168.1.10\r\ns=Session\r\nt=0 0\r\na=control:*\r\nm=video 0 RTP/AVP 97\r\n"
    b"b=AS:5000\r\na=rtpmap:97 H264/90000\r\na=fmtp:97 profile-level-id=420029; packetization-mode=1; sprop-parameter-sets=Z0IAKeKQFAe2AtwEBAaQeJEV,aM48gA==\r\n"
    b"a=control:trackID=1\r\n")

# An RTSP conversation as ffmpeg (client) and a server speak it, with interleaved frames.
put("FuzzRTSP", "play-tcp", bytes([0x07]) + (b"OPTIONS rtsp://127.0.0.1:8554/live RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: Lavf59.27.100\r\n\r\n"
    b"RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n"
    b"DESCRIBE rtsp://127.0.0.1:8554/live RTSP/1.0\r\nAccept: application/sdp\r\nCSeq: 2\r\n\r\n"
    b"RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Length: 21\r\n\r\nv=0\r\ns=x\r\nt=0 0\r\nm=\r\n"
    b"SETUP rtsp://127.0.0.1:8554/live/trackID=0 RTSP/1.0\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nCSeq: 3\r\n\r\n"
    b"RTSP/1.0 200 OK\r\nCSeq: 3\r\nSession: 1234;timeout=60\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1;ssrc=DEADBEEF\r\n\r\n"
    b"$\x00\x00\x0c\x80\x60\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01"))

# Two media of one session (video and AAC), each set up by its control, played, paused, torn down.
put("FuzzRTSP", "two-media", bytes([0x07]) + (b"DESCRIBE rtsp://127.0.0.1:8554/av RTSP/1.0\r\nCSeq: 1\r\n\r\n"
    b"SETUP rtsp://127.0.0.1:8554/av/trackID=0 RTSP/1.0\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nCSeq: 2\r\n\r\n"
    b"SETUP rtsp://127.0.0.1:8554/av/trackID=1 RTSP/1.0\r\nTransport: RTP/AVP;unicast;client_port=5002-5003\r\nSession: 1\r\nCSeq: 3\r\n\r\n"
    b"SETUP rtsp://127.0.0.1:8554/av RTSP/1.0\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nCSeq: 4\r\n\r\n"
    b"PLAY rtsp://127.0.0.1:8554/av/ RTSP/1.0\r\nSession: 1\r\nRange: npt=0-\r\nCSeq: 5\r\n\r\n"
    b"PAUSE rtsp://127.0.0.1:8554/av/ RTSP/1.0\r\nSession: 1\r\nCSeq: 6\r\n\r\n"
    b"TEARDOWN rtsp://127.0.0.1:8554/av/ RTSP/1.0\r\nSession: 1\r\nCSeq: 7\r\n\r\n"))


# Audio: ADTS and LOAS streams ffmpeg makes (48 kHz stereo, 44.1 kHz mono, HE-AAC is not in
# ffmpeg's encoder), an AudioSpecificConfig and esds of each kind, behind the selector byte.
for rate, channels in [(48000, 2), (44100, 1)]:
    adts = os.path.join(work, f"a{rate}.aac")
    ffmpeg("-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={rate}", "-ac", str(channels), "-t", "0.5", "-c:a", "aac", "-f", "adts", adts)
    data = open(adts, "rb").read()
    put("FuzzAudio", f"adts-{rate}", bytes([0x00, 0x02]) + data)
    put("FuzzAudio", f"adts-reader-{rate}", bytes([0x04, 0x03]) + data)
    latm = os.path.join(work, f"a{rate}.latm")
    ffmpeg("-i", adts, "-c", "copy", "-f", "latm", latm)
    put("FuzzAudio", f"loas-{rate}", bytes([0x01, 0x02]) + open(latm, "rb").read())
for name, config in [("lc", "1190"), ("lc-sync", "119056e500"), ("he", "2b920800"), ("mono44", "1208")]:
    put("FuzzAudio", "asc-" + name, bytes([0x02, 0x00]) + bytes.fromhex(config))
put("FuzzAudio", "esds", bytes([0x03, 0x00]) + bytes.fromhex("0380808025000200048080801740150000000001f4000001f3700580808005119056e500068080800102"))

for t in targets:
    print(f"{t}: {len(os.listdir(os.path.join(out, t)))} seeds")
