#!/usr/bin/env bash
# The Ray driver (scripts/ray/transcode.py, a one-node cluster in its own network namespace)
# beside `h264kit transcode --chunks N` on the same 1080p MP4 (made by Benchmarks/transcode.sh):
# wall time of each and the driver's overhead (cluster start-up counted separately: the Ray
# run here is the whole in-namespace.sh, start-up included, and its own report says how long
# split, tasks and join took). Outputs are compared byte for byte.
# Usage: Benchmarks/transcode-ray.sh [WORKDIR] [CHUNKS] [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="$(cd "${1:-.build/bench-data}" && pwd)"
chunks="${2:-2}"
runs="${3:-3}"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
source="$work/1080p-250.mp4"
[ -f "$source" ] || { echo "make $source first: Benchmarks/transcode.sh $work" >&2; exit 1; }
options="--preset veryfast --crf 23 --threads 1"
hyperfine -N -w 1 -r "$runs" --export-json "$work/transcode-ray.json" \
    -n "transcode --chunks $chunks" "$bin transcode $source $work/chunks.mp4 --chunks $chunks $options" \
    -n "Ray, $chunks tasks (cluster start-up included)" \
    "$PWD/scripts/ray/in-namespace.sh python3 $PWD/scripts/ray/transcode.py $source $work/ray.mp4 --chunks $chunks --h264kit $bin --report $work/ray-report.json -- $options"
python3 - "$work/transcode-ray.json" "$work/ray-report.json" <<'PY'
import json, sys
runs = [r["mean"] for r in json.load(open(sys.argv[1]))["results"]]
report = json.load(open(sys.argv[2]))
print(f"  chunks {runs[0]:.2f} s, Ray {runs[1]:.2f} s with cluster start-up: overhead {runs[1] - runs[0]:+.2f} s ({runs[1] / runs[0]:.2f}x)")
print(f"  the driver's own last run: split {report['split_seconds']} s, tasks {report['encode_seconds']} s, total {report['total_seconds']} s "
      f"(overhead without start-up {report['total_seconds'] - runs[0]:+.2f} s)")
PY
cmp "$work/chunks.mp4" "$work/ray.mp4" && echo "  outputs byte-identical" || echo "  OUTPUTS DIFFER"
