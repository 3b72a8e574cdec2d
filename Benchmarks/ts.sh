#!/usr/bin/env bash
# Speed and memory of MPEG-TS in and out, beside FFmpeg, on two transport streams FFmpeg writes:
#   - byte-bound: 877 MB of 1080p at ~245 Mbit/s (testsrc2 with noise, x264 ultrafast crf 16:
#     frames of about 1 MB), where moving bytes is the work;
#   - broadcast-rate: 10 minutes of 1080p at 8 Mbit/s (618 MB, 18,000 frames), where the
#     per-packet and per-frame work counts.
# For each: TS -> MP4 (`h264kit mux` vs `ffmpeg -i IN.ts -c copy OUT.mp4`) and the MP4 back to
# TS, in alternating runs (ours then theirs, then theirs then ours, ...), each after the
# outputs are removed and the dirty pages written back (`sync`), so that no run pays for
# another's page cache. Medians of
# CPU (user + system), kernel time, wall time, and the largest peak RSS. Targets (issue #40):
# CPU <= 0.7x FFmpeg's on the byte-bound stream and <= 0.5x on the broadcast-rate one, wall no
# more than FFmpeg's, peak RSS <= 35 MB for TS -> MP4 on both (bounded by bytes, not frames).
# Then a TS of ~5 GB (the byte-bound one six times: the time base restarts at each join) to an
# MP4 over 4 GiB: every picture there and the index in co64.
# Usage: Benchmarks/ts.sh [WORKDIR] [RUNS]   (default: .build/bench-data, 10; the streams are made once)
source "$(dirname "$0")/data.sh" "$@"
runs="${2:-10}"
bytebound="$work/ts-1080p-245Mbps-877MB.ts"
broadcast="$work/ts-1080p-8Mbps-10min.ts"
if [ ! -f "$bytebound" ]; then
    echo "making $bytebound ..."
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=20:allf=t" -t 29 -c:v libx264 -preset ultrafast -crf 16 \
        -pix_fmt yuv420p -f mpegts "$bytebound.part"
    head -c $((188 * 4664893)) "$bytebound.part" > "$bytebound"
    rm -f "$bytebound.part"
fi
if [ ! -f "$broadcast" ]; then
    echo "making $broadcast ..."
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t 600 -c:v libx264 -preset ultrafast -b:v 8M -maxrate 8M -bufsize 16M \
        -pix_fmt yuv420p -f mpegts "$broadcast"
fi
out="$work/ts-out"
mkdir -p "$out"

# compare NAME RUNS OURS... -- THEIRS...: alternating runs, medians and the paired CPU ratio.
compare() {
    python3 - "$out" "$@" <<'PY'
import subprocess, sys, statistics, shlex
sys.path.insert(0, "Benchmarks")  # (data.sh works from the repository's root)
from measure import measure
out, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rest = sys.argv[4:]
cut = rest.index("--")
commands = {"h264kit": rest[:cut], "ffmpeg": rest[cut + 1:]}
rows = {k: [] for k in commands}
for run in range(runs):
    # The order alternates (A B, B A, ...): the first run after the outputs go meets the
    # kernel's work of freeing them (and, in a VM, fresh pages), and neither side is always it.
    order = list(commands.items()) if run % 2 == 0 else list(commands.items())[::-1]
    for who, command in order:
        subprocess.run(f"rm -f {shlex.quote(out)}/*; sync", shell=True, check=True)
        result = measure(command)
        if result.exit_code != 0:
            sys.exit(f"{name}: {who} failed: {result.stderr[-500:]}")
        rows[who].append((result.user + result.system, result.system, result.wall, result.peak_rss_mb))
def median(who, i): return statistics.median(r[i] for r in rows[who])
ratios = [a[0] / b[0] for a, b in zip(rows["h264kit"], rows["ffmpeg"])]
for who in rows:
    print(f"  {name} {who:8s}: cpu {median(who, 0):.3f} s (kernel {median(who, 1):.3f} s), wall {median(who, 2):.3f} s, "
          f"peak RSS {max(r[3] for r in rows[who]):.1f} MB")
print(f"  {name}: CPU ratio h264kit/ffmpeg, median of {runs} pairs: {statistics.median(ratios):.2f} "
      f"(spread {min(ratios):.2f}-{max(ratios):.2f}); wall ratio {median('h264kit', 2) / median('ffmpeg', 2):.2f}")
PY
}

for input in "$bytebound" "$broadcast"; do
    movie="$work/$(basename "$input" .ts).mp4"
    [ -f "$movie" ] || ffmpeg -v error -y -i "$input" -c copy "$movie"
    cat "$input" "$movie" > /dev/null
    echo "== $(basename "$input") ($(du -h "$input" | cut -f1)) =="
    compare "TS -> MP4" "$runs" "$bin" mux "$input" "$out/ours.mp4" -- ffmpeg -v error -y -i "$input" -c copy "$out/ffmpeg.mp4"
    compare "MP4 -> TS" "$runs" "$bin" mux "$movie" "$out/ours.ts" -- ffmpeg -v error -y -i "$movie" -c copy -f mpegts "$out/ffmpeg.ts"
done

echo "== a TS over 4 GiB to MP4 =="
huge="$out/six.ts"
for i in 1 2 3 4 5 6; do cat "$bytebound"; done > "$huge"
/usr/bin/time -f "%e s wall, %U+%S s CPU, peak RSS %M KB" -o "$out/huge.txt" "$bin" mux "$huge" "$out/six.mp4" 2>"$out/huge.err" || { cat "$out/huge.err"; exit 1; }
echo "$(du -h "$huge" | cut -f1) TS -> $(du -h "$out/six.mp4" | cut -f1) MP4: $(tail -1 "$out/huge.txt")"
grep -v "samples," "$out/huge.err" || true
ours=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$out/six.mp4")
theirs=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$bytebound" | head -1)
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
