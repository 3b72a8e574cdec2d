#!/usr/bin/env bash
# `h264kit transcode` beside `ffmpeg -c:v libx264` in one hyperfine run per preset and source, on
# two 1080p MP4s (x264 High profile with B-frames, 25 fps):
#   level41: 20 Mbit/s (level 4.1's bit rate, as a camera or a broadcast file): decoding is about
#            a quarter of the work;
#   heavy:   CRF 18 of a noisy pattern, ~330 Mbit/s (above any level's limit): decoding is half.
# For each preset and source: wall time (ratio ffmpeg/h264kit), CPU seconds and the cores each
# kept busy, the floor (CPU seconds / cores: no scheduler can finish the same work sooner), peak
# RSS (/usr/bin/time), frame count and presentation times (ffprobe), PSNR to the source.
# Then `--chunks 2` against one process, both at --threads 1 per encoder (the issue's bar:
# <= 0.6x), beside `ffmpeg -threads 1` on both sides (a one-thread transcode).
# Targets (issue #19): speed >= 1.05x ffmpeg, PSNR within 0.05 dB, RSS <= ffmpeg's; chunks <= 0.6x.
# Usage: Benchmarks/transcode.sh [WORKDIR] [THREADS] [FRAMES] [RUNS] [all|presets|chunks] [level41|heavy|both]
# With THREADS=1 both decoders run on one thread too (ffmpeg -threads 1 before -i; --decoder-threads 1);
# `taskset -c 0 Benchmarks/transcode.sh DIR 1 250 3 presets` pins everything to one core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
threads="${2:-$(nproc)}"
frames="${3:-250}"
runs="${4:-3}"
sections="${5:-all}"
which="${6:-both}"
crf=23
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
cores=$(nproc)

pattern="testsrc2=size=1920x1080:rate=25,noise=alls=6:allf=t"   # motion and temporal noise: work for motion search and rate control
heavy="$work/1080p-$frames.mp4"
level41="$work/1080p-$frames-l41.mp4"
[ -f "$heavy" ] || ffmpeg -v error -f lavfi -i "$pattern" -frames:v "$frames" -c:v libx264 -preset fast -crf 18 -g 50 -pix_fmt yuv420p "$heavy"
[ -f "$level41" ] || ffmpeg -v error -f lavfi -i "$pattern" -frames:v "$frames" -c:v libx264 -preset fast -b:v 20M -maxrate 25M -bufsize 25M \
    -level 4.1 -g 50 -pix_fmt yuv420p "$level41"
case "$which" in
    level41) sources=("$level41") ;;
    heavy) sources=("$heavy") ;;
    *) sources=("$level41" "$heavy") ;;
esac

ptsOf() { ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 "$1" | grep -oE '^-?[0-9.]+'; }   # (side data adds lines)
psnrOf() { ffmpeg -v info -i "$1" -i "$source" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | sed -n 's/.*PSNR.* average:\([0-9.inf]*\).*/\1/p' | tail -1; }
rssOf() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }   # KiB
report() {   # name output rss-KiB
    local pts psnr
    ptsOf "$2" > "$work/$1.pts"
    pts=$(cmp -s "$work/source.pts" "$work/$1.pts" && echo "same PTS as the source" || echo "PTS DIFFER")
    psnr=$(psnrOf "$2")
    printf '  %-24s %4d frames, %s, PSNR %s dB, peak RSS %d MB\n' "$1" "$(wc -l < "$work/$1.pts")" "$pts" "$psnr" $(($3 / 1024))
    echo "$psnr" > "$work/$1.psnr"
}
# Wall time, CPU seconds (user + system), the cores kept busy and the floor of each command of a
# hyperfine JSON file, then the ratio of the first command's wall time to the second's.
timings() {   # JSON cores
    python3 - "$1" "$2" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
cores = int(sys.argv[2])
for r in results:
    cpu = r["user"] + r["system"]
    print(f"  {r['command']:<28} wall {r['mean']:.3f} s (median {r['median']:.3f}), CPU {cpu:.2f} s = {cpu / r['mean']:.2f} of {cores} cores busy; "
          f"floor (CPU / cores) {cpu / cores:.3f} s")
a, b = results[0], results[1]
floor = (a["user"] + a["system"]) / cores
print(f"  {b['command']} time / {a['command']} time = {b['mean'] / a['mean']:.3f} (medians {b['median'] / a['median']:.3f}); "
      f"the most {a['command']} could reach with its CPU seconds: {b['mean'] / floor:.3f}")
PY
}

decoderIn=()
decoderOurs=()
if [ "$threads" = 1 ]; then decoderIn=(-threads 1); decoderOurs=(--decoder-threads 1); fi
for source in "${sources[@]}"; do
    name="$(basename "$source" .mp4)"
    ptsOf "$source" > "$work/source.pts"
    echo "== source: $source ($frames frames, 1920x1080, 25 fps, $(( $(stat -c %s "$source") * 8 * 25 / frames / 1000000 )) Mbit/s), CRF $crf, $threads threads, $cores cores"
    [ "$sections" = chunks ] || for preset in veryfast medium; do
        ours="$work/transcode-ours-$preset.mp4"
        theirs="$work/transcode-ffmpeg-$preset.mp4"
        ffmpegCommand="ffmpeg -y -v error ${decoderIn[*]} -i $source -c:v libx264 -preset $preset -crf $crf -threads $threads $theirs"
        oursCommand="$bin transcode $source $ours --preset $preset --crf $crf --threads $threads ${decoderOurs[*]}"
        hyperfine -N -w 1 -r "$runs" --export-json "$work/transcode-$name-$preset.json" \
            -n "h264kit $preset" "$oursCommand" -n "ffmpeg $preset" "$ffmpegCommand" >/dev/null
        timings "$work/transcode-$name-$preset.json" "$cores"
        # shellcheck disable=SC2086
        report "h264kit-$preset" "$ours" "$(rssOf $oursCommand)"
        # shellcheck disable=SC2086
        report "ffmpeg-$preset" "$theirs" "$(rssOf $ffmpegCommand)"
        python3 -c "import sys; a, b = (float(open(p).read()) for p in sys.argv[1:]); print(f'  PSNR difference {a - b:+.3f} dB')" \
            "$work/h264kit-$preset.psnr" "$work/ffmpeg-$preset.psnr"
    done

    [ "$sections" = presets ] && continue
    echo "  chunked: --chunks 2 against one process, one encoder thread each (veryfast)"
    one="$work/transcode-one.mp4"
    chunked="$work/transcode-chunks2.mp4"
    single="$work/transcode-ffmpeg-single.mp4"
    hyperfine -N -w 1 -r "$runs" --export-json "$work/transcode-$name-chunks.json" \
        -n "chunks 2" "$bin transcode $source $chunked --preset veryfast --crf $crf --threads 1 --chunks 2" \
        -n "one process" "$bin transcode $source $one --preset veryfast --crf $crf --threads 1 --decoder-threads 1" \
        -n "ffmpeg -threads 1 (both)" "ffmpeg -y -v error -threads 1 -i $source -c:v libx264 -preset veryfast -crf $crf -threads 1 $single" >/dev/null
    timings "$work/transcode-$name-chunks.json" "$cores"
    python3 - "$work/transcode-$name-chunks.json" <<'PY'
import json, sys
runs = {r["command"]: r["mean"] for r in json.load(open(sys.argv[1]))["results"]}
print(f"  --chunks 2 wall time = {runs['chunks 2'] / runs['one process']:.3f} x one process (which already decodes beside encoding), "
      f"{runs['chunks 2'] / runs['ffmpeg -threads 1 (both)']:.3f} x ffmpeg -threads 1 on both sides")
PY
    report "one-process" "$one" "$(rssOf "$bin" transcode "$source" "$one" --preset veryfast --crf $crf --threads 1 --decoder-threads 1)"
    report "chunks-2" "$chunked" "$(rssOf "$bin" transcode "$source" "$chunked" --preset veryfast --crf $crf --threads 1 --chunks 2)"
    python3 -c "import sys; a, b = (float(open(p).read()) for p in sys.argv[1:]); print(f'  PSNR difference {a - b:+.3f} dB')" \
        "$work/chunks-2.psnr" "$work/one-process.psnr"
done
