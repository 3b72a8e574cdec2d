#!/usr/bin/env bash
# Issue #17's RTP figures on 1080p (x264 -tune zerolatency, 30 fps, no B-frames):
#   - packetize + depacketize throughput on one core, and the added latency over loopback at
#     30 fps from the last packet of an access unit sent to the sample handed to the receiver's
#     consumer (p50/p95/p99/max): the RTPLatency program in this package;
#   - `h264kit stream` beside `ffmpeg -re -c copy -f rtp` and `gst-launch-1.0 ... rtph264pay ! udpsink
#     sync=true` doing the same work (a 10-second file at real time to a loopback port): CPU
#     seconds and peak RSS (GNU time), and stream's peak RSS on a file 4x as long (flat in size);
#   - an RTSP server (`stream --loop rtsp://`) with 1, 4 and 16 clients (`h264kit receive rtsp://`):
#     its peak RSS (/proc VmHWM) against issue #17's 32 MB + 4 MB a client.
# Usage: Benchmarks/rtp-latency.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
swift build -c release --product h264kit >/dev/null
(cd Benchmarks && swift build -c release --product RTPLatency >/dev/null)
bin="$PWD/.build/release/h264kit"
latency="$PWD/Benchmarks/.build/release/RTPLatency"
live="$work/1080p-live-300.mp4"
long="$work/1080p-live-1200.mp4"
for pair in "300 $live" "1200 $long"; do
    set -- $pair
    [ -f "$2" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=6:allf=t" -frames:v "$1" \
        -c:v libx264 -preset veryfast -tune zerolatency -b:v 8M -maxrate 8M -bufsize 4M -g 60 -pix_fmt yuv420p "$2"
done

echo "== RTPLatency (release)"
"$latency" "$live" 300

echo "== the same work: a 10-second 1080p file at real time over RTP to a loopback port"
port=$(( (RANDOM % 10000 + 30000) & ~1 ))
sink() { timeout 30 "$bin" receive "rtp://127.0.0.1:$port" - --timeout 2 > /dev/null 2>&1; }
measure() {   # name command...
    local name="$1"; shift
    sink & local receiver=$!
    until grep -qi ":$(printf '%04X' $port) " /proc/net/udp; do sleep 0.01; done
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > /dev/null 2>&1 || true
    wait $receiver || true
    read -r wall user system rss < "$work/time.txt"
    printf '  %-28s wall %6.2f s, CPU %5.2f s, peak RSS %4d MB\n' "$name" "$wall" "$(echo "$user + $system" | bc)" $((rss / 1024))
}
measure "h264kit stream" "$bin" stream "$live" "rtp://127.0.0.1:$port"
measure "ffmpeg -re -f rtp" ffmpeg -v error -re -i "$live" -c copy -f rtp -rtpflags send_bye "rtp://127.0.0.1:$port"
measure "gst-launch rtph264pay" gst-launch-1.0 -q filesrc location="$live" ! qtdemux ! h264parse ! rtph264pay config-interval=-1 ! udpsink host=127.0.0.1 port=$port sync=true
measure "h264kit stream (4x longer)" "$bin" stream "$long" "rtp://127.0.0.1:$port" --rate 4

echo "== RTSP server (stream --loop rtsp://): peak RSS with N clients (h264kit receive rtsp:// --frames 300, UDP)"
for clients in 1 4 16; do
    rport=$((port + 100))
    "$bin" stream "$live" "rtsp://127.0.0.1:$rport/live" --loop > /dev/null 2>&1 & server=$!
    until grep -qi ":$(printf '%04X' $rport) " /proc/net/tcp; do sleep 0.01; done
    pids=()
    for _ in $(seq "$clients"); do timeout 60 "$bin" receive "rtsp://127.0.0.1:$rport/live" - --frames 300 > /dev/null 2>&1 & pids+=($!); done
    wait "${pids[@]}" || true
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$server/status)
    kill -INT $server; wait $server || true
    printf '  %2d clients: server peak RSS %4d MB (bar: %d MB)\n' "$clients" $((hwm / 1024)) $((32 + 4 * clients))
done
