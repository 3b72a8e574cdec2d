@testable import H264Streaming
import Testing

/// The program date-time of live segments follows the media timeline, not the jitter of when
/// each segment's first sample arrived.
@Suite struct WallClockMappingTests {
    @Test func aLateSampleIsDatedByTheMediaTimeline() {
        var clock = WallClockMapping()
        #expect(clock.date(ofMediaTime: 10, arrival: 1000) == 1000)
        #expect(clock.date(ofMediaTime: 12, arrival: 1002.004) == 1002)
        // Held up 300 ms: still dated where the media puts it, before its arrival.
        #expect(clock.date(ofMediaTime: 14, arrival: 1004.3) == 1004)
        // Catching up: a sample on time keeps the mapping.
        #expect(clock.date(ofMediaTime: 16, arrival: 1006.001) == 1006)
    }

    @Test func anEarlierSampleMovesTheMappingBack() {
        var clock = WallClockMapping()
        // The first sample came 200 ms late; the next on time shows it.
        #expect(clock.date(ofMediaTime: 0, arrival: 100.2) == 100.2)
        #expect(clock.date(ofMediaTime: 2, arrival: 102) == 102)
        #expect(clock.date(ofMediaTime: 4, arrival: 104.1) == 104)
    }

    @Test func aJumpInTheTimestampsStartsAgain() {
        var clock = WallClockMapping()
        #expect(clock.date(ofMediaTime: 50, arrival: 1000) == 1000)
        // The timestamps go back (a source restarted): dated by arrival, then followed.
        #expect(clock.date(ofMediaTime: 0, arrival: 1002) == 1002)
        #expect(clock.date(ofMediaTime: 2, arrival: 1004.01) == 1004)
        // And forward by a minute.
        #expect(clock.date(ofMediaTime: 64, arrival: 1006) == 1006)
        // Slower than the wall clock by more than a second: started again from the arrival.
        #expect(clock.date(ofMediaTime: 66, arrival: 1009.5) == 1009.5)
    }
}

/// The inverse, for a sender report: the media time at a wall-clock moment; and NTP's form of it.
@Suite struct SenderReportClockTests {
    @Test func theMediaTimeAtAMoment() {
        var clock = WallClockMapping()
        #expect(clock.mediaTime(atDate: 1000) == nil)
        clock.date(ofMediaTime: 5, arrival: 1000.1)
        clock.date(ofMediaTime: 6, arrival: 1001)  // the first went 100 ms late
        #expect(clock.mediaTime(atDate: 1001.5) == 6.5)
    }

    @Test func ntpTimeOfSecondsSince1970() {
        // 2026-01-01T00:00:00.5Z: 1767225600.5 s since 1970.
        let ntp = NTPTime.time(secondsSince1970: 1_767_225_600.5)
        #expect(ntp >> 32 == 1_767_225_600 + 2_208_988_800)
        #expect(ntp & 0xFFFF_FFFF == 0x8000_0000)
    }
}

/// Over its window the mapping follows a source whose clock runs slow, without a jump.
@Suite struct WallClockMappingDriftTests {
    @Test func aSlowSourceIsFollowedSmoothly() {
        var clock = WallClockMapping()
        var dates: [Double] = []
        for second in 0...60 {
            // 1% slower than the wall clock: 0.6 s behind after a minute, under the restart's second.
            let media = Double(second)
            dates.append(clock.date(ofMediaTime: media, arrival: 1000 + media * 1.01))
        }
        let steps = zip(dates.dropFirst(), dates).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 > 0.99 && $0 < 1.03 }, "each date a second or so after the last: \(steps)")
        // Dated within the window's drift (10 s at 1%) of its arrival, never after it.
        let last = 1000 + 60 * 1.01
        #expect(dates.last! <= last && dates.last! >= last - 0.11, "\(dates.last!) against \(last)")
    }
}
