#!/usr/bin/env bash
# Speed of `h264kit inspect`, side by side with the reference in one hyperfine run:
#   1. a ~500 MB 1080p Annex-B stream (x264 encodes concatenated) against `cat FILE > /dev/null`
#      (target: inspect within 1.5x the wall time of cat);
#   2. a 1080p stream of single-macroblock slices (8,160 NAL units a picture): NAL units per
#      second (target: >= 2 million).
# Usage: Benchmarks/inspect.sh [WORKDIR]   (default: .build/bench-data; files are reused)
source "$(dirname "$0")/data.sh" "$@"

tiny="$work/1080p-single-mb-slices.264"
if [ ! -f "$tiny" ]; then
    echo "making $tiny ..."
    ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 60 -pix_fmt yuv420p -f yuv4mpegpipe - |
        x264 --quiet --demuxer y4m --preset ultrafast --slice-max-mbs 1 --keyint 30 -o "$tiny" -
fi

echo "== 1. inspect vs cat on $(du -h "$big" | cut -f1) =="
cat "$big" > /dev/null  # warm the page cache
hyperfine --warmup 2 --runs 10 --export-json "$work/inspect-vs-cat.json" \
    "cat $big > /dev/null" \
    "$bin inspect $big > /dev/null"
python3 - "$work/inspect-vs-cat.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
cat, ours = r[0]["mean"], r[1]["mean"]
print(f"cat {cat:.3f} s, inspect {ours:.3f} s: ratio {ours / cat:.2f}x (target <= 1.5x)")
PY

echo "== 2. NAL units per second on single-macroblock slices =="
nals=$("$bin" inspect --json "$tiny" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nalUnitCount"])')
cat "$tiny" > /dev/null
hyperfine --warmup 2 --runs 10 --export-json "$work/tiny-nals.json" "$bin inspect $tiny > /dev/null"
python3 - "$work/tiny-nals.json" "$nals" <<'PY'
import json, sys
mean = json.load(open(sys.argv[1]))["results"][0]["mean"]
n = int(sys.argv[2])
print(f"{n} NAL units in {mean:.3f} s: {n / mean / 1e6:.2f} million NAL units/s (target >= 2)")
PY
