#!/usr/bin/env python3
"""Compare `h264kit inspect --json` with ffprobe's figures in a corpus MANIFEST.tsv.

Usage: scripts/corpus-inspect.py CORPUS_DIR [H264KIT_BINARY]
Prints one line per mismatch and a closing "N passed, N failed" line.
"""
import csv, json, os, subprocess, sys

corpus = sys.argv[1]
binary = sys.argv[2] if len(sys.argv) > 2 else ".build/release/h264kit"
rows = list(csv.DictReader(open(os.path.join(corpus, "MANIFEST.tsv")), delimiter="\t"))
passed = failed = 0
for row in rows:
    path = row["path"]
    if path.endswith((".mp4", ".mov")):
        continue
    full = os.path.join(corpus, path)
    try:
        p = subprocess.run([binary, "inspect", "--json", full], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"HANG {path}"); failed += 1; continue
    if p.returncode < 0 or p.returncode > 1:
        print(f"CRASH {path} rc={p.returncode} {p.stderr.decode()[-300:]}"); failed += 1; continue
    if not row["profile"]:
        # ffmpeg could not open the file. FMO streams are valid (libavcodec lacks FMO): they must
        # parse cleanly. Anything else must give an error or a warning, never a crash.
        if "FMO map_type" in row["notes"]:
            ok = p.returncode == 0 and json.loads(p.stdout)["pictureCount"] > 0
        else:
            ok = p.returncode != 0 or b"warning" in p.stderr or b"error" in p.stderr
        print(f"{'ok' if ok else 'SILENT'} (ffmpeg failed) {path}: rc={p.returncode} {p.stderr.decode().strip().splitlines()[-1:] }")
        passed += ok; failed += not ok
        continue
    try:
        j = json.loads(p.stdout)
    except Exception:
        print(f"NOJSON {path} rc={p.returncode} {p.stderr.decode()[-300:]}"); failed += 1; continue
    w, h = row["WxH"].split("x")
    expect = {"profile": row["profile"], "level": int(row["level"]), "width": int(w), "height": int(h),
              "pixelFormat": row["pix_fmt"], "frameCount": int(row["frames"] or 0)}
    diffs = {k: (j.get(k), v) for k, v in expect.items() if j.get(k) != v}
    if diffs:
        failed += 1
        print(f"MISMATCH {path}: " + ", ".join(f"{k} ours={a} ffprobe={b}" for k, (a, b) in diffs.items()) + f" | rc={p.returncode} | {row['notes'][:120]}")
    else:
        passed += 1
print(f"{passed} passed, {failed} failed")
