// Seeds 001 and 002: time in media is a rational number, not a floating-point one. MediaTime is
// CMTime: a 64-bit value over a 32-bit timescale, exact under addition, subtraction and
// comparison across timescales; it rounds only when asked to change timescale, and says so;
// it has special values (invalid, ±infinity, indefinite) that arithmetic respects. TimeRange
// is CMTimeRange. Run it: every line printed is what the walk-through claims (a test checks
// this output).
//
//     swift run MediaTimeBasics
import H264Kit

// 1. A frame of NTSC video lasts 1001/30000 s: exact as a MediaTime, not as a Double.
let frame = MediaTime(value: 1001, timescale: 30000)
print("one frame at 29.97 fps: \(frame)")
print("three frames: \(frame * 3)")
print("ten frames in a 90 kHz clock: \((frame * 10).converted(toTimescale: 90_000))")

// 2. Sums across timescales are exact: a third of a second (1/3) plus a frame at 25 fps
//    (1/25) is 28/75 s, and no rounding flag is set.
let sum = MediaTime(value: 1, timescale: 3) + MediaTime(value: 1, timescale: 25)
print("1/3 + 1/25 = \(sum), rounded: \(sum.hasBeenRounded)")

// 3. Floating point drifts; rationals do not. 30000 frames of 1001/30000 s are exactly 1001 s.
var exact = MediaTime.zero, approximate = 0.0
for _ in 0..<30000 {
    exact += frame
    approximate += 1001.0 / 30000.0
}
print("30000 frames: \(exact) exactly; as Doubles \(approximate) s (off by \(abs(approximate - 1001)) s)")

// 4. Comparison is by value, whatever the timescales: 1/2 == 45000/90000.
print("1/2 == 45000/90000: \(MediaTime(value: 1, timescale: 2) == MediaTime(value: 45000, timescale: 90000))")
print("one frame < 1/29 s: \(frame < MediaTime(value: 1, timescale: 29))")

// 5. Changing timescale may round: the method is chosen, and the result says it was rounded.
let third = MediaTime(value: 1, timescale: 3)
for method: MediaTime.RoundingMethod in [.halfAwayFromZero, .towardZero, .towardPositiveInfinity] {
    let converted = third.converted(toTimescale: 1000, rounding: method)
    print("1/3 s in milliseconds, \(method): \(converted.value)/\(converted.timescale), rounded: \(converted.hasBeenRounded)")
}
print("1/3 s in a timescale of 30: \(third.converted(toTimescale: 30)) (exact: not rounded)")

// 6. Special values: infinity absorbs numbers; invalid spreads; indefinite stays indefinite.
print("+infinity - 5 s: \(MediaTime.positiveInfinity - MediaTime(value: 5, timescale: 1))")
print("invalid + 1 s: \(MediaTime.invalid + MediaTime(value: 1, timescale: 1))")
print("indefinite + 1 s: \(MediaTime.indefinite + MediaTime(value: 1, timescale: 1))")
print("+infinity > any number: \(MediaTime.positiveInfinity > MediaTime(value: Int64.max, timescale: 1))")

// 7. Time ranges: a clip from 10 s lasting 5 s; what it contains; where two ranges meet.
let clip = TimeRange(start: MediaTime(value: 10, timescale: 1), duration: MediaTime(value: 5, timescale: 1))
let other = TimeRange(start: MediaTime(value: 12, timescale: 1), end: MediaTime(value: 20, timescale: 1))
print("clip: \(clip), ends at \(clip.end)")
print("contains 14.999 s: \(clip.contains(MediaTime(value: 14999, timescale: 1000))), contains 15 s: \(clip.contains(MediaTime(value: 15, timescale: 1)))")
print("intersection with 12-20 s: \(clip.intersection(other)); union: \(clip.union(other))")

// 8. Frame rates and frame numbers: frame 45 of 29.97 fps video starts at 45 × 1001/30000 s.
let rate = FrameRate(30000, 1001)
print("frame 45 at \(rate): \(rate.frameDuration * 45)")
