#!/usr/bin/env bash
# The whole test suite under a sanitizer: scripts/sanitize.sh address | thread [swift test args]
# address: ASan with leak checking (LeakSanitizer); thread: TSan. Each builds into its own
# scratch directory (.build-asan, .build-tsan) so the normal build is left alone. Fails on any
# report. The corpus runs too when H264KIT_CORPUS is set.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/sanitize.sh address|thread [swift test arguments]}"
shift
case "$kind" in
    address) scratch=.build-asan
             export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
             export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}" ;;
    thread)  scratch=.build-tsan
             export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}" ;;
    *) echo "usage: scripts/sanitize.sh address|thread" >&2; exit 64 ;;
esac
# The Swift crash handler and the sanitizers both want the fatal signals.
export SWIFT_BACKTRACE=enable=no
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
swift test --sanitize="$kind" --scratch-path "$scratch" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|SUMMARY: (Address|Thread|Leak)Sanitizer" "$log"; then
    echo "sanitize: $kind sanitizer reports (see above)" >&2
    exit 1
fi
[ "$status" -eq 0 ] || { echo "sanitize: tests failed under $kind (exit $status)" >&2; exit "$status"; }
echo "sanitize: $kind clean"
