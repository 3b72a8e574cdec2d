#!/usr/bin/env bash
# Lip sync over a long run (issue #42: "a 10-minute stream, offset drift <= 1 audio frame"):
# a 10-minute 320x240 file with 48 kHz stereo AAC, at real time over RTSP (TCP interleaved), in
# three recordings made at once:
#   1. our RTSP server (`stream FILE rtsp://`), ffmpeg as the client (`-c copy` into an MP4);
#   2. our RTSP server, our client (`receive rtsp://`);
#   3. ffmpeg publishing (`-re -f rtsp`) to our ingest (`receive --listen`).
# Each recording is matched against the source frame by frame (Benchmarks/lipsync.py: every AAC
# frame by its bytes, every picture by its place): the lip sync error over the first and the
# last 10 s, its drift and range. Exit 1 if any drift is over one AAC frame (21.3 ms).
# Usage: Benchmarks/lipsync-drift.sh [WORKDIR] [SECONDS]   (default .build/bench-data, 600)
source "$(dirname "$0")/data.sh" "$@"
seconds="${2:-600}"
av="$work/lipsync-${seconds}s.mp4"
[ -f "$av" ] || ffmpeg -v error -y -f lavfi -i "testsrc2=size=320x240:rate=25" -f lavfi -i "sine=frequency=440:sample_rate=48000:beep_factor=4" \
    -t "$seconds" -c:v libx264 -preset veryfast -g 50 -pix_fmt yuv420p -c:a aac -b:a 96k -ac 2 "$av"
out="$work/lipsync-out"
rm -rf "$out"; mkdir -p "$out"
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
served=$(port); ingest=$(port)
"$bin" stream "$av" "rtsp://127.0.0.1:$served/live" > "$out/server.log" 2>&1 & server=$!
"$bin" receive --listen --timeout 30 "rtsp://127.0.0.1:$ingest/live" "$out/ingest.mp4" > "$out/ingest.log" 2>&1 & listener=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$served") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$ingest") 2>/dev/null; do sleep 0.1; done
timeout $((seconds + 120)) ffmpeg -v error -rtsp_transport tcp -i "rtsp://127.0.0.1:$served/live" -map 0 -c copy -y "$out/ffmpeg-client.mp4" & client=$!
"$bin" receive --rtsp-transport tcp --timeout 30 "rtsp://127.0.0.1:$served/live" "$out/our-client.mp4" > "$out/our-client.log" 2>&1 & ours=$!
timeout $((seconds + 120)) ffmpeg -v error -re -i "$av" -map 0 -c copy -f rtsp -rtsp_transport tcp "rtsp://127.0.0.1:$ingest/live" & publisher=$!
wait $client $ours $publisher $listener
kill $server 2>/dev/null || true
status=0
for recording in ffmpeg-client our-client ingest; do
    echo "== $recording"
    python3 Benchmarks/lipsync.py "$av" "$out/$recording.mp4" || status=1
done
exit $status
