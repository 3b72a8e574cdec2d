#!/usr/bin/env bash
# Low-Latency HLS origin figures (release build), on the issue's source: 640x360 at 30 fps, an
# IDR picture every 2 s, looped; `stream SRC http://127.0.0.1:P/live/index.m3u8 --loop
# --low-latency --segment-duration 2 --part-duration 0.5`. Followers: scripts/llhls-followers.py
# (a blocking reload for the next part, then the part; origin latency = the reload's answer
# arriving less the part's end by the playlist's PDT).
#   1. 1 follower, 30 s: origin latency (target p95 <= 250 ms);
#   2. 300 followers, 15 s, directly: errors, worst follower's share of parts (>= 80%), latency
#      p95 (<= 500 ms), origin peak RSS (<= 128 MB) and CPU (<= one core);
#   3. 1,000 followers, 15 s, directly: the same figures (reported, no target);
#   4. 300 followers through nginx (scripts/nginx/llhls-cache.conf): the same, and origin
#      requests per part (<= 3);
#   5. with HOUR seconds given (3600 for the issue's hour): 20 followers for that long, the
#      latency and the origin's RSS every minute (target: flat).
# FFmpeg, GStreamer, Shaka Packager and Bento4 have no low-latency HLS origin to run beside it.
# Usage: Benchmarks/llhls.sh [WORKDIR [HOUR]]   (HOUR_ONLY=1: only step 5; NGINX_ONLY=1: step 4 only)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-.build/bench-data}"
hour="${2:-0}"
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
followers="$PWD/scripts/llhls-followers.py"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
source="$work/llhls-640x360.mp4"
[ -f "$source" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=640x360:rate=30 -t 10 -c:v libx264 -preset veryfast \
    -x264-params keyint=60:min-keyint=60:scenecut=0 -bf 2 -pix_fmt yuv420p "$source"
out="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
ulimit -n 65536 2>/dev/null || true

start_origin() {
    port=$((20000 + RANDOM % 20000))
    "$bin" stream "$source" "http://127.0.0.1:$port/live/index.m3u8" --loop --low-latency --segment-duration 2 --part-duration 0.5 -v 2>"$out/origin.log" &
    origin=$!
    sleep 4
}
stop_origin() { kill -INT "$origin"; wait "$origin" 2>/dev/null || true; tail -1 "$out/origin.log"; }
cpu() { awk '{print $14 + $15}' "/proc/$origin/stat"; }
rss() { awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$origin/status"; }
counts() { grep '^segments ' "$out/origin.log" | tail -1 | sed -E 's/.*parts ([0-9]+), requests ([0-9]+).*/\1 \2/'; }

run_followers() {  # URL COUNT SECONDS
    local before after ticks elapsed report
    before=$(cpu); local t0; t0=$(date +%s.%N)
    report=$(python3 "$followers" "$1" --followers "$2" --seconds "$3")
    after=$(cpu); local t1; t1=$(date +%s.%N)
    python3 - "$report" "$before" "$after" "$t0" "$t1" "$(getconf CLK_TCK)" "$(rss)" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
before, after, t0, t1, tck, rss = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
cores = (after - before) / tck / (t1 - t0)
l = r["latency_ms"]
print(f"  {r['followers']} followers, {r['seconds']:.0f} s: errors {r['errors'] or 'none'}; worst follower {r['parts_fetched_min']} of {r['parts_published']} parts "
      f"({100 * r['worst_share']:.0f}%); latency p50 {l['p50']} ms, p95 {l['p95']} ms, p99 {l['p99']} ms, max {l['max']} ms; "
      f"{r['requests']} requests; origin CPU {cores:.2f} cores, peak RSS {rss} MB")
PY
}

if [ "${HOUR_ONLY:-0}" != 1 ] && [ "${NGINX_ONLY:-0}" != 1 ]; then
echo "== 1. one follower, 30 s (target: origin latency p95 <= 250 ms) =="
start_origin
run_followers "http://127.0.0.1:$port/live/index-video.m3u8" 1 30
echo "== 2. 300 followers, 15 s, directly (targets: no error, >= 80% of parts, p95 <= 500 ms, RSS <= 128 MB, CPU <= 1 core) =="
run_followers "http://127.0.0.1:$port/live/index-video.m3u8" 300 15
echo "== 3. 1,000 followers, 15 s, directly (a figure) =="
run_followers "http://127.0.0.1:$port/live/index-video.m3u8" 1000 15
stop_origin
fi

if [ "${HOUR_ONLY:-0}" != 1 ]; then
echo "== 4. 300 followers through nginx, 15 s (target: <= 3 origin requests per part) =="
start_origin
edge=$((20000 + RANDOM % 20000))
mkdir -p "$out/nginx"
chmod 755 "$out" "$out/nginx"   # nginx's workers (nobody, when started as root) write its cache there
sed -e "s#@PREFIX@#$out/nginx#g" -e "s#@LISTEN@#127.0.0.1:$edge#" -e "s#@ORIGIN@#127.0.0.1:$port#" scripts/nginx/llhls-cache.conf > "$out/nginx/nginx.conf"
"$nginx" -p "$out/nginx" -c "$out/nginx/nginx.conf" -e stderr 2>"$out/nginx.log" &
proxy=$!
sleep 1
read -r parts0 requests0 < <(counts)
run_followers "http://127.0.0.1:$edge/live/index-video.m3u8" 300 15 || cat "$out/nginx/error.log" "$out/nginx.log"
sleep 1.1
read -r parts1 requests1 < <(counts)
echo "  origin: $((requests1 - requests0)) requests for $((parts1 - parts0)) parts: $(python3 -c "print(round(($requests1 - $requests0) / max(1, $parts1 - $parts0), 2))") per part"
kill -QUIT "$proxy"; wait "$proxy" 2>/dev/null || true
stop_origin
fi

if [ "$hour" -gt 0 ]; then
    echo "== 5. 20 followers for $hour s: a minute at a time (target: latency and RSS flat) =="
    start_origin
    for ((t = 0; t < hour; t += 60)); do
        printf "  %5d s:" "$t"
        run_followers "http://127.0.0.1:$port/live/index-video.m3u8" 20 60 | sed 's/^ *20 followers, 60 s://'
        echo "  origin RSS now $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$origin/status") MB"
    done
    stop_origin
fi
