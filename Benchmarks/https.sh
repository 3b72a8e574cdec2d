#!/usr/bin/env bash
# The Low-Latency HLS origin over HTTPS (issue #44), release build, the origin on one core
# (taskset -c 0) and the clients on the other: a 640x360 30-fps picture with 48 kHz stereo AAC,
# an IDR picture every 2 s, looped; `stream SRC https://127.0.0.1:P/live/index.m3u8 --cert
# --key --loop --low-latency --segment-duration 2 --part-duration 0.5` (a video and an audio
# rendition). A self-signed certificate (EC P-256) made here.
#   1. h2load (nghttp2-client), HTTP/2: 300 clients, each ONE connection (TLS, ALPN h2) holding
#      a blocking reload for the coming part on both renditions at once (-m 2), three bursts:
#      failures, and origin latency (each answer's end less the part's end by the playlist's
#      PDT, as scripts/llhls-followers.py measures it; target p95 <= 250 ms), peak RSS;
#   2. the same over HTTP/1.1 with TLS, for comparison: 600 clients, a connection each;
#   3. 100 Python followers (llhls-followers.py --http2) following the live edge for 15 s, both
#      renditions on one h2 connection each: errors, worst share, latency (the Python client
#      itself is the limit past about 100 over TLS on one core).
# FFmpeg, GStreamer, Shaka Packager and Bento4 have no low-latency HLS origin to run beside it.
# Usage: Benchmarks/https.sh [WORKDIR] [FOLLOWERS]   (default .build/bench-data, 300)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-.build/bench-data}"
count="${2:-300}"
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
followers="$PWD/scripts/llhls-followers.py"
source="$work/https-640x360-aac.mp4"
[ -f "$source" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 -t 10 \
    -c:v libx264 -preset veryfast -x264-params keyint=60:min-keyint=60:scenecut=0 -bf 2 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "$source"
out="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
ulimit -n 65536 2>/dev/null || true
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$out/key.pem" -out "$out/cert.pem" 2>/dev/null

start_origin() {
    port=$((20000 + RANDOM % 20000))
    taskset -c 0 "$bin" stream "$source" "https://127.0.0.1:$port/live/index.m3u8" --cert "$out/cert.pem" --key "$out/key.pem" \
        --loop --low-latency --segment-duration 2 --part-duration 0.5 2>"$out/origin.log" &
    origin=$!
    sleep 6
    base="https://127.0.0.1:$port/live"
}
stop_origin() { kill -INT "$origin"; wait "$origin" 2>/dev/null || true; }
cpu() { awk '{print $14 + $15}' "/proc/$origin/stat"; }
rss() { awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$origin/status"; }

run_followers() {  # LABEL [--http2]
    local before after t0 t1 report
    before=$(cpu); t0=$(date +%s.%N)
    report=$(taskset -c 1 python3 "$followers" "$base/index-video.m3u8" "$base/index-audio.m3u8" --followers "${count}" --seconds 15 ${2:-})
    after=$(cpu); t1=$(date +%s.%N)
    python3 - "$1" "$report" "$before" "$after" "$t0" "$t1" "$(getconf CLK_TCK)" "$(rss)" <<'PY'
import json, sys
label, r = sys.argv[1], json.loads(sys.argv[2])
before, after, t0, t1, tck, rss = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]), sys.argv[8]
l = r["latency_ms"]
print(f"  {label}: {r['followers']} followers x 2 renditions, {r['seconds']:.0f} s: errors {r['errors'] or 'none'}; worst follower {r['parts_fetched_min']} "
      f"of {r['parts_published']} parts ({100 * r['worst_share']:.0f}%); origin latency p50 {l['p50']} ms, p95 {l['p95']} ms, p99 {l['p99']} ms, "
      f"max {l['max']} ms; {r['requests']} requests; origin CPU {(after - before) / tck / (t1 - t0):.2f} cores, peak RSS {rss} MB")
PY
}

# One held-reload burst a round, three rounds: h2load's clients all ask for the part after the
# last listed, on both renditions; each answer's origin latency is its end (h2load's log:
# start + duration) less that part's end by the playlist's PDT, as the followers measure it, or
# less the request's own start when the client (connecting 300 TLS connections from one core)
# asked only after the part was out.
burst() {  # LABEL H2LOAD-OPTIONS...
    local label="$1"; shift
    : > "$out/latencies.txt"
    for round in 1 2 3; do
        read -r msn part <<<"$(curl -sk "$base/index-video.m3u8" | python3 -c '
import sys
msn, part = 0, 0
for line in sys.stdin:
    if line.startswith("#EXT-X-MEDIA-SEQUENCE:"): msn = int(line.split(":")[1])
    elif line.startswith("#EXT-X-PART:"): part += 1
    elif line.strip() and not line.startswith("#"): msn += 1; part = 0
print(msn, part)')"
        rm -f "$out/h2load.log"  # (h2load appends to its log)
        taskset -c 1 h2load "$@" --log-file="$out/h2load.log" "$base/index-video.m3u8?_HLS_msn=$msn&_HLS_part=$part" \
            "$base/index-audio.m3u8?_HLS_msn=$msn&_HLS_part=$part" > "$out/h2load.txt" 2>&1 || true
        curl -sk "$base/index-video.m3u8" > "$out/playlist.m3u8"
        python3 - "$followers" "$out/h2load.log" "$out/playlist.m3u8" "$msn" "$part" "$out/h2load.txt" >> "$out/latencies.txt" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("followers", sys.argv[1]); followers = importlib.util.module_from_spec(spec); spec.loader.exec_module(followers)
playlist = followers.Playlist(open(sys.argv[3]).read())
msn, part = int(sys.argv[4]), int(sys.argv[5])
entry = playlist.parts.get((msn, part)) or playlist.parts.get((msn + 1, 0))  # (past a segment's last part: the next one's first)
end = entry[1]
for line in open(sys.argv[2]):
    start, status, duration = line.split("\t")[:3]
    # (A request that arrived after its part was published is timed from its own start.)
    print("fail" if int(status) != 200 else f"{(int(start) + int(duration)) / 1e6 - max(end, int(start) / 1e6):.4f}")
PY
    done
    python3 - "$label" "$out/latencies.txt" "$(rss)" <<'PY'
import sys, statistics
values = open(sys.argv[2]).read().split()
fails = values.count("fail"); lat = sorted(float(v) * 1000 for v in values if v != "fail")
q = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))] if lat else float("nan")
print(f"  {sys.argv[1]}: {len(values)} held reloads in 3 bursts, {fails} failed; origin latency p50 {q(50):.0f} ms, p95 {q(95):.0f} ms, max {lat[-1] if lat else float('nan'):.0f} ms; origin peak RSS {sys.argv[3]} MB")
PY
}

echo "== LL-HLS over HTTPS, origin on one core (release), clients on the other =="
start_origin
burst "h2load, HTTP/2: $count clients, one connection each, a held reload on both renditions" -c "$count" -m 2 -n $((2 * count))
stop_origin
start_origin
burst "h2load, HTTP/1.1 over TLS: $((2 * count)) clients, one held reload each" --h1 -c $((2 * count)) -m 1 -n $((2 * count))
stop_origin
echo "== 100 Python followers over HTTP/2 following the live edge for 15 s (both renditions on one connection each) =="
start_origin
count=100 run_followers "HTTP/2 followers" --http2
stop_origin
