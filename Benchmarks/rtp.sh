#!/usr/bin/env bash
# RTP over loopback UDP, file to file: `h264kit stream` into `h264kit receive`, beside ffmpeg
# sending (`-f rtp -rtpflags send_bye`) into ffmpeg receiving the SDP (`-c copy`), in one hyperfine
# run: unpaced (`--no-pace`; ffmpeg without -re) and paced at 5x real time (`--rate 5`; ffmpeg
# `-readrate 5`). Each run starts the receiver, sends the whole 1080p file, and ends when the
# receiver has finished its MP4. Reported after the timing: frames received by each receiver and
# whether they decode to the source's frames (framemd5), and the real-time factor (content
# duration / wall time; issue #17's bar: >= 5x). Unpaced UDP overruns a receiver's socket buffer
# (net.core.rmem_max) on both sides: the loss is part of the figure.
# Usage: Benchmarks/rtp.sh [WORKDIR] [FRAMES] [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
frames="${2:-250}"
runs="${3:-5}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
source="$work/1080p-$frames.mp4"
if [ ! -f "$source" ]; then
    ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25,noise=alls=6:allf=t" -frames:v "$frames" \
        -c:v libx264 -preset fast -crf 18 -g 50 -pix_fmt yuv420p "$source"
fi
port=$(( (RANDOM % 10000 + 30000) & ~1 ))
"$bin" sdp "$source" "rtp://127.0.0.1:$port" > "$work/rtp.sdp"

cat > "$work/rtp-pair.sh" <<SCRIPT
#!/usr/bin/env bash
# One transfer: receiver first (waits until its port is bound), then the sender; ends with the receiver.
set -euo pipefail
bound() { grep -qi ":\$(printf '%04X' $port) " /proc/net/udp; }
# \$1: h264kit or ffmpeg; \$2: unpaced or a rate
if [ "\$2" = unpaced ]; then ours=(--no-pace); theirs=(); else ours=(--rate "\$2"); theirs=(-readrate "\$2"); fi
if [ "\$1" = h264kit ]; then
    "$bin" receive "rtp://127.0.0.1:$port" "$work/rtp-h264kit-\$2.mp4" --timeout 5 2>"$work/rtp-h264kit-\$2.log" & receiver=\$!
    until bound; do sleep 0.01; done
    "$bin" stream "\${ours[@]}" "$source" "rtp://127.0.0.1:$port"
else
    ffmpeg -v error -y -protocol_whitelist file,udp,rtp -buffer_size 8388608 -i "$work/rtp.sdp" -c copy "$work/rtp-ffmpeg-\$2.mp4" 2>"$work/rtp-ffmpeg-\$2.log" & receiver=\$!
    until bound; do sleep 0.01; done
    ffmpeg -v error "\${theirs[@]}" -i "$source" -c copy -f rtp -rtpflags send_bye "rtp://127.0.0.1:$port"
fi
wait \$receiver
SCRIPT
chmod +x "$work/rtp-pair.sh"

hyperfine --ignore-failure --runs "$runs" --warmup 1 --export-json "$work/rtp.json" \
    -n "h264kit unpaced" "$work/rtp-pair.sh h264kit unpaced" -n "ffmpeg unpaced" "$work/rtp-pair.sh ffmpeg unpaced" \
    -n "h264kit 5x" "$work/rtp-pair.sh h264kit 5" -n "ffmpeg 5x" "$work/rtp-pair.sh ffmpeg 5"

duration=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$source")
hashes() { ffmpeg -v error -i "$1" -map 0:v:0 -f framemd5 - | grep -v '^#' | awk -F, '{print $6}'; }
hashes "$source" > "$work/rtp-source.md5"
for run in h264kit-unpaced ffmpeg-unpaced h264kit-5 ffmpeg-5; do   # (the last run of each)
    out="$work/rtp-$run.mp4"
    if [ -f "$out" ]; then
        hashes "$out" > "$work/rtp-$run.md5" 2>/dev/null
        same=$(cmp -s "$work/rtp-source.md5" "$work/rtp-$run.md5" && echo "the source's frames" || echo "NOT the source's frames")
        printf '  %-16s %4d of %d frames received, %s\n' "$run" "$(wc -l < "$work/rtp-$run.md5")" "$(wc -l < "$work/rtp-source.md5")" "$same"
    else
        printf '  %-16s no output\n' "$run"
    fi
done
python3 - "$work/rtp.json" "$duration" "$(stat -c %s "$source")" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
duration, size = float(sys.argv[2]), int(sys.argv[3])
for name, r in results.items():
    print(f"  {name:16s} median {r['median']:.3f} s: {duration / r['median']:.1f}x real time, {size * 8 / r['median'] / 1e6:.0f} Mbit/s of file")
for pace in ("unpaced", "5x"):
    print(f"  ratio ffmpeg/h264kit, {pace} (median wall): {results['ffmpeg ' + pace]['median'] / results['h264kit ' + pace]['median']:.2f}")
PY
