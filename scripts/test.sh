#!/usr/bin/env bash
# Builds and runs every test, in two test processes at once:
#
# - the timely ones: every suite in a file that uses the `.timely` trait (servers, streams at
#   their pace, peers such as ffmpeg, GStreamer and Chromium, clients' timeouts); every suite
#   in such a file carries the trait, so that its tests run on the timely executor's threads;
# - the rest (the corpus, the file commands, the syntax and units), which is mostly CPU work.
#
# Why two processes: Swift's cooperative pool has one thread a core (two on the CI machine) and a
# parallel run fills it with blocking work; a real-time test in the same process then waits
# behind it, measured in CI as a server task resumed minutes late and a receiver ending for lack
# of packets its socket held. In a process of their own the timely tests share only the cores,
# and the rest runs at a lower priority (nice 10, its child processes too): it takes what the
# timely tests leave (they mostly wait for the clock and their peers), never their turn.
#
# Arguments are passed to `swift build` (e.g. `-c release`). Exit status: the rest's failure, else
# the timely tests'.
set -uo pipefail
cd "$(dirname "$0")/.."

swift build --build-tests "$@" || exit $?
# The test binary itself, twice (as `swift test` runs it: two `swift test` at once share SwiftPM's
# build database, and the second fails on its lock).
bin="$(swift build --show-bin-path "$@")/H264KitPackageTests.xctest"
[ -x "$bin" ] || { echo "test.sh: no test binary at $bin" >&2; exit 1; }
export NO_COLOR=1

# The timely suites: the types declared in the files that use the trait.
names=$(grep -l "\.timely" Tests/*/*.swift | grep -v "^Tests/TestSupport/" \
    | xargs grep -hoE "^(@Suite[^)]*\) )?(struct|enum|final class) [A-Za-z0-9_]+" \
    | awk '{ print $NF }' | sort -u | paste -sd'|' -)
[ -n "$names" ] || { echo "test.sh: no timely suites found" >&2; exit 1; }
timely="[./]($names)(/|$)"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The tests of a log that started and have not ended (the last cases started, for a
# parameterized one).
unfinished() {
    sed -nE 's/^(\[timely\] )?◇ Test (.*) started\.$/\2/p' "$1" | grep -v "^case " | sort > "$1.started"
    sed -nE 's/^(\[timely\] )?[✔✘➜] Test (.*) (passed|failed|skipped)( after .*|\.|:.*)?$/\2/p' "$1" | sort -u > "$1.ended"
    grep -Fxv -f "$1.ended" "$1.started"
    grep -E "◇ Test case .* started\.$" "$1" | tail -n 4 | sed 's/^/the last case started: /'
}

# A watchdog for each test process: one that prints nothing for TEST_STALL_SECONDS (600), or
# runs past TEST_TIME_LIMIT (3000 s), is ended, after saying which tests it had started and not
# ended, what its threads were waiting in and which child processes it had. (A test that waits
# forever otherwise ends only when CI's own time runs out, saying nothing.)
watchdog() {  # name pid log
    local name=$1 pid=$2 log=$3 start=$SECONDS quiet elapsed
    while kill -0 "$pid" 2>/dev/null; do
        sleep 10
        quiet=$(( $(date +%s) - $(stat -c %Y "$log" 2>/dev/null || date +%s) ))
        elapsed=$(( SECONDS - start ))
        if [ "$quiet" -ge "${TEST_STALL_SECONDS:-600}" ] || [ "$elapsed" -ge "${TEST_TIME_LIMIT:-3000}" ]; then
            {
                echo "test.sh: $name ended by its watchdog: $quiet s without output, $elapsed s in all"
                unfinished "$log" | sed "s/^/test.sh: $name still running: /"
                echo "test.sh: $name's threads wait in: $(for f in /proc/"$pid"/task/*/wchan; do cat "$f" 2>/dev/null; echo; done | sort | uniq -c | sort -rn | tr -s ' \n' ' ')"
                ps --ppid "$pid" -o pid=,stat=,etime=,args= 2>/dev/null | cut -c1-200 | sed "s/^/test.sh: $name's child: /"
            } | tee -a "$out/watchdog.log"
            kill -KILL "$pid"
            return
        fi
    done
}

# The timely tests run at most TIMELY_WIDTH at once (4): real-time tests beside heavy peers
# (Chromium, 300 HTTP followers, GStreamer) each slow the others on two cores.
"$bin" --testing-library swift-testing --parallel --experimental-maximum-parallelization-width "${TIMELY_WIDTH:-4}" --filter "$timely" \
    > >(sed -u 's/^/[timely] /' | tee "$out/timely.log") 2>&1 &
timely_pid=$!
nice -n 10 "$bin" --testing-library swift-testing --parallel --skip "$timely" > >(tee "$out/rest.log") 2>&1 &
rest_pid=$!
watchdog timely "$timely_pid" "$out/timely.log" &
timely_watchdog=$!
watchdog rest "$rest_pid" "$out/rest.log" &
rest_watchdog=$!
wait "$rest_pid"
rest=$?
wait "$timely_pid"
timely_status=$?
kill "$timely_watchdog" "$rest_watchdog" 2>/dev/null
wait "$timely_watchdog" "$rest_watchdog" 2>/dev/null
sleep 1  # the prefixing pipe's last lines

# What failed, last (a CI log is often read from its end): each failing test and the issues it
# recorded that were not known ones, with their detail lines.
for name in rest timely; do
    awk '/ recorded an issue/ { show = 1; print; next }
         show && /(^|\] )↳/ { print; next }
         { show = 0 }
         /✘ Test / && !/Test run with/ { print }' "$out/$name.log" \
        | sed "s/^/test.sh: $name failed: /" | tail -n 60
done
[ -f "$out/watchdog.log" ] && cat "$out/watchdog.log"
echo "test.sh: the rest: $(grep -E "^. Test run with" "$out/rest.log" | tail -n 1)"
echo "test.sh: the timely: $(grep -E "Test run with" "$out/timely.log" | tail -n 1 | sed 's/^\[timely\] //')"
if [ "$rest" -ne 0 ]; then exit "$rest"; fi
exit "$timely_status"
