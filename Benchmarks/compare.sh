#!/usr/bin/env bash
# Before and after: this tree's h264kit beside another build of it (BASELINE, say the last
# release) and the real tools, in one hyperfine run per figure, on the data.sh streams:
#   mux (vs cp, ffmpeg -c copy), inspect (vs cat), decode (vs ffmpeg, same threads), encode
#   (vs the x264 CLI, CRF 23, same threads). Prints each command's median and the ratios.
# Usage: Benchmarks/compare.sh BASELINE_BINARY [WORKDIR]
set -euo pipefail
baseline="$(realpath "$1")"
shift
source "$(dirname "$0")/data.sh" "$@"
threads=$(nproc)
out="$work/compare-out"
mkdir -p "$out"
decodeStream="$work/1080p-medium-300.264"
[ -f "$decodeStream" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 300 -pix_fmt yuv420p -f yuv4mpegpipe - |
    x264 --quiet --demuxer y4m --preset medium --crf 20 -o "$decodeStream" -
y4m="$work/1080p-120.y4m"
[ -f "$y4m" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 120 -pix_fmt yuv420p "$y4m"

report() {  # json, then the index of the reference command
    python3 - "$1" "$2" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
ref = results[int(sys.argv[2])]["median"]
for r in results:
    print(f"  {r['median']:8.3f} s  {r['median'] / ref:5.2f}x  {r['command'][:110]}")
PY
}

echo "== mux, $(du -h "$big" | cut -f1) of 1080p (ratios to cp) =="
cat "$big" > /dev/null
hyperfine -N --warmup 1 --runs 7 --export-json "$work/compare-mux.json" --prepare "sync" \
    "cp $big $out/copy.264" "$bin mux $big $out/new.mp4" "$baseline mux $big $out/old.mp4" \
    "ffmpeg -v error -y -f h264 -i $big -c copy $out/ffmpeg.mp4" >/dev/null
report "$work/compare-mux.json" 0
cmp -s "$out/new.mp4" "$out/old.mp4" && echo "  new and old mux outputs identical" || echo "  MUX OUTPUTS DIFFER"
rm -f "$out"/*

echo "== inspect (ratios to cat) =="
hyperfine -N --warmup 2 --runs 10 --export-json "$work/compare-inspect.json" \
    "cat $big" "$bin inspect $big" "$baseline inspect $big" >/dev/null
report "$work/compare-inspect.json" 0

echo "== decode, 300 frames 1080p, $threads threads (ratios to ffmpeg) =="
hyperfine -N --warmup 1 --runs 7 --export-json "$work/compare-decode.json" \
    "ffmpeg -v error -threads $threads -i $decodeStream -f null -" \
    "$bin decode $decodeStream -o /dev/null --threads $threads" "$baseline decode $decodeStream -o /dev/null --threads $threads" >/dev/null
report "$work/compare-decode.json" 0

for preset in ultrafast veryfast; do
    echo "== encode $preset, 120 frames 1080p, $threads threads (ratios to the x264 CLI) =="
    hyperfine -N --warmup 1 --runs 5 --export-json "$work/compare-encode-$preset.json" \
        "x264 --quiet --preset $preset --crf 23 --threads $threads -o $out/x264.264 $y4m" \
        "$bin encode $y4m -o $out/new.264 --preset $preset --crf 23 --threads $threads" \
        "$baseline encode $y4m -o $out/old.264 --preset $preset --crf 23 --threads $threads" >/dev/null
    report "$work/compare-encode-$preset.json" 0
    cmp -s "$out/new.264" "$out/x264.264" && echo "  same bytes as the x264 CLI" || echo "  BYTES DIFFER FROM x264"
done
rm -rf "$out"
