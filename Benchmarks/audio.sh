#!/usr/bin/env bash
# The cost of carrying sound (issue #41): the broadcast-rate stream of Benchmarks/ts.sh (10
# minutes of 1080p at 8 Mbit/s) with a 48 kHz stereo AAC track beside it (FFmpeg's encoder,
# 128 kbit/s), muxed TS -> MP4 with every track, against the same file's video alone
# (`--no-audio`: the same reading, no audio written) and against the video-only stream FFmpeg
# wrote, and FFmpeg's `-map 0 -c copy` of the AV stream beside; in alternating runs after the
# outputs are removed and written back (`sync`). Medians of CPU (user + system) and wall time,
# the largest peak RSS; the paired CPU ratio AV/video alone, and the ratio of the least CPU
# times (the steadier figure on a noisy machine). Then peak RSS at 1 and 10
# minutes of the AV stream (flat with the file's size). Targets: AV within 1.05x the CPU of
# the video alone, peak RSS <= 35 MB at both sizes.
# Usage: Benchmarks/audio.sh [WORKDIR] [RUNS]   (default: .build/bench-data, 10; streams made once)
source "$(dirname "$0")/data.sh" "$@"
runs="${2:-10}"
video="$work/ts-1080p-8Mbps-10min.ts"
av="$work/ts-1080p-8Mbps-10min-aac.ts"
short="$work/ts-1080p-8Mbps-1min-aac.ts"
if [ ! -f "$video" ]; then
    echo "making $video ..."
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t 600 -c:v libx264 -preset ultrafast -b:v 8M -maxrate 8M -bufsize 16M \
        -pix_fmt yuv420p -f mpegts "$video"
fi
if [ ! -f "$av" ]; then
    echo "making $av ..."
    ffmpeg -v error -y -i "$video" -f lavfi -i "sine=frequency=440:sample_rate=48000" -map 0:v -map 1:a -c:v copy -c:a aac -b:a 128k -ac 2 \
        -shortest -f mpegts "$av"
fi
[ -f "$short" ] || ffmpeg -v error -y -i "$av" -map 0 -c copy -t 60 -f mpegts "$short"
out="$work/audio-out"
mkdir -p "$out"
cat "$video" "$av" > /dev/null

python3 - "$out" "$runs" "$bin" "$video" "$av" <<'PY'
import subprocess, sys, statistics, shlex
sys.path.insert(0, "Benchmarks")  # (data.sh works from the repository's root)
from measure import measure
out, runs, tool, video, av = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
commands = {
    "AV, every track": [tool, "mux", av, f"{out}/av.mp4"],
    "AV, --no-audio": [tool, "mux", "--no-audio", av, f"{out}/noaudio.mp4"],
    "video-only TS": [tool, "mux", video, f"{out}/video.mp4"],
    "ffmpeg -map 0 -c copy": ["ffmpeg", "-v", "error", "-y", "-i", av, "-map", "0", "-c", "copy", f"{out}/ffmpeg.mp4"],
}
rows = {k: [] for k in commands}
names = list(commands)
for run in range(runs):
    order = names if run % 2 == 0 else names[::-1]
    for who in order:
        subprocess.run(f"rm -f {shlex.quote(out)}/*; sync", shell=True, check=True)
        result = measure(commands[who])
        if result.exit_code != 0:
            sys.exit(f"{who} failed: {result.stderr[-500:]}")
        rows[who].append((result.user + result.system, result.wall, result.peak_rss_mb))
for who in names:
    cpu = statistics.median(r[0] for r in rows[who]); wall = statistics.median(r[1] for r in rows[who])
    print(f"  {who:24s}: cpu {cpu:.3f} s, wall {wall:.3f} s, peak RSS {max(r[2] for r in rows[who]):.1f} MB")
for base in ["AV, --no-audio", "video-only TS", "ffmpeg -map 0 -c copy"]:
    ratios = [a[0] / b[0] for a, b in zip(rows["AV, every track"], rows[base])]
    print(f"  CPU ratio AV / {base}, median of {runs} pairs: {statistics.median(ratios):.3f} (spread {min(ratios):.3f}-{max(ratios):.3f})")
# On a shared virtual machine the noise (steal, neighbours, frequency) only ever adds time: the
# least CPU time of many runs is the steadiest estimate of a command's own cost.
for base in ["AV, --no-audio", "video-only TS", "ffmpeg -map 0 -c copy"]:
    least = min(r[0] for r in rows["AV, every track"]), min(r[0] for r in rows[base])
    print(f"  CPU ratio AV / {base}, least of {runs} runs each: {least[0] / least[1]:.3f} ({least[0]:.3f} s / {least[1]:.3f} s)")
PY

echo "== peak RSS by size (AV, every track) =="
for input in "$short" "$av"; do
    /usr/bin/time -f "%M" -o "$out/rss.txt" "$bin" mux "$input" "$out/rss.mp4" 2>/dev/null
    echo "  $(basename "$input") ($(du -h "$input" | cut -f1)): peak RSS $(( $(tail -1 "$out/rss.txt") / 1024 )) MB"
    rm -f "$out/rss.mp4"
done
