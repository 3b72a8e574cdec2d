@testable import H264Streaming
import Testing

/// The one media-to-wall-clock mapping of an RTSP session's streams (``SessionAnchor``), from
/// which every stream's sender report is made.
@Suite("SessionAnchor")
struct SessionAnchorTests {
    @Test("the first unit fixes the mapping: a later, less-delayed unit does not move it (each stream's first report, made at a different moment, puts the media at the same wall-clock time: CI saw a relay's sound 42 ms off when it moved)")
    func theFirstUnitFixesIt() {
        let anchor = SessionAnchor(canonicalName: "test")
        #expect(anchor.mediaTime(atDate: 1000) == nil, "nothing before a unit")
        // The picture's first unit goes 40 ms late (under load), media time 5 at 1000.04.
        anchor.sent(mediaTime: 5, at: 1000.04)
        let videoReport = anchor.mediaTime(atDate: 1000.5)
        // The sound's units go on time; its first report comes after them.
        for step in 1...50 { anchor.sent(mediaTime: 5 + Double(step) * 0.02, at: 1000 + Double(step) * 0.02) }
        let audioReport = anchor.mediaTime(atDate: 1000.5)
        #expect(videoReport == audioReport)
        #expect(abs((videoReport ?? 0) - 5.46) < 1e-9)
    }

    @Test("units more than a second away from the mapping (a jump in the timestamps, a pause), two in a row, set it again; one alone, or one within it, does not", arguments: [1.5, -1.5, 0.9, -0.9])
    func aJumpSetsItAgain(jump: Double) {
        let anchor = SessionAnchor(canonicalName: "test")
        anchor.sent(mediaTime: 0, at: 100)
        anchor.sent(mediaTime: 10, at: 110 + jump)
        #expect(abs((anchor.mediaTime(atDate: 110 + jump) ?? .nan) - (10 + jump)) < 1e-9, "one unit does not move it")
        anchor.sent(mediaTime: 10.02, at: 110.02 + jump)
        let expected = abs(jump) > 1 ? 10.02 : 10.02 + jump
        #expect(abs((anchor.mediaTime(atDate: 110.02 + jump) ?? .nan) - expected) < 1e-9)
    }

    @Test("one medium 1.5 s off the other (its units interleaved with the other's) leaves the mapping where the first unit put it")
    func aMediumOffByMoreThanASecond() {
        let anchor = SessionAnchor(canonicalName: "test")
        for step in 0..<100 {
            let time = Double(step) * 0.02
            anchor.sent(mediaTime: time, at: 100 + time)
            anchor.sent(mediaTime: time, at: 101.5 + time)
        }
        #expect(abs((anchor.mediaTime(atDate: 105) ?? .nan) - 5) < 1e-9)
    }

    @Test("the anchor time is the first candidate's")
    func anchorTime() {
        let anchor = SessionAnchor(canonicalName: "test")
        #expect(anchor.time(first: 3) == 3)
        #expect(anchor.time(first: 1) == 3)
    }
}
