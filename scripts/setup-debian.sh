#!/usr/bin/env bash
# Installs everything H264Kit needs on a fresh Debian 12 machine: the C libraries it builds
# against (x264, libavcodec/libavutil/libswscale) and the tools its tests and benchmarks compare
# against (x264, ffmpeg/ffprobe, mediainfo, hyperfine). Swift itself is expected on PATH.
set -euo pipefail
packages=(pkg-config libx264-dev libavcodec-dev libavutil-dev libswscale-dev x264 ffmpeg mediainfo hyperfine python3 time)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v swift >/dev/null || { echo "swift is not on PATH: install Swift 6.1 or later (https://swift.org/install)" >&2; exit 1; }
