#!/usr/bin/env bash
# Installs everything H264Kit needs on a fresh Debian 12 machine: the C libraries it builds
# against (x264, libavcodec/libavutil/libswscale) and the tools its tests and benchmarks compare
# against (x264, ffmpeg/ffprobe, mediainfo, hyperfine; GStreamer and its RTSP server as RTP/RTSP peers;
# headless Chromium as the display; nginx as the caching proxy in front of the HLS origin), and Ray (PyPI `ray`) with the namespace tools
# its cluster tests run in (unshare, ip). Swift itself is expected on PATH.
set -euo pipefail
packages=(pkg-config libx264-dev libavcodec-dev libavutil-dev libswscale-dev x264 ffmpeg mediainfo hyperfine python3 python3-pip time util-linux iproute2 curl openssl nghttp2-client python3-h2
          gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav
          gstreamer1.0-rtsp gir1.2-gst-rtsp-server-1.0 python3-gi chromium nginx)
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
# Python packages from PyPI for the python3 on PATH (which may not be Debian's): Ray for the
# chunked-transcode driver (scripts/ray/transcode.py) and its test; h2 for the hostile HTTP/2
# peers (scripts/h2-hostile.py; Debian's python3-h2 serves Debian's own Python only).
pip=(python3 -m pip install --quiet --disable-pip-version-check)
# Debian's own Python refuses pip outside a virtual environment unless told.
python3 -c "import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')) else 1)" && pip+=(--break-system-packages)
if ! python3 -c "import ray" 2>/dev/null || ! command -v ray >/dev/null; then
    "${pip[@]}" ray
    command -v pyenv >/dev/null && pyenv rehash || true
fi
python3 -c "import h2" 2>/dev/null || "${pip[@]}" h2
command -v swift >/dev/null || { echo "swift is not on PATH: install Swift 6.1 or later (https://swift.org/install)" >&2; exit 1; }
