#!/usr/bin/env bash
# The Low-Latency HLS origin over HTTPS (issue #44), release build, the origin on one core
# (taskset -c 0) and the clients on the other: a 640x360 30-fps picture with 48 kHz stereo AAC,
# an IDR picture every 2 s, looped; `stream SRC https://127.0.0.1:P/live/index.m3u8 --cert
# --key --loop --low-latency --segment-duration 2 --part-duration 0.5` (a video and an audio
# rendition). A self-signed certificate (EC P-256) made here.
#   1. 300 followers over HTTP/2 (scripts/llhls-followers.py --http2): each ONE connection
#      (TLS, ALPN h2) holding a blocking reload and fetching the part on both renditions at once;
#      origin latency (the reload's answer less the part's end by the playlist's PDT; target
#      p95 <= 250 ms), errors, the worst follower's share of parts, origin CPU and peak RSS;
#   2. the same 300 over HTTP/1.1 with TLS, for comparison: two connections each (600);
#   3. h2load (nghttp2-client): 300 clients each opening ONE connection and holding a blocking
#      reload for the same coming part on both renditions (-m 2): 600 held requests answered
#      when the part is published, none failing; h2load's own request-time figures.
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
    report=$(taskset -c 1 python3 "$followers" "$base/index-video.m3u8" "$base/index-audio.m3u8" --followers "$count" --seconds 15 ${2:-})
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

echo "== $count LL-HLS followers over HTTPS, origin on one core (release) =="
start_origin
run_followers "HTTP/2 (one connection each)" --http2
stop_origin
start_origin
run_followers "HTTP/1.1 over TLS (a connection a rendition)"
stop_origin

echo "== h2load: $count clients, one connection each, a blocking reload on both renditions (-m 2) =="
start_origin
next=$(curl -sk "$base/index-video.m3u8" | python3 -c '
import sys
msn, part = 0, 0
for line in sys.stdin:
    if line.startswith("#EXT-X-MEDIA-SEQUENCE:"): msn = int(line.split(":")[1])
    elif line.startswith("#EXT-X-PART:"): part += 1
    elif line.strip() and not line.startswith("#"): msn += 1; part = 0
print(msn, part + 1)')
read -r msn part <<<"$next"
taskset -c 1 h2load -c "$count" -m 2 -n $((2 * count)) "$base/index-video.m3u8?_HLS_msn=$msn&_HLS_part=$part" \
    "$base/index-audio.m3u8?_HLS_msn=$msn&_HLS_part=$part" 2>&1 | grep -E "^(finished|requests|status codes|traffic|time for request|time for connect|req/s)" | sed 's/^/  /'
echo "  origin peak RSS $(rss) MB"
stop_origin
