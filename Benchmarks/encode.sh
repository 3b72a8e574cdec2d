#!/usr/bin/env bash
# Speed of `h264kit encode` beside the x264 CLI in one hyperfine run: same 1080p y4m, same preset,
# CRF 23 and thread count, both writing Annex-B (the outputs are compared byte for byte too).
# Target: encode frames/s >= 0.98x the x264 CLI at ultrafast and veryfast; medium reported.
# Usage: Benchmarks/encode.sh [WORKDIR] [THREADS] [FRAMES]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
threads="${2:-$(nproc)}"
frames="${3:-120}"
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
source="$work/1080p-$frames.y4m"
[ -f "$source" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v "$frames" -pix_fmt yuv420p "$source"
for preset in ultrafast veryfast medium; do
    hyperfine -N -w 1 -r 5 --export-json "$work/encode-$preset.json" \
        -n "h264kit $preset" "$bin encode $source -o $work/ours-$preset.264 --preset $preset --crf 23 --threads $threads" \
        -n "x264 $preset" "x264 --quiet --preset $preset --crf 23 --threads $threads -o $work/x264-$preset.264 $source"
    python3 - "$work/encode-$preset.json" "$frames" <<'PY'
import json, sys
runs = {r["command"]: r["mean"] for r in json.load(open(sys.argv[1]))["results"]}
frames = int(sys.argv[2])
ours, theirs = [v for k, v in runs.items() if k.startswith("h264kit")][0], [v for k, v in runs.items() if k.startswith("x264")][0]
print(f"  h264kit {frames / ours:.1f} fps, x264 {frames / theirs:.1f} fps, ratio {theirs / ours:.3f}")
PY
    cmp -s "$work/ours-$preset.264" "$work/x264-$preset.264" && echo "  outputs identical" || echo "  OUTPUTS DIFFER"
done
