#!/usr/bin/env python3
"""The attacker's campaign: every subcommand of h264kit on mutated copies of real streams,
movies and Y4M files, checked for what must never happen:

  - a signal death or a Swift runtime trap (exit 128+signal, "Fatal error" on stderr);
  - more than 20 s on an input under 1 MB;
  - more than 1 GB of peak RSS, or, for decode, more than 1.25x the peak RSS of
    `ffmpeg -threads 1 -f null -` on the same input (plus 32 MB for the runtimes' own start-up);
  - exit 0 from a command that printed an error, or exit != 0 with nothing said.

Usage: Fuzz/campaign.py [--runs N] [--seed S] [--bin PATH] [--keep DIR] [--corpus DIR]
Inputs that break a rule are kept in --keep (default .build/fuzz/campaign) with a line in
findings.tsv; the summary prints counts per subcommand and the worst decode RSS ratios.
Sources: Tests/Fixtures, Samples/Media, movies and Y4M made from them with ffmpeg, and the
files of --corpus (a MANIFEST.tsv corpus) when given."""
import argparse, glob, json, os, random, shutil, signal, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=500)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--bin", default=os.path.join(root, ".build/release/h264kit"))
parser.add_argument("--keep", default=os.path.join(root, ".build/fuzz/campaign"))
parser.add_argument("--corpus")
parser.add_argument("--decode-only", action="store_true", help="only decode (the RSS comparison with ffmpeg)")
args = parser.parse_args()
rng = random.Random(args.seed)
os.makedirs(args.keep, exist_ok=True)
work = tempfile.mkdtemp(prefix="h264kit-campaign-")
TIME_LIMIT, RSS_LIMIT, RSS_RATIO, RSS_SLACK = 20.0, 1 << 30, 1.25, 32 << 20


def measured(argv, timeout=60):
    """Runs argv; returns (status, seconds, peak RSS in bytes, stderr); a negative status is
    the signal that ended it. The peak RSS is the child's own, from wait4."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        errfile = os.open(os.path.join(work, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(devnull, 0); os.dup2(devnull, 1); os.dup2(errfile, 2)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    deadline = start + timeout
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.01)
    seconds = time.monotonic() - start
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    err = open(os.path.join(work, "stderr"), "rb").read().decode(errors="replace")
    return code, seconds, usage.ru_maxrss * 1024, err


def ffmpeg(*a):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *a], check=True)


# Sources: streams, movies of every layout, Y4M.
streams = sorted(glob.glob(os.path.join(root, "Tests/Fixtures/*.264")) + glob.glob(os.path.join(root, "Samples/Media/*.264")))
movies = sorted(glob.glob(os.path.join(root, "Tests/Fixtures/*.mp4")))
for stream in [s for s in streams if os.path.basename(s) in ("cisco-bframe-cabac.264", "jcodec-random_1.264", "testsrc2-320x240-bframes.264")]:
    name = os.path.splitext(os.path.basename(stream))[0]
    for suffix, extra in [(".mp4", []), ("-frag.mp4", ["-movflags", "frag_keyframe+empty_moov"]), ("-tc.mov", ["-timecode", "01:00:00:00"])]:
        movie = os.path.join(work, name + suffix)
        ffmpeg("-r", "25", "-f", "h264", "-i", stream, "-c", "copy", *extra, movie)
        movies.append(movie)
y4ms = []
for fmt in ["yuv420p", "yuv422p10le"]:
    path = os.path.join(work, fmt + ".y4m")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-frames:v", "3", "-pix_fmt", fmt, "-strict", "-1", path)
    y4ms.append(path)
if args.corpus:
    for line in open(os.path.join(args.corpus, "MANIFEST.tsv")).read().splitlines()[1:]:
        path = os.path.join(args.corpus, line.split("\t")[0])
        if os.path.getsize(path) < 1 << 20:
            (movies if path.endswith((".mp4", ".mov")) else streams).append(path)


class Bits:
    """Exp-Golomb bit reading and writing, for rewriting an SPS (ITU-T H.264 §7.3.2.1.1)."""
    def __init__(self, data=b""):
        self.bits = "".join(f"{byte:08b}" for byte in data)
        self.at = 0
        self.out = []

    def u(self, n):
        value = int(self.bits[self.at:self.at + n] or "0", 2)
        self.at += n
        return value

    def ue(self):
        zeros = 0
        while self.at < len(self.bits) and self.bits[self.at] == "0":
            zeros += 1
            self.at += 1
        self.at += 1
        return (1 << zeros) - 1 + self.u(zeros)

    def put(self, value, n):
        self.out.append(format(value, f"0{n}b") if n else "")

    def put_ue(self, value):
        code = format(value + 1, "b")
        self.out.append("0" * (len(code) - 1) + code)

    def copy_rest(self, reader):
        self.out.append(reader.bits[reader.at:])

    def bytes(self):
        bits = "".join(self.out)
        bits += "0" * (-len(bits) % 8)
        return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def unescape(data):
    return data.replace(b"\x00\x00\x03", b"\x00\x00")


def escape(data):
    out, zeros = bytearray(), 0
    for byte in data:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def resized_sps(nal, width_mbs, height_units, refs):
    """The SPS NAL unit `nal` with another picture size and reference count, every other field
    kept (the VUI and what follows copied bit for bit); None for a layout not handled."""
    r, w = Bits(unescape(nal[1:])), Bits()
    profile = r.u(8); w.put(profile, 8); w.put(r.u(8), 8); w.put(r.u(8), 8); w.put_ue(r.ue())
    if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
        chroma = r.ue(); w.put_ue(chroma)
        if chroma == 3:
            w.put(r.u(1), 1)
        w.put_ue(r.ue()); w.put_ue(r.ue()); w.put(r.u(1), 1)
        if r.u(1):
            return None  # scaling matrices: not rewritten
        w.put(0, 1)
    w.put_ue(r.ue())
    poc = r.ue(); w.put_ue(poc)
    if poc == 0:
        w.put_ue(r.ue())
    elif poc == 1:
        return None
    r.ue(); w.put_ue(refs)
    w.put(r.u(1), 1)
    r.ue(); r.ue(); w.put_ue(width_mbs - 1); w.put_ue(height_units - 1)
    frame_mbs_only = r.u(1); w.put(frame_mbs_only, 1)
    if not frame_mbs_only:
        w.put(r.u(1), 1)
    w.put(r.u(1), 1)
    if r.u(1):
        for _ in range(4):
            r.ue()
    w.put(0, 1)  # no cropping
    w.copy_rest(r)
    return nal[:1] + escape(w.bytes())


def huge_pictures(data):
    """The stream with its first SPS declaring a large picture (up to the size limit and
    past it) and many reference frames: what makes a decoder allocate."""
    start = data.find(b"\x00\x00\x01\x67")
    if start < 0:
        return data
    end = data.find(b"\x00\x00\x01", start + 4)
    end = len(data) if end < 0 else end
    nal = data[start + 3:end].rstrip(b"\x00")
    width = rng.choice([512, 1024, 2048, 2110, rng.randrange(1, 2111)])
    height = rng.choice([256, 272, 544, 1024, rng.randrange(1, 2111)])
    sps = resized_sps(nal, width, height, rng.choice([1, 4, 16]))
    return data if sps is None else data[:start + 3] + sps + data[start + 3 + len(nal):]


def mutate(data, kind):
    if kind == "stream" and rng.random() < 0.25:
        data = huge_pictures(data)
        if rng.random() < 0.5:
            return data
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 8, 32])):
        kind = rng.randrange(7)
        if not data:
            data += bytes(rng.randrange(256) for _ in range(16))
        i = rng.randrange(len(data))
        if kind == 0:
            data[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[i] = rng.choice([0, 1, 0x7F, 0x80, 0xFF])
        elif kind == 2:
            value = rng.choice([b"\xff" * 8, b"\x7f" + b"\xff" * 7, b"\x00" * 4, b"\x00\x00\x00\x01", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"])
            data[i:i + len(value)] = value
        elif kind == 3:
            n = rng.randrange(1, 64)
            data[i:i] = data[i:i + n]  # duplicate a run
        elif kind == 4:
            del data[i:i + rng.randrange(1, 256)]
        elif kind == 5:
            data = data[:i] if rng.random() < 0.3 else data
        else:
            j = rng.randrange(len(data))
            data[i], data[j] = data[j], data[i]
    return bytes(data)


def commands(path, kind):
    out = os.path.join(work, "out")
    if args.decode_only:
        return [["decode", path, "-o", "/dev/null", "--threads", "1"], ["decode", path, "-o", "/dev/null"]] if kind != "y4m" else []
    if kind == "stream":
        return [["inspect", path], ["inspect", "--json", path], ["inspect", "--nals", path], ["inspect", "--samples", path],
                ["mux", path, out + ".mp4"], ["mux", "--fragment-duration", "1", path, out + ".mp4"],
                ["decode", path, "-o", "/dev/null", "--threads", "1"], ["decode", path, "-o", "/dev/null"],
                ["decode", path, "-o", out + ".framemd5", "--every", "0.1"],
                ["transcode", path, out + "-t.mp4", "--preset", "ultrafast"], ["split", path, out + "-segs", "--segment-duration", "0.5"]]
    if kind == "movie":
        return [["inspect", path], ["inspect", "--json", path], ["demux", path, out + ".264"], ["timecode", "show", path],
                ["timecode", "show", "--frames", path], ["decode", path, "-o", "/dev/null", "--threads", "1"],
                ["decode", path, "-o", "/dev/null"], ["decode", path, "-o", out + ".png", "--frames", "1"],
                ["transcode", path, out + "-t.mp4", "--preset", "ultrafast"], ["split", path, out + "-segs", "--segment-duration", "0.5"],
                ["concat", path, path, out + "-c.mp4"]]
    return [["encode", path, "-o", out + ".264", "--preset", "ultrafast"], ["encode", path, "-o", out + ".mp4", "--preset", "ultrafast"]]


findings, counts, ratios = [], {}, []
sources = [(p, "stream") for p in streams] + [(p, "movie") for p in movies] + [(p, "y4m") for p in y4ms]
for number in range(args.runs):
    source, kind = rng.choice(sources)
    data = mutate(open(source, "rb").read(), kind)
    suffix = {"stream": ".264", "movie": os.path.splitext(source)[1], "y4m": ".y4m"}[kind]
    path = os.path.join(work, f"input{suffix}")
    open(path, "wb").write(data)
    ffmpeg_rss = None
    for command in commands(path, kind):
        code, seconds, rss, err = measured([args.bin] + command, timeout=60)
        name = " ".join([command[0]] + [word for word in command[1:] if word.startswith("--") and word not in ("--preset",)])
        counts[name] = counts.get(name, 0) + 1
        problems = []
        if code < 0 or code >= 128:
            problems.append(f"signal {-code if code < 0 else code - 128}")
        if "Fatal error" in err or "fatalError" in err:
            problems.append("Swift runtime trap")
        if seconds > TIME_LIMIT and len(data) < 1 << 20:
            problems.append(f"{seconds:.1f} s")
        if rss > RSS_LIMIT:
            problems.append(f"{rss >> 20} MB RSS")
        if code != 0 and not err.strip():
            problems.append(f"exit {code} without a message")
        if command[0] == "decode" and kind != "y4m":
            if ffmpeg_rss is None:
                fcode, _, ffmpeg_rss, _ = measured(["ffmpeg", "-nostdin", "-v", "quiet", "-threads", "1"] + (["-f", "h264"] if kind == "stream" else []) + ["-i", path, "-f", "null", "-"])
            ratios.append((rss / max(ffmpeg_rss, 1), rss, ffmpeg_rss, " ".join(command[:1] + command[3:]), number))
            if rss > RSS_RATIO * ffmpeg_rss + RSS_SLACK:
                problems.append(f"decode peak RSS {rss >> 20} MB vs ffmpeg -threads 1 {ffmpeg_rss >> 20} MB")
        if problems:
            kept = os.path.join(args.keep, f"{number:05d}-{os.path.basename(source)}{suffix if not source.endswith(suffix) else ''}")
            shutil.copy(path, kept)
            findings.append((kept, " ".join(command), "; ".join(problems), err.strip().splitlines()[-1][:200] if err.strip() else ""))
            print(f"FINDING {kept}: h264kit {' '.join(command)}: {'; '.join(problems)}", flush=True)
    if (number + 1) % 100 == 0:
        print(f"{number + 1} inputs, {sum(counts.values())} runs, {len(findings)} findings", flush=True)

with open(os.path.join(args.keep, "findings.tsv"), "a") as f:
    for finding in findings:
        f.write("\t".join(finding) + "\n")
ratios.sort(reverse=True)
print(json.dumps({"inputs": args.runs, "runs": counts, "findings": len(findings),
                  "worstDecodeRSS": [{"ratio": round(r, 2), "h264kitMB": a >> 20, "ffmpegMB": b >> 20, "command": c, "input": n} for r, a, b, c, n in ratios[:5]]},
                 indent=1))
shutil.rmtree(work)
sys.exit(1 if findings else 0)
