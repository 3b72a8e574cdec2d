#!/usr/bin/env bash
# Speed of `h264kit decode` beside ffmpeg in one hyperfine run, same decoder thread count, on
# 1080p x264 streams (ultrafast: CAVLC, no B-frames; medium: CABAC, B-frames):
#   1. decode only: `decode -o /dev/null` vs `ffmpeg -threads N -i IN -f null -` (target >= 1.0x);
#   2. raw output:  `decode -o out.yuv`  vs `ffmpeg -threads N -i IN -f rawvideo out.yuv` (target >= 1.0x);
#   3. peak RSS (GNU time).
# Usage: Benchmarks/decode.sh [WORKDIR] [THREADS]   (THREADS default: the core count)
source "$(dirname "$0")/data.sh" "${1:-.build/bench-data}"
threads="${2:-$(nproc)}"
for preset in ultrafast medium; do
    stream="$work/1080p-$preset-300.264"
    if [ ! -f "$stream" ]; then
        ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 300 -pix_fmt yuv420p -f yuv4mpegpipe - |
            x264 --quiet --demuxer y4m --preset "$preset" --crf 20 -o "$stream" -
    fi
done

out="$work/decode-out"
mkdir -p "$out"
for preset in ultrafast medium; do
    stream="$work/1080p-$preset-300.264"
    echo "== $preset: $(du -h "$stream" | cut -f1), 300 frames 1080p, $threads threads =="
    hyperfine --warmup 1 --runs 5 --export-json "$work/decode-$preset.json" \
        --prepare "rm -f $out/*.yuv" \
        "$bin decode $stream -o /dev/null --threads $threads 2>/dev/null" \
        "ffmpeg -v error -threads $threads -i $stream -f null -" \
        "$bin decode $stream -o $out/ours.yuv --threads $threads 2>/dev/null" \
        "ffmpeg -v error -y -threads $threads -i $stream -f rawvideo $out/ffmpeg.yuv" | grep -E "Time|Benchmark"
    python3 - "$work/decode-$preset.json" <<'PY'
import json, sys
r = [x["mean"] for x in json.load(open(sys.argv[1]))["results"]]
print(f"decode only: ours {r[0]:.3f} s ({300 / r[0]:.0f} fps), ffmpeg {r[1]:.3f} s ({300 / r[1]:.0f} fps): {r[1] / r[0]:.2f}x ffmpeg's speed (target >= 1.0)")
print(f"raw output:  ours {r[2]:.3f} s, ffmpeg {r[3]:.3f} s: {r[3] / r[2]:.2f}x ffmpeg's speed (target >= 1.0)")
PY
    /usr/bin/time -f "%M" -o "$out/rss" "$bin" decode "$stream" -o /dev/null --threads "$threads" 2>/dev/null
    ours=$(tail -1 "$out/rss")
    /usr/bin/time -f "%M" -o "$out/rss" ffmpeg -v error -threads "$threads" -i "$stream" -f null -
    echo "peak RSS: ours $((ours / 1024)) MB, ffmpeg $(($(tail -1 "$out/rss") / 1024)) MB"
done
rm -rf "$out"
