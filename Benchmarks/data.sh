# Shared by the benchmark scripts (sourced): the release build and the ~500 MB 1080p stream.
# Sets $work, $bin and $big. Usage inside a script: source "$(dirname "$0")/data.sh" "$@"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="${1:-.build/bench-data}"
mkdir -p "$work"
swift build -c release --product h264kit >/dev/null
bin="$PWD/.build/release/h264kit"

big="$work/1080p-500MB.264"
if [ ! -f "$big" ]; then
    echo "making $big ..."
    part="$work/1080p-part.264"
    ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=25" -frames:v 100 -pix_fmt yuv420p -f yuv4mpegpipe - |
        x264 --quiet --demuxer y4m --preset ultrafast --qp 8 --keyint 50 -o "$part" -
    : > "$big"
    while [ "$(stat -c %s "$big")" -lt 500000000 ]; do cat "$part" >> "$big"; done
    rm -f "$part"
fi
