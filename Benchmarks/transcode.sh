#!/usr/bin/env bash
# `h264kit transcode` beside `ffmpeg -c:v libx264` in one hyperfine run per preset, on a 1080p MP4
# (x264 High profile with B-frames, 25 fps). For each preset: wall time (ratio ffmpeg/h264kit),
# peak RSS (/usr/bin/time), frame count and presentation times (ffprobe), PSNR to the source.
# Then `--chunks 2` against one process, both at --threads 1 per encoder (the issue's bar: <= 0.6x).
# Targets (issue #19): speed >= 1.05x ffmpeg, PSNR within 0.05 dB, RSS <= ffmpeg's; chunks <= 0.6x.
# Usage: Benchmarks/transcode.sh [WORKDIR] [THREADS] [FRAMES] [RUNS] [all|presets|chunks]
# With THREADS=1 both decoders run on one thread too (ffmpeg -threads 1 before -i; --decoder-threads 1);
# `taskset -c 0 Benchmarks/transcode.sh DIR 1 250 3 presets` pins everything to one core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
threads="${2:-$(nproc)}"
frames="${3:-250}"
runs="${4:-3}"
sections="${5:-all}"
crf=23
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"

source="$work/1080p-$frames.mp4"
if [ ! -f "$source" ]; then
    # A moving test pattern with temporal noise, so motion search and rate control have work to do.
    ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25,noise=alls=6:allf=t" -frames:v "$frames" \
        -c:v libx264 -preset fast -crf 18 -g 50 -pix_fmt yuv420p "$source"
fi

ptsOf() { ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 "$1" | grep -oE '^-?[0-9.]+'; }   # (side data adds lines)
psnrOf() { ffmpeg -v info -i "$1" -i "$source" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | sed -n 's/.*PSNR.* average:\([0-9.inf]*\).*/\1/p' | tail -1; }
rssOf() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }   # KiB
ptsOf "$source" > "$work/source.pts"
report() {   # name output rss-KiB
    local pts psnr
    ptsOf "$2" > "$work/$1.pts"
    pts=$(cmp -s "$work/source.pts" "$work/$1.pts" && echo "same PTS as the source" || echo "PTS DIFFER")
    psnr=$(psnrOf "$2")
    printf '  %-24s %4d frames, %s, PSNR %s dB, peak RSS %d MB\n' "$1" "$(wc -l < "$work/$1.pts")" "$pts" "$psnr" $(($3 / 1024))
    echo "$psnr" > "$work/$1.psnr"
}

echo "source: $source ($frames frames, 1920x1080, 25 fps), CRF $crf, $threads threads"
decoderIn=()
decoderOurs=()
if [ "$threads" = 1 ]; then decoderIn=(-threads 1); decoderOurs=(--decoder-threads 1); fi
[ "$sections" = chunks ] || for preset in veryfast medium; do
    ours="$work/transcode-ours-$preset.mp4"
    theirs="$work/transcode-ffmpeg-$preset.mp4"
    ffmpegCommand="ffmpeg -y -v error ${decoderIn[*]} -i $source -c:v libx264 -preset $preset -crf $crf -threads $threads $theirs"
    oursCommand="$bin transcode $source $ours --preset $preset --crf $crf --threads $threads ${decoderOurs[*]}"
    hyperfine -N -w 1 -r "$runs" --export-json "$work/transcode-$preset.json" \
        -n "h264kit $preset" "$oursCommand" -n "ffmpeg $preset" "$ffmpegCommand"
    python3 - "$work/transcode-$preset.json" "$frames" <<'PY'
import json, sys
runs = {r["command"]: r["mean"] for r in json.load(open(sys.argv[1]))["results"]}
frames = int(sys.argv[2])
ours = [v for k, v in runs.items() if k.startswith("h264kit")][0]
theirs = [v for k, v in runs.items() if k.startswith("ffmpeg")][0]
print(f"  h264kit {frames / ours:.1f} fps, ffmpeg {frames / theirs:.1f} fps, speed ratio (ffmpeg time / ours) {theirs / ours:.3f}")
PY
    # shellcheck disable=SC2086
    report "h264kit-$preset" "$ours" "$(rssOf $oursCommand)"
    # shellcheck disable=SC2086
    report "ffmpeg-$preset" "$theirs" "$(rssOf $ffmpegCommand)"
    python3 -c "import sys; a, b = (float(open(p).read()) for p in sys.argv[1:]); print(f'  PSNR difference {a - b:+.3f} dB')" \
        "$work/h264kit-$preset.psnr" "$work/ffmpeg-$preset.psnr"
done

[ "$sections" = presets ] && exit 0
echo "chunked: --chunks 2 against one process, one encoder thread each (veryfast)"
one="$work/transcode-one.mp4"
chunked="$work/transcode-chunks2.mp4"
hyperfine -N -w 1 -r "$runs" --export-json "$work/transcode-chunks.json" \
    -n "one process" "$bin transcode $source $one --preset veryfast --crf $crf --threads 1 --decoder-threads 1" \
    -n "chunks 2" "$bin transcode $source $chunked --preset veryfast --crf $crf --threads 1 --chunks 2"
python3 - "$work/transcode-chunks.json" <<'PY'
import json, sys
runs = {r["command"]: r["mean"] for r in json.load(open(sys.argv[1]))["results"]}
print(f"  --chunks 2 wall time = {runs['chunks 2'] / runs['one process']:.3f} x one process")
PY
report "one-process" "$one" "$(rssOf "$bin" transcode "$source" "$one" --preset veryfast --crf $crf --threads 1 --decoder-threads 1)"
report "chunks-2" "$chunked" "$(rssOf "$bin" transcode "$source" "$chunked" --preset veryfast --crf $crf --threads 1 --chunks 2)"
python3 -c "import sys; a, b = (float(open(p).read()) for p in sys.argv[1:]); print(f'  PSNR difference {a - b:+.3f} dB')" \
    "$work/chunks-2.psnr" "$work/one-process.psnr"
