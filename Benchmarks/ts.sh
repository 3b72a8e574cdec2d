#!/usr/bin/env bash
# Speed and memory of MPEG-TS in and out, beside FFmpeg in one hyperfine run each:
#   1. an ~880 MB 1080p transport stream (written by FFmpeg) to MP4: `h264kit mux` vs
#      `ffmpeg -i IN.ts -c copy OUT.mp4` (targets: at most half FFmpeg's CPU time, user +
#      system, and no more wall time);
#   2. the MP4 back to TS: `h264kit mux IN.mp4 OUT.ts` vs `ffmpeg -i IN.mp4 -c copy -f mpegts`
#      (the same targets);
#   3. peak RSS (GNU time) of both directions at ~200 MB and ~880 MB (target: <= 35 MB, flat);
#   4. a TS of ~5 GB (the 880 MB one six times: the time base restarts at each join) to an MP4
#      over 4 GiB: every picture there and the index in co64.
# Usage: Benchmarks/ts.sh [WORKDIR]   (default: .build/bench-data; the streams are made once)
source "$(dirname "$0")/data.sh" "$@"
ts="$work/1080p-880MB.ts"
movie="$work/1080p-880MB.mp4"
if [ ! -f "$ts" ]; then
    echo "making $ts ..."
    cat "$big" "$big" | head -c 850000000 > "$work/ts-source.264"
    "$bin" mux "$work/ts-source.264" "$movie" 2>/dev/null
    ffmpeg -v error -y -i "$movie" -c copy "$ts"
    rm -f "$work/ts-source.264"
fi
[ -f "$movie" ] || ffmpeg -v error -y -i "$ts" -c copy "$movie"
small="$work/1080p-200MB.ts"
[ -f "$small" ] || head -c $((188 * 1063830)) "$ts" > "$small"

out="$work/ts-out"
mkdir -p "$out"
cat "$ts" "$movie" > /dev/null
times() {  # times NAME COMMAND...: user+system CPU seconds and wall seconds, median of 5
    local name=$1; shift
    for run in 1 2 3 4 5; do
        rm -f "$out"/*
        /usr/bin/time -f "%U %S %e %M" -o "$out/.t" "$@" >/dev/null 2>&1
        tail -1 "$out/.t"
    done | python3 -c "
import sys, statistics
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
cpu = statistics.median(r[0] + r[1] for r in rows); wall = statistics.median(r[2] for r in rows); rss = max(r[3] for r in rows) / 1024
print(f'$name: cpu {cpu:.3f} s, wall {wall:.3f} s, peak RSS {rss:.1f} MB')
" | tee -a "$out/../ts-times.txt"
}
: > "$work/ts-times.txt"
echo "== 1. TS -> MP4 on $(du -h "$ts" | cut -f1) =="
hyperfine --warmup 1 --runs 7 --export-json "$work/ts-in.json" --prepare "rm -f $out/*" \
    "$bin mux $ts $out/ours.mp4 2>/dev/null" \
    "ffmpeg -v error -y -i $ts -c copy $out/ffmpeg.mp4"
times "TS->MP4 h264kit" "$bin" mux "$ts" "$out/ours.mp4"
times "TS->MP4 ffmpeg" ffmpeg -v error -y -i "$ts" -c copy "$out/ffmpeg.mp4"
echo "== 2. MP4 -> TS on $(du -h "$movie" | cut -f1) =="
hyperfine --warmup 1 --runs 7 --export-json "$work/ts-out.json" --prepare "rm -f $out/*" \
    "$bin mux $movie $out/ours.ts 2>/dev/null" \
    "ffmpeg -v error -y -i $movie -c copy -f mpegts $out/ffmpeg.ts"
times "MP4->TS h264kit" "$bin" mux "$movie" "$out/ours.ts"
times "MP4->TS ffmpeg" ffmpeg -v error -y -i "$movie" -c copy -f mpegts "$out/ffmpeg.ts"
python3 - "$work/ts-in.json" "$work/ts-out.json" "$work/ts-times.txt" <<'PY'
import json, sys, re
for path, name in ((sys.argv[1], "TS -> MP4"), (sys.argv[2], "MP4 -> TS")):
    r = json.load(open(path))["results"]
    ours, ff = r[0], r[1]
    print(f"{name}: wall median h264kit {ours['median']:.3f} s, ffmpeg {ff['median']:.3f} s (ratio {ours['median'] / ff['median']:.2f}, target <= 1); "
          f"CPU mean h264kit {ours['user'] + ours['system']:.3f} s, ffmpeg {ff['user'] + ff['system']:.3f} s "
          f"(ratio {(ours['user'] + ours['system']) / (ff['user'] + ff['system']):.2f}, target <= 0.5)")
PY
echo "== 3. peak RSS =="
for input in "$small" "$ts"; do
    /usr/bin/time -f "%M" -o "$out/rss.txt" "$bin" mux "$input" "$out/rss.mp4" 2>/dev/null
    echo "$(du -h "$input" | cut -f1) TS -> MP4: peak RSS $(( $(tail -1 "$out/rss.txt") / 1024 )) MB"
    /usr/bin/time -f "%M" -o "$out/rss.txt" "$bin" mux "$out/rss.mp4" "$out/rss.ts" 2>/dev/null
    echo "$(du -h "$out/rss.mp4" | cut -f1) MP4 -> TS: peak RSS $(( $(tail -1 "$out/rss.txt") / 1024 )) MB"
    rm -f "$out"/rss*
done
echo "== 4. a TS over 4 GiB to MP4 =="
huge="$out/six.ts"
for i in 1 2 3 4 5 6; do cat "$ts"; done > "$huge"
/usr/bin/time -f "%e s wall, %U+%S s CPU, peak RSS %M KB" -o "$out/huge.txt" "$bin" mux "$huge" "$out/six.mp4" 2>"$out/huge.err" || { cat "$out/huge.err"; exit 1; }
echo "$(du -h "$huge" | cut -f1) TS -> $(du -h "$out/six.mp4" | cut -f1) MP4: $(tail -1 "$out/huge.txt")"
grep -v "samples," "$out/huge.err" || true
ours=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$out/six.mp4")
theirs=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$ts" | head -1)
python3 - "$out/six.mp4" "$ours" "$theirs" <<'PY'
import sys, os
path, ours, one = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = os.path.getsize(path)
with open(path, "rb") as f:
    f.seek(max(0, size - (16 << 20))); tail = f.read()
print(f"MP4 {size} bytes (over 4 GiB: {size > 1 << 32}); samples {ours} of {6 * one} ({6 * one - ours} lost at the 5 joins); "
      f"co64 {'present' if b'co64' in tail else 'MISSING'}")
PY
rm -rf "$out"
