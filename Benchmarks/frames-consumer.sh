#!/usr/bin/env bash
# Peak RSS of a 1080p, 300-frame decode consumed through DecompressionSession.frames by a
# consumer at full speed and by one 10x slower than the decoder (target: slow <= 1.2x fast).
# Usage: Benchmarks/frames-consumer.sh [WORKDIR]
source "$(dirname "$0")/data.sh" "${1:-.build/bench-data}"
stream="$work/1080p-medium-300.264"
if [ ! -f "$stream" ]; then
    ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 300 -pix_fmt yuv420p -f yuv4mpegpipe - |
        x264 --quiet --demuxer y4m --preset medium --crf 20 -o "$stream" -
fi
(cd Benchmarks && swift build -c release --product FramesConsumer >/dev/null)
consumer="$PWD/Benchmarks/.build/release/FramesConsumer"
/usr/bin/time -f "%e %M" -o "$work/fast.time" "$consumer" "$stream" 0
read -r seconds fast < "$work/fast.time"
# 10x slower than the decoder: ten times its time per frame, as a sleep per frame.
delay=$(python3 -c "print(max(1, round($seconds / 300 * 1000 * 10)))")
/usr/bin/time -f "%e %M" -o "$work/slow.time" "$consumer" "$stream" "$delay"
read -r slowSeconds slow < "$work/slow.time"
python3 - "$seconds" "$fast" "$slowSeconds" "$slow" "$delay" <<'PY'
import sys
s, fast, ss, slow, delay = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
print(f"full-speed consumer: {s:.2f} s, peak RSS {fast / 1024:.0f} MB")
print(f"consumer {delay} ms per frame (10x the decoder): {ss:.2f} s, peak RSS {slow / 1024:.0f} MB")
print(f"slow / fast peak RSS: {slow / fast:.2f}x (target <= 1.2)")
PY
