#!/usr/bin/env bash
# Speed and memory of `h264kit mux`, beside the real tools in one hyperfine run:
#   1. a ~500 MB 1080p Annex-B stream: mux vs `cp` of the same file (target: within 1.3x) and
#      vs `ffmpeg -i IN -c copy OUT.mp4` (target: at least 2.5x faster);
#   2. peak RSS (GNU time) at ~100 MB and ~1 GB of input (target: <= 32 MB and flat).
# Usage: Benchmarks/mux.sh [WORKDIR]   (default: .build/bench-data; the stream is made by data.sh)
source "$(dirname "$0")/data.sh" "$@"
small="$work/1080p-100MB.264"
[ -f "$small" ] || head -c 100000000 "$big" > "$small"
huge="$work/1080p-1GB.264"
[ -f "$huge" ] || cat "$big" "$big" > "$huge"

out="$work/mux-out"
mkdir -p "$out"
echo "== 1. mux vs cp vs ffmpeg -c copy on $(du -h "$big" | cut -f1) =="
cat "$big" > /dev/null
hyperfine --warmup 1 --runs 7 --export-json "$work/mux.json" \
    --prepare "rm -f $out/*; sync" \
    "cp $big $out/copy.264" \
    "$bin mux $big $out/ours.mp4 2>/dev/null" \
    "$bin mux --faststart $big $out/faststart.mp4 2>/dev/null" \
    "ffmpeg -v error -y -f h264 -i $big -c copy $out/ffmpeg.mp4"
python3 - "$work/mux.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
cp, ours, fast, ff = (x["mean"] for x in r)
med = [x["median"] for x in r]
print("medians: cp {:.3f} s, mux {:.3f} s, mux --faststart {:.3f} s, ffmpeg {:.3f} s; mux / cp = {:.2f}x".format(*med, med[1] / med[0]))
print(f"cp {cp:.3f} s, mux {ours:.3f} s, mux --faststart {fast:.3f} s, ffmpeg {ff:.3f} s")
print(f"mux --faststart / cp = {fast / cp:.2f}x")
print(f"mux / cp = {ours / cp:.2f}x (target <= 1.3x); ffmpeg / mux = {ff / ours:.2f}x (target >= 2.5x)")
PY

echo "== 2. peak RSS =="
for input in "$small" "$huge"; do
    /usr/bin/time -f "%M" -o "$out/rss.txt" "$bin" mux "$input" "$out/rss.mp4" 2>/dev/null
    rss=$(tail -1 "$out/rss.txt")
    /usr/bin/time -f "%M" -o "$out/rss.txt" ffmpeg -v error -y -f h264 -i "$input" -c copy "$out/rss-ffmpeg.mp4"
    ffrss=$(tail -1 "$out/rss.txt")
    echo "$(du -h "$input" | cut -f1) input: mux peak RSS $((rss / 1024)) MB (ffmpeg $((ffrss / 1024)) MB)"
    rm -f "$out"/rss*.mp4
done
rm -rf "$out"
