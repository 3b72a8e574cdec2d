#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + libFuzzer, release) and runs each for a time budget.
#   Fuzz/run.sh                          every target for 60 s
#   Fuzz/run.sh -t 30 FuzzMovie          one target for 30 s
#   Fuzz/run.sh -r 10000000 FuzzAnnexB   one target for 10 million executions (-runs)
#   Fuzz/run.sh --replay                 only run the regression inputs (Fuzz/Regressions/<target>
#                                        and the hostile fixtures in Tests/Fixtures/Hostile)
#   Fuzz/run.sh --replay-corpus          run every input of the kept corpus once (with ASan: the
#                                        inputs a faster run without it found)
#   Fuzz/run.sh --merge FuzzSampleBuffers
#                                        shrink the kept corpus to the inputs that keep its coverage
#                                        (libFuzzer's -merge=1; the old corpus stays beside it as
#                                        <target>.unmerged); a long run from a merged corpus runs
#                                        faster (FuzzSampleBuffers: 57,167 inputs to 5,130; it began
#                                        at 2,260 a second where the unmerged run had slowed to 880)
#   Fuzz/run.sh -s none -r 10000000 FuzzSampleBuffers
#                                        libFuzzer without ASan (-sanitize=fuzzer alone: about 4x
#                                        the executions a second; traps, Swift's checks, timeouts
#                                        and RSS past the limit still stop it, a stray read through
#                                        an unsafe pointer, a leak or a single malloc past the
#                                        limit does not: libFuzzer checks those through the
#                                        sanitizer's allocator), for long runs; follow it with
#                                        --replay-corpus
# Fails on any crash, trap, leak, timeout (10 s an input; H264KIT_FUZZ_TIMEOUT=S for long runs at
# low priority beside other work, which a starved input could otherwise exceed) or out-of-memory (a single malloc over
# 256 MB, or 1.5 GB RSS). New crash inputs land in .build/fuzz/artifacts/<target>/; copy them to
# Fuzz/Regressions/<target>/ and Tests/Fixtures/Hostile/ once fixed.
# The corpus each run grows is kept in .build/fuzz/corpus/<target> (seeded by make-seeds.py).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=60
runs=""
timeout="${H264KIT_FUZZ_TIMEOUT:-10}"
replay=false
replayCorpus=false
merge=false
sanitizer=address
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        -t) budget="$2"; shift 2 ;;
        -r) runs="$2"; shift 2 ;;
        -s) sanitizer="$2"; shift 2 ;;
        --replay) replay=true; shift ;;
        --replay-corpus) replayCorpus=true; shift ;;
        --merge) merge=true; shift ;;
        *) targets+=("$1"); shift ;;
    esac
done
case "$sanitizer" in
    address) sanitize=fuzzer,address; scratch=build ;;
    none) sanitize=fuzzer; scratch=build-fuzzer-only ;;
    *) echo "fuzz: -s address|none" >&2; exit 2 ;;
esac
all=(FuzzAnnexB FuzzParameterSets FuzzAVCC FuzzSampleBuffers FuzzMovie FuzzY4M FuzzRTP FuzzSDP FuzzRTSP FuzzTransportStream FuzzAudio)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

work=.build/fuzz
build=(swift build -c release --package-path Fuzz --scratch-path "$work/$scratch"
       -Xswiftc -sanitize="$sanitize" -Xswiftc -g -Xswiftc -use-ld=lld)   # gold fails on the debug info
mkdir -p "$work"
"${build[@]}" >"$work/$scratch.log" 2>&1 || { grep -vE "prohibited flag" "$work/$scratch.log" | tail -30; echo "fuzz: the build failed" >&2; exit 1; }
bin="$("${build[@]}" --show-bin-path)"
for target in "${all[@]}"; do   # (again when a target was added since they were made)
    [ -d "$work/seeds/$target" ] || { python3 Fuzz/make-seeds.py "$work/seeds"; break; }
done

export SWIFT_BACKTRACE=enable=no   # the Swift crash handler and ASan both want the signal
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
declare -A dictionary=([FuzzAnnexB]=annexb [FuzzParameterSets]=annexb [FuzzSampleBuffers]=annexb [FuzzAVCC]=annexb [FuzzMovie]=movie [FuzzY4M]=y4m [FuzzRTP]=rtp [FuzzSDP]=sdp [FuzzRTSP]=rtsp [FuzzTransportStream]=ts [FuzzAudio]=audio)
# The inputs that failed once: the target's own crash files, and the hostile fixtures the
# unit tests replay (movies for the movie target, streams for the stream targets).
regressionInputs() {
    local target="$1"
    [ -d "Fuzz/Regressions/$target" ] && find "Fuzz/Regressions/$target" -type f
    case "$target" in
        FuzzMovie) find Tests/Fixtures/Hostile -name '*.mp4' -o -name '*.mov' ;;
        FuzzAnnexB|FuzzSampleBuffers|FuzzParameterSets) find Tests/Fixtures/Hostile -name '*.264' ;;
        FuzzY4M) find Tests/Fixtures/Hostile -name '*.y4m' ;;
        FuzzAVCC) find Tests/Fixtures/Hostile -name '*.avcc' ;;
        FuzzRTP) find Tests/Fixtures/Hostile -name '*.rtp' ;;
        FuzzSDP) find Tests/Fixtures/Hostile -name '*.sdp' ;;
        FuzzRTSP) find Tests/Fixtures/Hostile -name '*.rtsp' ;;
        FuzzTransportStream) find Tests/Fixtures/Hostile -name '*.ts' ;;
        FuzzAudio) find Tests/Fixtures/Hostile -name '*.aac' ;;
    esac
}
failed=()
for target in "${targets[@]}"; do
    mapfile -t regressions < <(regressionInputs "$target" | sort)
    maxLength=32768
    [ "$target" = FuzzMovie ] && maxLength=262144
    [ "$target" = FuzzTransportStream ] && maxLength=262144
    if $replayCorpus; then
        corpus="$work/corpus/$target"
        if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
            echo "== $target: no corpus in $corpus to replay" >&2
            failed+=("$target")
            continue
        fi
        echo "== $target: running the $(ls "$corpus" | wc -l) inputs of its corpus once ($sanitizer)"
        mkdir -p "$work/artifacts/$target"
        "$bin/$target" -runs=0 -rss_limit_mb=1536 -malloc_limit_mb=256 -timeout="$timeout" -max_len=1048576 \
            -artifact_prefix="$work/artifacts/$target/" "$corpus" >"$work/$target.corpus.log" 2>&1 \
            || { failed+=("$target"); tail -30 "$work/$target.corpus.log"; }
        continue
    fi
    if $merge; then
        corpus="$work/corpus/$target"
        [ -d "$corpus" ] || { echo "== $target: no corpus in $corpus to merge" >&2; failed+=("$target"); continue; }
        rm -rf "$corpus.merging"; mkdir -p "$corpus.merging"
        echo "== $target: merging the $(ls "$corpus" | wc -l) inputs of its corpus"
        if "$bin/$target" -merge=1 -max_len="$maxLength" -rss_limit_mb=1536 -malloc_limit_mb=256 -timeout="$timeout" \
            "$corpus.merging" "$corpus" >"$work/$target.merge.log" 2>&1; then
            rm -rf "$corpus.unmerged"; mv "$corpus" "$corpus.unmerged"; mv "$corpus.merging" "$corpus"
            echo "   $(ls "$corpus" | wc -l) inputs kept; the old corpus is in $corpus.unmerged"
        else
            failed+=("$target"); tail -30 "$work/$target.merge.log"; rm -rf "$corpus.merging"
        fi
        continue
    fi
    if $replay; then
        if [ ${#regressions[@]} -gt 0 ]; then
            echo "== $target: replaying ${#regressions[@]} regression inputs"
            "$bin/$target" -rss_limit_mb=1536 -malloc_limit_mb=256 -timeout="$timeout" "${regressions[@]}" >"$work/$target.log" 2>&1 || { failed+=("$target"); tail -30 "$work/$target.log"; }
        fi
        continue
    fi
    corpus="$work/corpus/$target"
    artifacts="$work/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    limit=(-max_total_time="$budget")
    [ -z "$runs" ] || limit=(-runs="$runs")
    seeds=("$work/seeds/$target")
    if [ ${#regressions[@]} -gt 0 ]; then
        rm -rf "$work/regressions/$target"; mkdir -p "$work/regressions/$target"
        # (named for their folder too: a crash file and its hostile fixture may share a name)
        for input in "${regressions[@]}"; do cp "$input" "$work/regressions/$target/$(basename "$(dirname "$input")")-$(basename "$input")"; done
        seeds+=("$work/regressions/$target")
    fi
    if [ -n "$runs" ]; then echo "== $target ($runs runs)"; else echo "== $target ($budget s)"; fi
    if "$bin/$target" "${limit[@]}" -dict="Fuzz/Dictionaries/${dictionary[$target]}.dict" -max_len="$maxLength" \
        -rss_limit_mb=1536 -malloc_limit_mb=256 -timeout="$timeout" -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$work/$target.log" 2>&1; then
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/$target.log" | tr '\n' ' ' || true; echo
    else
        failed+=("$target")
        grep -B2 -A30 -E "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|Fatal error|fuzz check failed|ParseDictionaryFile" "$work/$target.log" | head -60 || true
        ls "$artifacts" || true
    fi
done
if [ ${#failed[@]} -gt 0 ]; then echo "fuzz: failed: ${failed[*]} (logs in $work)" >&2; exit 1; fi
echo "fuzz: every target ran clean"
