#!/usr/bin/env python3
"""Chunked transcode on Ray: `h264kit transcode IN OUT --chunks N` with the chunks as Ray tasks.

    scripts/ray/transcode.py IN OUT (--chunks N | --chunk-duration S) [--h264kit PATH] [--work DIR] -- [transcode options]

The driver splits IN at clean sync samples (`h264kit split --chunks N` or `--segment-duration S`,
the chunking `transcode --chunks N` or `--chunk-duration S` uses), runs one Ray task per chunk (`h264kit transcode` on a worker, one
decoder thread, the options after `--`), retrying a failed chunk up to --retries times, then
joins the chunks on the driver (`h264kit concat --carry-over-from IN`: IN's timecode, metadata
and rotation). With the same options the result is byte-identical to `transcode --chunks N`.

Inputs and pieces live in --work, a path every worker sees (one machine, or a shared file
system across a cluster); h264kit must be at the same path on every worker. The driver joins
the cluster named by RAY_ADDRESS (`ray start --head` first), or starts a local one.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

import ray


@ray.remote(max_retries=3, retry_exceptions=True)
def transcode_chunk(h264kit, segment, output, options, inject_failure=False):
    """One chunk: `h264kit transcode` with a single decoder thread (as --chunks runs it)."""
    started = time.monotonic()
    marker = output + ".attempted"
    if inject_failure and not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError(f"{segment}: injected failure of the first attempt (--inject-failures)")
    result = subprocess.run([h264kit, "transcode", segment, output, "--decoder-threads", "1"] + options,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{segment}: h264kit transcode exited {result.returncode}: {result.stderr.strip()}")
    # What the transcode said besides its summary line (damaged frames concealed or skipped, say).
    warnings = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith(output + ":")]
    return {"segment": os.path.basename(segment), "seconds": time.monotonic() - started, "node": ray.get_runtime_context().get_node_id(),
            "warnings": warnings}


def limit_options(options):
    """The reading limits among the transcode options (--max-pixels N, --max-samples N), which the split needs too."""
    limits = []
    for number, option in enumerate(options):
        name = option.split("=", 1)[0]
        if name in ("--max-pixels", "--max-samples"):
            limits += [option] if "=" in option else options[number:number + 2]
    return limits


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    cutting = parser.add_mutually_exclusive_group(required=True)
    cutting.add_argument("--chunks", type=int, help="cut into this many chunks")
    cutting.add_argument("--chunk-duration", type=float, help="cut into chunks of about this many seconds")
    parser.add_argument("--h264kit", default=shutil.which("h264kit") or os.path.join(os.path.dirname(__file__), "../../.build/release/h264kit"))
    parser.add_argument("--work", help="a directory every worker can read and write (default: a new one in TMPDIR)")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--report", help="write the timing report (JSON) here as well as to standard output")
    parser.add_argument("--inject-failures", action="store_true", help="for tests: each chunk's first attempt fails (retries must recover)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    options = argv[split + 1:]  # h264kit transcode options (--preset, --crf, --threads ...)
    h264kit = os.path.abspath(args.h264kit)
    source = os.path.abspath(args.input)
    # Absolute paths: a worker's working directory is not the driver's.
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="h264kit-ray-")
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    try:
        segments = os.path.join(work, "segments")
        cut = ["--chunks", str(args.chunks)] if args.chunks else ["--segment-duration", repr(args.chunk_duration)]
        subprocess.run([h264kit, "split", source, segments] + cut + limit_options(options), check=True)
        with open(os.path.join(segments, "index.json")) as file:
            index = json.load(file)
        split_seconds = time.monotonic() - started

        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
        task = transcode_chunk.options(max_retries=args.retries)
        inputs = [os.path.join(segments, s["file"]) for s in index["segments"]]
        outputs = [os.path.join(work, "encoded-" + s["file"]) for s in index["segments"]]
        reports = ray.get([task.remote(h264kit, i, o, options, args.inject_failures) for i, o in zip(inputs, outputs)])
        encode_seconds = time.monotonic() - started - split_seconds
        for report in reports:
            for warning in report["warnings"]:
                print(f"{report['segment']}: {warning}", file=sys.stderr)

        # The source's timecode, metadata and rotation (an Annex-B source has none: concat says so).
        subprocess.run([h264kit, "concat"] + outputs + [args.output, "--carry-over-from", source], check=True)
        total = time.monotonic() - started
        report = json.dumps({"chunks": len(inputs), "split_seconds": round(split_seconds, 3), "encode_seconds": round(encode_seconds, 3),
                             "total_seconds": round(total, 3), "tasks": reports}, indent=2)
        print(report)
        if args.report:
            with open(args.report, "w") as file:
                file.write(report + "\n")
    except subprocess.CalledProcessError as error:
        print(f"transcode.py: {' '.join(error.cmd[:2])} failed (exit {error.returncode})", file=sys.stderr)
        return 1
    except ray.exceptions.RayTaskError as error:
        print(f"transcode.py: a chunk failed after its retries: {error.cause if hasattr(error, 'cause') else error}", file=sys.stderr)
        return 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
