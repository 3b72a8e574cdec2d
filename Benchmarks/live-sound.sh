#!/usr/bin/env bash
# A minute of a looped live origin with sound (issue #43): `h264kit stream SRC http://… --loop
# [--low-latency]` of a 10-s file (320x240 at 30 fps, 48 kHz stereo AAC, made by FFmpeg with
# -shortest: its last AAC frame cut by the edit list), pulled by FFmpeg (`-c copy`, framemd5)
# and by GStreamer (uridecodebin3, both tracks through `identity check-imperfect-timestamp`)
# for SECONDS. Prints the AAC frames FFmpeg got, the steps between them (1024 samples each:
# continuous across the loop's seams), the pictures, and the imperfect timestamps GStreamer's
# identity elements reported, by size (1 ns: GStreamer's own rounding of 1024/48000 s; at a
# seam the picture before waits for the sound, a longer last frame in the segment, which
# GStreamer's decoder gives its nominal duration).
# Usage: Benchmarks/live-sound.sh [WORKDIR] [SECONDS] [--low-latency]   (default .build/bench-data, 60)
source "$(dirname "$0")/data.sh" "$@"
seconds="${2:-60}"
mode="${3:-}"
src="$work/live-sound-av.mp4"
[ -f "$src" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 -t 10 -ac 2 \
    -c:v libx264 -preset veryfast -g 30 -pix_fmt yuv420p -c:a aac -shortest "$src"
port=$((28000 + RANDOM % 1000))
url="http://127.0.0.1:$port/live/index.m3u8"
"$bin" stream "$src" "$url" --loop $mode > "$work/live-sound-origin.log" 2>&1 &
origin=$!
trap 'kill -INT $origin 2>/dev/null; wait $origin 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf "$url" > /dev/null && break; sleep 0.2; done
sleep 6  # (GStreamer's hlsdemux2 does not preroll a low-latency playlist of one segment)
timeout $((seconds + 30)) ffmpeg -v error -live_start_index 0 -i "$url" -t "$seconds" -map 0:v:0 -map 0:a:0 -c copy -f framemd5 -y "$work/live-sound.md5" &
ff=$!
timeout "$seconds" gst-launch-1.0 -m uridecodebin3 uri="$url" name=d \
    d. ! queue ! audioconvert ! identity check-imperfect-timestamp=true check-imperfect-offset=true ! fakesink sync=true \
    d. ! queue ! videoconvert ! identity check-imperfect-timestamp=true ! fakesink sync=true > "$work/live-sound-gst.log" 2>&1 || true
wait $ff || true
python3 - "$work/live-sound.md5" "$work/live-sound-gst.log" <<'PY'
import sys, collections
tb, frames = {}, collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("#tb "):
        s, f = line[4:].split(":"); n, d = f.strip().split("/"); tb[int(s)] = int(n) / int(d); continue
    if line.startswith("#"): continue
    p = [x.strip() for x in line.split(",")]
    frames[int(p[0])].append(int(p[2]))
sound = sorted(frames[1]); steps = collections.Counter(round((b - a) * tb[1] * 48000) for a, b in zip(sound, sound[1:]))
print(f"  FFmpeg: {len(sound)} AAC frames, steps in samples {dict(steps)}; {len(frames[0])} pictures")
import re
gst = open(sys.argv[2], errors="replace").read()
reports = collections.Counter()
for element, kind, delta in re.findall(r'from element "(identity\d)" \(element\): (imperfect-[a-z]+), delta=\(gint64\)(-?\d+)', gst):
    reports[(element, kind, "within 1 us (rounding)" if abs(int(delta)) <= 1000 else f"{int(delta) / 1e6:.3f} ms")] += 1
print("  GStreamer (identity0 the sound, identity1 the picture, after decoding): "
      + (", ".join(f"{e} {k} {d}: {n}" for (e, k, d), n in sorted(reports.items())) or "no imperfect timestamp or offset"))
PY
