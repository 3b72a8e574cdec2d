import MediaCore
import Testing

struct TimecodeRate: Sendable, CustomStringConvertible {
    var numerator: Int32
    var denominator: Int32
    var dropFrame: Bool
    var description: String { "\(numerator)/\(denominator)\(dropFrame ? " DF" : "")" }

    static let all: [TimecodeRate] = [
        .init(numerator: 24000, denominator: 1001, dropFrame: false),
        .init(numerator: 24, denominator: 1, dropFrame: false),
        .init(numerator: 25, denominator: 1, dropFrame: false),
        .init(numerator: 30000, denominator: 1001, dropFrame: true),
        .init(numerator: 30000, denominator: 1001, dropFrame: false),
        .init(numerator: 30, denominator: 1, dropFrame: false),
        .init(numerator: 48000, denominator: 1001, dropFrame: false),
        .init(numerator: 48, denominator: 1, dropFrame: false),
        .init(numerator: 50, denominator: 1, dropFrame: false),
        .init(numerator: 60000, denominator: 1001, dropFrame: true),
        .init(numerator: 60000, denominator: 1001, dropFrame: false),
        .init(numerator: 60, denominator: 1, dropFrame: false),
        .init(numerator: 120000, denominator: 1001, dropFrame: true),
        .init(numerator: 120, denominator: 1, dropFrame: false),
    ]
}

@Suite("SMPTE timecode")
struct TimecodeTests {
    /// Every frame of 24 hours: the label of frame n+1 is the label of frame n counted on by
    /// one (the independent rule: carry at the frame quanta, and in drop-frame skip the first
    /// quanta/15 labels of each minute but every tenth), and each label converts back to n.
    @Test("every frame of 24 hours round-trips", arguments: TimecodeRate.all)
    func wholeDay(rate: TimecodeRate) throws {
        let format = try TimecodeFormatDescription(frameRate: (rate.numerator, rate.denominator), dropFrame: rate.dropFrame)
        let quanta = format.frameQuanta
        let skip = rate.dropFrame ? quanta / 15 : 0
        var expected = (h: 0, m: 0, s: 0, f: 0)
        var failures = 0
        for number in 0..<format.framesPerDay {
            let label = try format.timecode(forFrameNumber: number)
            if label.hours != expected.h || label.minutes != expected.m || label.seconds != expected.s || label.frames != expected.f {
                failures += 1
                if failures < 5 { Issue.record("\(rate): frame \(number) is \(label), expected \(expected)") }
            }
            if try format.frameNumber(for: label) != number {
                failures += 1
                if failures < 5 { Issue.record("\(rate): \(label) converts back to a different frame than \(number)") }
            }
            // Count on by one label.
            expected.f += 1
            if expected.f == quanta {
                expected.f = 0; expected.s += 1
                if expected.s == 60 {
                    expected.s = 0; expected.m += 1
                    if expected.m == 60 { expected.m = 0; expected.h += 1 }
                    if expected.m % 10 != 0 { expected.f = skip }
                }
            }
        }
        #expect(failures == 0)
        #expect(expected == (24, 0, 0, 0))
        // The 24-hour wrap: the day's frame count is midnight again.
        #expect(try format.timecode(forFrameNumber: format.framesPerDay).description == (rate.dropFrame ? "00:00:00;00" : "00:00:00:00"))
    }

    @Test("drop-frame skips labels at each minute but every tenth")
    func dropFrameSkips() throws {
        let ntsc = try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true)
        #expect(try ntsc.timecode(forFrameNumber: 1799).description == "00:00:59;29")
        #expect(try ntsc.timecode(forFrameNumber: 1800).description == "00:01:00;02")
        #expect(try ntsc.timecode(forFrameNumber: 17981).description == "00:09:59;29")
        #expect(try ntsc.timecode(forFrameNumber: 17982).description == "00:10:00;00")
        #expect(try ntsc.timecode(forFrameNumber: 17983).description == "00:10:00;01")
        #expect(try ntsc.timecode(forFrameNumber: 107892).description == "01:00:00;00")
        // TN2310 listing 3's value, as FFmpeg stores it.
        #expect(try ntsc.frameNumber(for: Timecode(parsing: "01:30:15;07")) == 162295)
        #expect(ntsc.framesPerDay == 2_589_408)
        #expect(throws: TimecodeError.self) { try ntsc.frameNumber(for: Timecode(parsing: "00:01:00;00")) }
        #expect(throws: TimecodeError.self) { try ntsc.frameNumber(for: Timecode(parsing: "00:01:00;01")) }
        #expect(try ntsc.frameNumber(for: Timecode(parsing: "00:10:00;00")) == 17982)

        let ntsc60 = try TimecodeFormatDescription(frameRate: (60000, 1001), dropFrame: true)
        #expect(try ntsc60.timecode(forFrameNumber: 3599).description == "00:00:59;59")
        #expect(try ntsc60.timecode(forFrameNumber: 3600).description == "00:01:00;04")
        #expect(throws: TimecodeError.self) { try ntsc60.frameNumber(for: Timecode(parsing: "00:01:00;03")) }

        let ntsc120 = try TimecodeFormatDescription(frameRate: (120000, 1001), dropFrame: true)
        #expect(try ntsc120.timecode(forFrameNumber: 7200).description == "00:01:00;08")
    }

    @Test("TN2310's non-drop example, and the frame quanta of fractional rates")
    func nonDrop() throws {
        let thirty = try TimecodeFormatDescription(frameRate: (30, 1), dropFrame: false)
        #expect(try thirty.frameNumber(for: Timecode(parsing: "00:00:12:15")) == 375)
        #expect(try TimecodeFormatDescription(frameRate: (24000, 1001), dropFrame: false).frameQuanta == 24)
        #expect(try TimecodeFormatDescription(frameRate: (48000, 1001), dropFrame: false).frameQuanta == 48)
        #expect(try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: false).frameQuanta == 30)
    }

    @Test("negative times and the 24-hour wrap follow the flags")
    func negativeAndWrap() throws {
        let wrapping = try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: false)
        #expect(try wrapping.timecode(forFrameNumber: -1).description == "23:59:59:24")
        #expect(try wrapping.timecode(forFrameNumber: 25 * 86400 + 26).description == "00:00:01:01")
        let negative = try TimecodeFormatDescription(frameDuration: MediaTime(value: 1, timescale: 25), frameQuanta: 25,
                                                     flags: [.negativeTimesOK])
        #expect(try negative.timecode(forFrameNumber: -26).description == "-00:00:01:01")
        #expect(try negative.frameNumber(for: Timecode(parsing: "-00:00:01:01")) == -26)
        #expect(try negative.timecode(forFrameNumber: 25 * 3600 * 30).description == "30:00:00:00")
        let neither = try TimecodeFormatDescription(frameDuration: MediaTime(value: 1, timescale: 25), frameQuanta: 25, flags: [])
        #expect(throws: TimecodeError.self) { try neither.timecode(forFrameNumber: -1) }
        #expect(throws: TimecodeError.self) { try wrapping.frameNumber(for: Timecode(parsing: "-00:00:01:00")) }
        // tmcd holds 8-bit hours without the wrap.
        #expect(throws: TimecodeError.self) { try neither.timecode(forFrameNumber: 25 * 3600 * 256) }
        let counter = try TimecodeFormatDescription(frameDuration: MediaTime(value: 1, timescale: 25), frameQuanta: 5, flags: [.counter])
        #expect(counter.counterValue(forFrameNumber: 12) == 2)
        #expect(throws: TimecodeError.self) { try counter.timecode(forFrameNumber: 12) }
    }

    @Test("parsing and printing")
    func parsing() throws {
        let dropped = try Timecode(parsing: "01:30:15;07")
        #expect(dropped == Timecode(hours: 1, minutes: 30, seconds: 15, frames: 7, isDropFrame: true))
        #expect(dropped.description == "01:30:15;07")
        #expect(try Timecode(parsing: "01:30:15.07").isDropFrame)
        #expect(try Timecode(parsing: "01:30:15,07").isDropFrame)
        #expect(try Timecode(parsing: "10:00:00:00").description == "10:00:00:00")
        #expect(try Timecode(parsing: "-00:00:01:02").isNegative)
        for bad in ["25:61:00:00", "00:00:60:00", "1:2:3", "00:00:00:", "aa:00:00:00", "00;00:00:00", "00:00:00:00:00", ""] {
            #expect(throws: TimecodeError.self, "\(bad)") { try Timecode(parsing: bad) }
        }
    }

    @Test("bad values and formats are refused with the reason")
    func refusals() throws {
        let twentyFive = try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: false)
        let hours = #expect(throws: TimecodeError.self) { try twentyFive.frameNumber(for: Timecode(hours: 25, minutes: 0, seconds: 0, frames: 0)) }
        #expect(hours?.reason.contains("hours 25") == true)
        let frames = #expect(throws: TimecodeError.self) { try twentyFive.frameNumber(for: Timecode(parsing: "00:00:00:25")) }
        #expect(frames?.reason.contains("frames 25") == true)
        let drop = #expect(throws: TimecodeError.self) { try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: true) }
        #expect(drop?.reason.contains("drop-frame") == true)
        #expect(throws: TimecodeError.self) { try TimecodeFormatDescription(frameRate: (30, 1), dropFrame: true) }
        #expect(throws: TimecodeError.self) { try twentyFive.frameNumber(for: Timecode(parsing: "00:00:00;05")) }
        let short = #expect(throws: TimecodeError.self) { try twentyFive.frameNumber(sampleData: [0, 1, 2]) }
        #expect(short?.reason.contains("3") == true)
    }

    @Test("sample data: big-endian Int32 (tmcd) and Int64 (tc64)")
    func sampleData() throws {
        let tmcd = try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true)
        #expect(try tmcd.sampleData(forFrameNumber: 162295) == [0x00, 0x02, 0x79, 0xF7])
        #expect(try tmcd.frameNumber(sampleData: [0xFF, 0xFF, 0xFF, 0xFE]) == -2)
        #expect(throws: TimecodeError.self) { try tmcd.sampleData(forFrameNumber: 1 << 40) }
        let tc64 = try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: false, sampleFormat: .timeCode64)
        let bytes = try tc64.sampleData(forFrameNumber: 1 << 40)
        #expect(bytes.count == 8)
        #expect(try tc64.frameNumber(sampleData: bytes) == 1 << 40)
        #expect(tc64.frameNumber(100, advancedBy: MediaTime(value: 3, timescale: 1)) == 175)
    }
}
