#!/usr/bin/env bash
# Builds every sample (their own package, on H264Kit's public API with the tool's trait off) and
# runs each on the embedded media, checking what it printed or wrote where that is deterministic
# and the files it wrote with ffprobe/ffmpeg. CI runs this after the tests; it needs the tool
# built in ../.build/debug (for StreamToNetwork's receiver), ffmpeg, and chromium.
set -euo pipefail
cd "$(dirname "$0")"
samples="$(pwd)"
media="$samples/Media/testsrc2-320x240-bframes.264"
# The README's library quick start is lines of AnnexBToMP4, so that it compiles.
awk '/^## Library quick start/ { on = 1 } on && /^```swift/ { inside = 1; next } inside && /^```/ { exit } inside' ../README.md |
    while IFS= read -r line; do
        [ -z "$line" ] || grep -qxF -- "$line" Sources/AnnexBToMP4/main.swift || { echo "samples: README quick start line not in AnnexBToMP4: $line" >&2; exit 1; }
    done
# H264Streaming's live origin example is lines of LiveOrigin, likewise.
awk '/^Live: a file published as if it were live/ { on = 1 } on && /^```swift/ { inside = 1; next } inside && /^```/ { exit } inside' \
    ../Sources/H264Streaming/H264Streaming.docc/H264Streaming.md |
    while IFS= read -r line; do
        [ -z "$line" ] || grep -qxF -- "$line" Sources/LiveOrigin/main.swift || { echo "samples: H264Streaming's live example line not in LiveOrigin: $line" >&2; exit 1; }
    done
# In the main package's build directory: its dependencies (NIO, Hummingbird, BoringSSL, ...)
# are built there already, and only H264Kit's modules are compiled again (with the tool's trait
# off). Measured: 2.5 min instead of a build of everything in a directory of its own.
build=(swift build --scratch-path ../.build)
"${build[@]}" 2>&1 | grep -vE "^\[[0-9]+/[0-9]+\]" | tail -3
bin="$("${build[@]}" --show-bin-path)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "samples: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$work/$1.out" || fail "$1: its output lacks \"$2\""; }
frames() { ffmpeg -v error -xerror -i "$1" -f framemd5 - | grep -vc '^#'; }
run() {
    local name="$1"; shift
    echo "== $name $*"
    "$bin/$name" "$@" > "$work/$name.out" 2>&1 || { cat "$work/$name.out"; fail "$name exited $?"; }
    head -12 "$work/$name.out"
}

run AnnexBToMP4 "$media" annexb.mp4
expect AnnexBToMP4 "presentation times read back: identical"
[ "$(frames annexb.mp4)" -eq 90 ] || fail "AnnexBToMP4: ffmpeg does not decode 90 frames from its MP4"

run DecodeFrames "$media" thumbnails
expect DecodeFrames "90 pictures decoded"
[ "$(ls thumbnails/*.png | wc -l)" -eq 3 ] || fail "DecodeFrames: expected 3 thumbnails (one a second of 3 s)"
ffmpeg -v error -xerror -i thumbnails/frame-0.png -f null - || fail "DecodeFrames: a thumbnail ffmpeg cannot read"

run CompressToMovie compressed.mp4
expect CompressToMovie "presentation times read back: identical to those given"
expect CompressToMovie "b"
[ "$(frames compressed.mp4)" -eq 100 ] || fail "CompressToMovie: ffmpeg does not decode 100 frames"

run MultiPassEncode
expect MultiPassEncode "1 pass "
expect MultiPassEncode "2 passes"

run TimecodeTrack "$media"
for tag in tmcd tc64; do
    expect TimecodeTrack "TimecodeTrack-$tag.mov: 90 frames, $tag track, start 01:00:59;28"
done
expect TimecodeTrack "01:01:00;02"   # 01:00:59;29 is followed by ;02: frames 00 and 01 are dropped
[ "$(ffprobe -v error -show_entries stream_tags=timecode -of csv=p=0 TimecodeTrack-tmcd.mov | head -1)" = "01:00:59;28" ] \
    || fail "TimecodeTrack: ffprobe does not read the start timecode"

run CustomMetadata "$media"
expect CustomMetadata "mdta:com.example.camera.model = H264Kit Sample Camera"
expect CustomMetadata "udta:xmpl = custom bytes, kept as they are"
expect CustomMetadata "an mdta key in an MP4: refused"
[ "$(ffprobe -v error -show_entries format_tags=com.example.camera.model -of csv=p=0 CustomMetadata.mov)" = "H264Kit Sample Camera" ] \
    || fail "CustomMetadata: ffprobe does not read the mdta key"

run MediaTimeBasics
diff -u "$samples/Expected/MediaTimeBasics.txt" "$work/MediaTimeBasics.out" || fail "MediaTimeBasics: its output is not the walk-through's"

# DisplayInBrowser waits for a page: headless Chromium opens the URL it prints.
echo "== DisplayInBrowser $media"
"$bin/DisplayInBrowser" "$media" > display.out 2>display.log & display=$!
for _ in $(seq 200); do grep -q '^http://' display.out && break; sleep 0.05; done
url="$(grep -m1 '^http://' display.out)" || fail "DisplayInBrowser printed no URL"
chromium --headless=new --no-sandbox --no-first-run --disable-extensions --user-data-dir="$work/chromium" \
    --autoplay-policy=no-user-gesture-required "$url" >/dev/null 2>&1 & browser=$!
status=0
timeout 60 tail --pid="$display" -f /dev/null || status=$?
kill "$browser" 2>/dev/null || true; wait "$browser" 2>/dev/null || true
wait "$display" || status=$?
cat display.out
[ "$status" -eq 0 ] || { cat display.log; fail "DisplayInBrowser exited $status"; }
grep -qE "the page: [0-9]+ frames presented, [0-9]+ dropped late, [0-9]+ flushed by the seek, 0 decode errors" display.out || fail "DisplayInBrowser: no clean report from the page"

# StreamToNetwork sends its 100 encoded test-pattern frames over loopback RTP to `h264kit
# receive`, which must record all of them, and ffmpeg must decode the recording cleanly.
echo "== StreamToNetwork"
port=$(( (RANDOM % 10000 + 30000) & ~1 ))
"$samples/../.build/debug/h264kit" receive "rtp://127.0.0.1:$port" recording.mp4 --timeout 20 2>recording.log & receiver=$!
until grep -qi ":$(printf '%04X' "$port") " /proc/net/udp; do sleep 0.05; done
"$bin/StreamToNetwork" "rtp://127.0.0.1:$port" >stream.sdp
wait "$receiver"
cat recording.log
[ "$(frames recording.mp4)" -eq 100 ] || fail "StreamToNetwork: the recording does not decode to 100 frames"

# LiveOrigin publishes the sample stream as if live (3 s) and serves it; ffmpeg reads the
# playlist from the start (-live_start_index 0) to its end and must decode all 90 frames.
echo "== LiveOrigin"
port=$(( RANDOM % 10000 + 30000 ))
"$bin/LiveOrigin" "$media" "$port" > origin.out 2>&1 & origin=$!
for _ in $(seq 200); do grep -q '^http://' origin.out && break; sleep 0.05; done
playlist="$(grep -m1 '^http://' origin.out)" || { cat origin.out; fail "LiveOrigin printed no URL"; }
for _ in $(seq 100); do curl -sf -o /dev/null "$playlist" && break; sleep 0.1; done
decoded=$(ffmpeg -v error -live_start_index 0 -i "$playlist" -f framemd5 - | grep -vc '^#')
wait "$origin" || { cat origin.out; fail "LiveOrigin exited $?"; }
cat origin.out
[ "$decoded" -eq 90 ] || fail "LiveOrigin: ffmpeg decoded $decoded of 90 frames through the live playlist"
grep -q "published and served" origin.out || fail "LiveOrigin: no closing count"

echo "samples: every sample built, ran and checked"
