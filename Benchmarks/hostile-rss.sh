#!/usr/bin/env bash
# Peak RSS of decode on hostile inputs (class E of issue #20) beside ffmpeg, same input, same
# run: h264kit decode with one thread and with its default threads, against `ffmpeg -f null`
# with -threads 1 and with its default threads. Inputs: Tests/Fixtures/Hostile/*.264 and any
# .264 files in the directories given (say the inputs Fuzz/campaign.py --decode-only kept).
# Usage: Benchmarks/hostile-rss.sh [DIR...]    (builds the release h264kit first)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product h264kit >/dev/null
bin=.build/release/h264kit
peak() {  # a command's peak RSS in MB (GNU time), whether or not the command refused the input
    { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null || true; } | tail -1 | awk '{ printf "%d", $1 / 1024 }'
}
printf "%-44s %10s %10s %7s %10s %10s %7s\n" input "h264kit-1" "ffmpeg-1" ratio "h264kit" "ffmpeg" ratio
inputs=(Tests/Fixtures/Hostile/*.264)
for dir in "$@"; do inputs+=("$dir"/*.264); done
for input in "${inputs[@]}"; do
    [ -f "$input" ] || continue
    ours1=$(peak "$bin" decode "$input" -o /dev/null --threads 1)
    theirs1=$(peak ffmpeg -nostdin -v quiet -threads 1 -f h264 -i "$input" -f null -)
    ours=$(peak "$bin" decode "$input" -o /dev/null)
    theirs=$(peak ffmpeg -nostdin -v quiet -f h264 -i "$input" -f null -)
    awk -v name="$(basename "$input" | cut -c1-44)" -v a="$ours1" -v b="$theirs1" -v c="$ours" -v d="$theirs" \
        'BEGIN { printf "%-44s %7d MB %7d MB %6.2fx %7d MB %7d MB %6.2fx\n", name, a, b, a / b, c, d, c / d }'
done
