#!/usr/bin/env python3
"""Lip sync of a recording against its source, over the whole recording (issue #42: "a 10-minute
stream, offset drift <= 1 audio frame").

Usage: Benchmarks/lipsync.py SOURCE RECORDING [--audio-frame SECONDS]

Every AAC frame of the recording is found in the source by its bytes (ffprobe's packet MD5s; a
run of identical frames, silence, is matched in order), every picture by its place in decoding
order counted from the first picture whose bytes match (depacketizing may change how a picture's
NAL units are framed, never which pictures arrive over TCP). For each matched packet the shift
is its time in the recording less its time in the source; the lip sync error at a moment is the
sound's shift less the picture's (interpolated between pictures). Printed: the error over the
first and the last 10 s, its drift (last less first), and its range; exit 1 when the drift is
over one audio frame (default 1024/48000 s)."""
import argparse, bisect, json, subprocess, sys, statistics


def packets(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_packets", "-show_data_hash", "MD5", "-of", "json",
                          "-show_entries", "packet=stream_index,pts_time,dts_time,data_hash:stream=index,codec_type", path],
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    kinds = {s["index"]: s["codec_type"] for s in data["streams"]}
    result = {"video": [], "audio": []}
    for p in data["packets"]:
        kind = kinds.get(p["stream_index"])
        if kind in result and p.get("pts_time") not in (None, "N/A"):
            result[kind].append((float(p["pts_time"]), p.get("dts_time"), p["data_hash"]))
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("recording")
    parser.add_argument("--audio-frame", type=float, default=1024 / 48000)
    args = parser.parse_args()
    src, rec = packets(args.source), packets(args.recording)

    # Sound: each recorded frame found in the source at or after the previous match.
    by_hash = {}
    for index, (_, _, digest) in enumerate(src["audio"]):
        by_hash.setdefault(digest, []).append(index)
    audio, last = [], -1
    for time, _, digest in rec["audio"]:
        candidates = by_hash.get(digest, [])
        at = bisect.bisect_right(candidates, last)
        if at == len(candidates):
            continue
        last = candidates[at]
        audio.append((src["audio"][last][0], time))
    # Pictures in decoding order (dts), aligned at the first whose bytes match.
    def decode_order(items):
        return sorted(items, key=lambda p: float(p[1]) if p[1] not in (None, "N/A") else p[0])
    sv, rv = decode_order(src["video"]), decode_order(rec["video"])
    start = next(((i, [p[2] for p in sv].index(r[2])) for i, r in enumerate(rv) if r[2] in {p[2] for p in sv}), None)
    if start is None or not audio:
        sys.exit(f"no picture or no sound of the recording found in the source ({len(audio)} sound frames matched)")
    ri, si = start
    video = [(sv[si + k][0], rv[ri + k][0]) for k in range(min(len(rv) - ri, len(sv) - si))]
    video.sort()
    vsrc = [v[0] for v in video]

    def video_shift(t):
        k = bisect.bisect_left(vsrc, t)
        k = min(max(k, 1), len(video) - 1)
        (s0, r0), (s1, r1) = video[k - 1], video[k]
        d0, d1 = r0 - s0, r1 - s1
        return d0 if s1 == s0 else d0 + (d1 - d0) * (min(max(t, s0), s1) - s0) / (s1 - s0)

    errors = [(s, (r - s) - video_shift(s)) for s, r in audio if vsrc[0] <= s <= vsrc[-1]]
    if not errors:
        sys.exit("no sound frame within the pictures' span")
    first = [e for s, e in errors if s <= errors[0][0] + 10]
    final = [e for s, e in errors if s >= errors[-1][0] - 10]
    head, tail = statistics.median(first), statistics.median(final)
    drift = tail - head
    values = [e for _, e in errors]
    print(f"{args.recording}: {len(audio)}/{len(src['audio'])} sound frames and {len(video)}/{len(sv)} pictures matched, "
          f"{errors[-1][0] - errors[0][0]:.1f} s of the source")
    print(f"  lip sync error (sound shift less picture shift): first 10 s {head * 1000:+.2f} ms, last 10 s {tail * 1000:+.2f} ms, "
          f"drift {drift * 1000:+.2f} ms (limit {args.audio_frame * 1000:.2f}), range {min(values) * 1000:+.2f}..{max(values) * 1000:+.2f} ms")
    sys.exit(0 if abs(drift) <= args.audio_frame else 1)


if __name__ == "__main__":
    main()
