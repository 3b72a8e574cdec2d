#!/usr/bin/env bash
# Speed and memory of HLS packaging and the live origin:
#   1. `h264kit package` of the ~500 MB 1080p stream (6 s fMP4 segments, and TS) beside `cp` of
#      the same file, in one hyperfine run (target: package <= 1.5x cp);
#   2. peak RSS of both packagings (GNU time; target <= 48 MB);
#   3. the live origin (`stream FILE http://... --loop`) for DURATION seconds (default 600) with
#      ffmpeg pulling it: the origin's RSS every 10 s (target: flat).
# Usage: Benchmarks/hls.sh [WORKDIR [DURATION]]   (the stream is made by data.sh)
source "$(dirname "$0")/data.sh" "${1:-.build/bench-data}"
duration="${2:-600}"
out="$work/hls-out"
rm -rf "$out"; mkdir -p "$out"
cat "$big" > /dev/null
echo "== 1. package vs cp on $(du -h "$big" | cut -f1) =="
hyperfine --warmup 1 --runs 7 --export-json "$work/hls.json" --prepare "rm -rf $out/*" \
    "cp $big $out/copy.264" \
    "$bin package $big $out/fmp4/out.m3u8 2>/dev/null" \
    "$bin package $big $out/ts/out.m3u8 --segment-format ts 2>/dev/null"
python3 - "$work/hls.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
cp, fmp4, ts = (x["median"] for x in r)
print(f"medians: cp {cp:.3f} s, package fmp4 {fmp4:.3f} s ({fmp4 / cp:.2f}x cp), package ts {ts:.3f} s ({ts / cp:.2f}x cp); target <= 1.5x")
PY
echo "== 2. peak RSS =="
for format in fmp4 ts; do
    rm -rf "$out"/*
    /usr/bin/time -f "%M" -o "$out/rss.txt" "$bin" package "$big" "$out/p/out.m3u8" --segment-format "$format" 2>/dev/null
    echo "package ($format): peak RSS $(( $(tail -1 "$out/rss.txt") / 1024 )) MB (target <= 48)"
done
rm -rf "$out"/*
echo "== 3. live origin, $duration s =="
port=$((20000 + RANDOM % 20000))
"$bin" stream "$big" "http://127.0.0.1:$port/live/index.m3u8" --loop --segment-duration 2 2>"$out/origin.log" &
origin=$!
sleep 8
ffmpeg -v error -i "http://127.0.0.1:$port/live/index.m3u8" -t "$duration" -f null - 2>"$out/ffmpeg.log" &
puller=$!
for ((t = 0; t < duration; t += 10)); do
    echo "$t s: origin RSS $(( $(grep VmRSS /proc/$origin/status | awk '{print $2}') / 1024 )) MB"
    sleep 10
done
kill -INT "$origin"; wait "$origin" 2>/dev/null || true
wait "$puller" 2>/dev/null || true
grep -v "duplicated MOOV\|Last message repeated" "$out/ffmpeg.log" || true
rm -rf "$out"
