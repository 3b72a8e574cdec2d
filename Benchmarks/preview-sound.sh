#!/usr/bin/env bash
# Issue #43's preview figure: a minute of a file with sound played to one headless Chromium page
# by `h264kit preview` (release); the page's own A/V skew (at every frame drawn, the media
# time heard, output latency included, less the frame's, in real time), and what it decoded.
# Pause, seek and rate changes are driven in Tests/H264DisplayTests/PreviewSoundTests.swift.
# No other tool plays a Swift process's samples in a browser: the figures stand alone.
# Usage: Benchmarks/preview-sound.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
file="$work/720p-av-60s.mp4"
[ -f "$file" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 60 \
    -c:v libx264 -preset veryfast -b:v 3M -bf 2 -c:a aac -b:a 128k -ac 2 -shortest "$file"
packets=$(ffprobe -v error -select_streams a:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$file")
out="$work/preview-sound"
rm -rf "$out"; mkdir -p "$out"
"$bin" preview "$file" --port 0 --exit-after-playback --report "$out/report.json" > "$out/url.txt" 2> "$out/stderr.txt" &
server=$!
for _ in $(seq 400); do grep -qm1 '^http://' "$out/url.txt" 2>/dev/null && break; sleep 0.01; done
chromium --headless=new --no-sandbox --no-first-run --disable-extensions --user-data-dir="$out/profile" \
    --autoplay-policy=no-user-gesture-required "$(grep -m1 '^http://' "$out/url.txt")" >/dev/null 2>&1 &
browser=$!
wait "$server"
kill "$browser" 2>/dev/null || true; wait "$browser" 2>/dev/null || true
python3 - "$out/report.json" "$packets" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["sound"]
print(f"  picture: {r['framesPresented']} presented, {r['framesDropped']} dropped, late p95 {r['latenessMs']['p95']} ms")
print(f"  sound: {s['codec']} {s['sampleRate']} Hz x{s['channels']}, {s['received']} of {sys.argv[2]} frames received, {s['decoded']} decoded, "
      f"{s['skipped']} skipped, {s['rechained']} rechained, {s['decodeErrors']} errors")
k = s["skewMs"]
print(f"  A/V skew over {s['skewSamples']} frames: p50 {k['p50']} / p95 {k['p95']} / max {k['max']:.1f} ms, mean {s['meanSkewMs']:+.2f} ms (bar: p95 <= 20)")
PY
