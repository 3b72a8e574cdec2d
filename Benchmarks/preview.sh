#!/usr/bin/env bash
# Issue #18's display figures, `h264kit preview` (release) with headless Chromium on loopback:
#   - time to first frame: from starting `preview` on a local file to the URL printed (the
#     server up), plus the page's own time from its navigation to the first frame drawn (the
#     report's firstFrameMs: page, script, WebSocket, configuration, first decode), in a browser
#     already running (a new tab through DevTools' HTTP endpoint), and in one started for it.
#   - live added latency from an RTP source: `h264kit stream 1080p30 rtp://127.0.0.1:P` (paced)
#     into `h264kit preview rtp://@:P`; the page's liveLatencyMs, from a sample's arrival at the
#     server to its frame drawn (p50/p95/max).
#   - server CPU per stream at 1080p30: the preview process's CPU seconds (/proc/PID/stat) per
#     second of a 1080p30 file played to one page.
#   - a 10-minute 1080p30 file played at 1x: the server's RSS and the page's renderer RSS sampled
#     every 30 s (flat; the server within 64 MB), and the page's JS heap at the end.
# No tool does what preview does (a browser as the display of a Swift process): these figures
# stand alone. Usage: Benchmarks/preview.sh [WORKDIR] [--skip-long | --long-only]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
skipLong=false longOnly=false
[ "${2:-}" = "--skip-long" ] && skipLong=true
[ "${2:-}" = "--long-only" ] && longOnly=true
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
live="$work/1080p-live-300.mp4"
long="$work/1080p-live-1200.mp4"
tenMinutes="$work/1080p-10min.mp4"
for pair in "300 $live" "1200 $long"; do
    set -- $pair
    [ -f "$2" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=6:allf=t" -frames:v "$1" \
        -c:v libx264 -preset veryfast -tune zerolatency -b:v 8M -maxrate 8M -bufsize 4M -g 60 -pix_fmt yuv420p "$2"
done
[ -f "$tenMinutes" ] || ffmpeg -v error -stream_loop 14 -i "$long" -c copy "$tenMinutes"   # 15 x 40 s

browser() {   # URL -> starts headless Chromium on it; its PID in $browserPID
    rm -rf "$work/chromium-profile"
    chromium --headless=new --no-sandbox --no-first-run --disable-extensions --user-data-dir="$work/chromium-profile" \
        --autoplay-policy=no-user-gesture-required "$1" >/dev/null 2>&1 &
    browserPID=$!
}
stopBrowser() { kill "$browserPID" 2>/dev/null || true; wait "$browserPID" 2>/dev/null || true; }
waitForURL() {   # FILE -> the URL once printed
    for _ in $(seq 400); do grep -qm1 '^http://' "$1" 2>/dev/null && break; sleep 0.005; done
    grep -m1 '^http://' "$1"
}
cpuSeconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
rssMB() { awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "-"; }
rendererRSS() {   # the renderer processes of our profile, MB
    local total=0
    for pid in $(pgrep -f -- "--type=renderer.*chromium-profile" || true); do
        total=$(( total + $(awk '/VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0) ))
    done
    awk -v k="$total" 'BEGIN { printf "%.1f", k / 1024 }'
}
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

if ! $longOnly; then
echo "== time to first frame (a local 1080p file; 5 runs; the browser already running, as a user's is)"
# Chromium runs with a blank page; each run starts preview and opens its URL in a new tab
# through the DevTools HTTP endpoint (PUT /json/new?URL), as clicking the printed link would.
debugPort=$(( RANDOM % 10000 + 40000 ))
rm -rf "$work/chromium-profile"
chromium --headless=new --no-sandbox --no-first-run --disable-extensions --user-data-dir="$work/chromium-profile" \
    --autoplay-policy=no-user-gesture-required --remote-debugging-port="$debugPort" about:blank >/dev/null 2>&1 &
browserPID=$!
for _ in $(seq 200); do curl -s "http://127.0.0.1:$debugPort/json/version" >/dev/null && break; sleep 0.05; done
sleep 1
for run in 1 2 3 4 5; do
    start=$(date +%s%N)
    "$bin" preview "$live" --port 0 --exit-after-playback --report "$work/first.json" > "$work/url.txt" 2>/dev/null & preview=$!
    url="$(waitForURL "$work/url.txt")"
    listening=$(( ($(date +%s%N) - start) / 1000000 ))
    opened=$(date +%s%N)
    curl -s -X PUT "http://127.0.0.1:$debugPort/json/new?$url" >/dev/null
    wait "$preview" || true
    first=$(json "$work/first.json" 'round(r["firstFrameMs"])')
    echo "run $run: server up ${listening} ms; tab opened -> first frame ${first} ms (page's own clock); total $((listening + first)) ms (goal 300); $(json "$work/first.json" 'r["startupMs"]')"
done
stopBrowser

echo "== the same in a browser started for the page (headless, a fresh profile: its start-up before the page's script runs counts)"
for run in 1 2 3; do
    start=$(date +%s%N)
    "$bin" preview "$live" --port 0 --exit-after-playback --report "$work/first.json" > "$work/url.txt" 2>/dev/null & preview=$!
    url="$(waitForURL "$work/url.txt")"
    listening=$(( ($(date +%s%N) - start) / 1000000 ))
    browser "$url"
    wait "$preview" || true
    stopBrowser
    first=$(json "$work/first.json" 'round(r["firstFrameMs"])')
    echo "run $run: server up ${listening} ms, page navigation -> first frame ${first} ms, total $((listening + first)) ms; $(json "$work/first.json" 'r["startupMs"]')"
done

echo "== live added latency: h264kit stream (1080p30, paced) -> RTP -> h264kit preview -> Chromium"
port=$(( (RANDOM % 10000 + 30000) & ~1 ))
"$bin" preview "rtp://@:$port" --port 0 --report "$work/live.json" > "$work/url.txt" 2>/dev/null & preview=$!
browser "$(waitForURL "$work/url.txt")"
sleep 2   # the page is up and waiting
"$bin" stream "$live" "rtp://127.0.0.1:$port" >/dev/null 2>&1
sleep 1
kill -INT "$preview"; wait "$preview" || true
stopBrowser
json "$work/live.json" '"presented %d of %d received, added latency p50 %.1f ms, p95 %.1f ms, max %.1f ms (goal p95 <= 100)" % (r["framesPresented"], r["framesReceived"], r["liveLatencyMs"]["p50"], r["liveLatencyMs"]["p95"], r["liveLatencyMs"]["max"])'

echo "== server CPU per stream: a 40-second 1080p30 file to one page"
"$bin" preview "$long" --port 0 --exit-after-playback --report "$work/cpu.json" > "$work/url.txt" 2>/dev/null & preview=$!
browser "$(waitForURL "$work/url.txt")"
sleep 1
before=$(cpuSeconds "$preview"); t0=$(date +%s%N)
sleep 30
after=$(cpuSeconds "$preview"); t1=$(date +%s%N)
wait "$preview" || true
stopBrowser
awk -v c="$(awk -v a="$after" -v b="$before" 'BEGIN { print a - b }')" -v w="$(( (t1 - t0) / 1000000 ))" 'BEGIN { printf "server CPU: %.2f s in %.1f s of playing = %.1f%% of a core per 1080p30 stream\n", c, w / 1000, 100 * c / (w / 1000) }'
json "$work/cpu.json" '"page: presented %d, dropped %d, lateness p95 %.1f ms, decoded at %.0f fps" % (r["framesPresented"], r["framesDropped"], r["latenessMs"]["p95"], r.get("decodeFramesPerSecond", 0))'

fi
$skipLong && exit 0
echo "== a 10-minute 1080p30 file at 1x: memory every 30 s (server RSS, page renderer RSS)"
"$bin" preview "$tenMinutes" --port 0 --exit-after-playback --report "$work/long.json" > "$work/url.txt" 2>/dev/null & preview=$!
browser "$(waitForURL "$work/url.txt")"
while kill -0 "$preview" 2>/dev/null; do
    echo "$(date +%T) server $(rssMB "$preview") MB, page renderer $(rendererRSS) MB"
    sleep 30
done
wait "$preview" || true
stopBrowser
echo "server peak RSS: see the samples above (goal <= 64 MB, flat)"
json "$work/long.json" '"page: presented %d of %d, dropped %d, lateness p95 %.1f ms, JS heap at the end %.1f MB" % (r["framesPresented"], r["framesReceived"], r["framesDropped"], r["latenessMs"]["p95"], r.get("heapBytes", 0) / 1e6)'
