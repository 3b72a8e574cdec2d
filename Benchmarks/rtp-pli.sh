#!/usr/bin/env bash
# Picture loss recovery at 25 fps (issue #17): `h264kit stream PICTURES.y4m rtp://RELAY` encodes
# live (keyint 1000: no scheduled IDR after the first), a relay on loopback forwards its RTP to
# `h264kit receive` and drops one packet in LOSS, and relays RTCP both ways (the receiver's PLI
# back to the sender). The recording's frames are read with ffprobe: for each gap, how many frame
# times from the first frame lost to the IDR picture that ends it (the bar: <= 2).
# Usage: Benchmarks/rtp-pli.sh [WORKDIR] [FRAMES] [LOSS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
frames="${2:-500}"
loss="${3:-100}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"
pictures="$work/pli-640x360-$frames.y4m"
[ -f "$pictures" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=640x360:rate=25" -frames:v "$frames" -pix_fmt yuv420p "$pictures"
port=$(( (RANDOM % 10000 + 30000) & ~1 )); relay=$((port + 10))
python3 - "$relay" "$port" "$loss" > "$work/pli-relay.log" <<'PY' & relayed=$!
import socket, sys, select, time
relay, target, loss = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtp.bind(("127.0.0.1", relay))
rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtcp.bind(("127.0.0.1", relay + 1))
sender, count, dropped, last = None, 0, 0, time.time()
while time.time() - last < 5:
    ready, _, _ = select.select([rtp, rtcp], [], [], 0.5)
    for s in ready:
        data, source = s.recvfrom(65536)
        last = time.time()
        if s is rtp:
            count += 1
            if count % loss == 0:
                dropped += 1
                continue
            rtp.sendto(data, ("127.0.0.1", target))
        elif source[1] == target + 1:
            if sender: rtcp.sendto(data, sender)
        else:
            sender = source
            rtcp.sendto(data, ("127.0.0.1", target + 1))
print(f"{count} packets, {dropped} dropped")
PY
"$bin" receive "rtp://127.0.0.1:$port" "$work/pli.mp4" --timeout 3 --stats "$work/pli.json" 2>"$work/pli-receive.log" & receiver=$!
until grep -qi ":$(printf '%04X' $port) " /proc/net/udp; do sleep 0.01; done
"$bin" stream "$pictures" "rtp://127.0.0.1:$relay" --preset veryfast --keyint 1000 -v 2>"$work/pli-stream.log"
wait $receiver; wait $relayed
cat "$work/pli-relay.log" "$work/pli-stream.log" "$work/pli-receive.log"
ffprobe -v error -select_streams v:0 -show_entries frame=pts,key_frame -of csv=p=0 "$work/pli.mp4" > "$work/pli-frames.csv"
python3 - "$work/pli-frames.csv" <<'PY'
import sys
rows = [line.strip().split(",") for line in open(sys.argv[1]) if line.strip()]
frames = [(int(r[1]), r[0] == "1") for r in rows]  # (pts, key)
step = min(b[0] - a[0] for a, b in zip(frames, frames[1:]))
gaps = [((b[0] - a[0]) // step - 1, b[1]) for a, b in zip(frames, frames[1:]) if b[0] - a[0] > step]
missing = sorted(g for g, _ in gaps)
print(f"{len(frames)} frames recorded, {len(gaps)} gaps, every one ended by an IDR picture: {all(k for _, k in gaps)}")
if missing:
    print(f"frame times from the first frame lost to the IDR picture: median {missing[len(missing) // 2]}, max {missing[-1]}, "
          f"within 2: {sum(1 for m in missing if m <= 2)} of {len(missing)}")
PY
