/// An SMPTE timecode value: hours, minutes, seconds and frames, with a sign (TN2310's
/// `CVSMPTETime`, without the packed negative bit in the minutes).
///
/// A value is only a label: which frame it names depends on a ``TimecodeFormatDescription``
/// (its frame quanta and flags). Printed as `HH:MM:SS:FF`, or `HH:MM:SS;FF` when it is a
/// drop-frame value, the SMPTE convention FFmpeg and Apple's tools follow.
public struct Timecode: Hashable, Sendable, CustomStringConvertible {
    /// Hours, 0 up to the format's maximum (23 with the 24-hour flag).
    public var hours: Int
    /// Minutes, 0...59.
    public var minutes: Int
    /// Seconds, 0...59.
    public var seconds: Int
    /// Frames within the second, below the format's frame quanta.
    public var frames: Int
    /// Whether the value is negative (printed with a leading `-`).
    public var isNegative: Bool
    /// Printed with `;` before the frames.
    public var isDropFrame: Bool
    /// A fraction of a frame, `subframes / subframeDivisor` (`CVSMPTETime.subframes`); 0 in
    /// timecode track samples, which count whole frames.
    public var subframes: Int
    /// The number of subframes in a frame (80 by default, as `CVSMPTETime` uses).
    public var subframeDivisor: Int

    /// A timecode with the given fields, unchecked: ``TimecodeFormatDescription/frameNumber(for:)`` checks them.
    public init(hours: Int, minutes: Int, seconds: Int, frames: Int, isNegative: Bool = false, isDropFrame: Bool = false,
                subframes: Int = 0, subframeDivisor: Int = 80) {
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.frames = frames
        self.isNegative = isNegative
        self.isDropFrame = isDropFrame
        self.subframes = subframes
        self.subframeDivisor = subframeDivisor
    }

    /// Parses `HH:MM:SS:FF` (non-drop), `HH:MM:SS;FF` or `HH:MM:SS.FF` / `HH:MM:SS,FF`
    /// (drop-frame, as FFmpeg and QuickTime print them), with an optional leading `-`.
    /// Fields are checked for their syntax and the 60-minute/60-second ranges here; frames
    /// and hours are checked against a format by ``TimecodeFormatDescription/frameNumber(for:)``.
    public init(parsing text: String) throws(TimecodeError) {
        var rest = Substring(text)
        let negative = rest.hasPrefix("-")
        if negative { rest = rest.dropFirst() }
        var fields: [Int] = []
        var separators: [Character] = []
        var digits = ""
        for character in rest {
            if character.isASCII, character.isNumber {
                digits.append(character)
                guard digits.count <= 5 else { throw TimecodeError("\"\(text)\": a field has too many digits") }
            } else if [":", ";", ".", ","].contains(character) {
                guard !digits.isEmpty else { throw TimecodeError("\"\(text)\": an empty field before '\(character)'") }
                fields.append(Int(digits)!)
                separators.append(character)
                digits = ""
            } else {
                throw TimecodeError("\"\(text)\": '\(character)' is not part of a timecode (HH:MM:SS:FF, or HH:MM:SS;FF for drop-frame)")
            }
        }
        guard !digits.isEmpty else { throw TimecodeError("\"\(text)\": the frames field is missing (HH:MM:SS:FF)") }
        fields.append(Int(digits)!)
        guard fields.count == 4 else {
            throw TimecodeError("\"\(text)\": \(fields.count) fields; a timecode has four, HH:MM:SS:FF (or HH:MM:SS;FF for drop-frame)")
        }
        guard separators[0] == ":", separators[1] == ":" else {
            throw TimecodeError("\"\(text)\": hours, minutes and seconds are separated by ':'")
        }
        let drop = separators[2] != ":"
        guard fields[1] < 60 else { throw TimecodeError("\"\(text)\": minutes \(fields[1]) are not below 60") }
        guard fields[2] < 60 else { throw TimecodeError("\"\(text)\": seconds \(fields[2]) are not below 60") }
        self.init(hours: fields[0], minutes: fields[1], seconds: fields[2], frames: fields[3], isNegative: negative, isDropFrame: drop)
    }

    /// `HH:MM:SS:FF`, or `HH:MM:SS;FF` for drop-frame, with a leading `-` when negative.
    public var description: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        return "\(isNegative ? "-" : "")\(two(hours)):\(two(minutes)):\(two(seconds))\(isDropFrame ? ";" : ":")\(two(frames))"
    }
}

/// A timecode value or format that cannot be: the reason names the field and the rule.
public struct TimecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, naming the field and the rule.
    public var reason: String
    /// An error with `reason` as its message.
    public init(_ reason: String) { self.reason = reason }
    /// The ``reason``.
    public var description: String { reason }
}

/// The flags of a timecode format description (TN2310; the `tmcd` sample entry's flags).
public struct TimecodeFlags: OptionSet, Hashable, Sendable {
    /// The flag bits, as the `tmcd` sample entry stores them.
    public let rawValue: UInt32
    /// Flags with bits `rawValue`.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Two (four at 59.94, eight at 119.88) frame labels are skipped at the start of each
    /// minute except every tenth, so the labels keep up with the NTSC clock.
    public static let dropFrame = TimecodeFlags(rawValue: 1 << 0)
    /// Hours wrap to 0 after 23.
    public static let twentyFourHourMax = TimecodeFlags(rawValue: 1 << 1)
    /// Negative values are allowed (printed with a leading `-`).
    public static let negativeTimesOK = TimecodeFlags(rawValue: 1 << 2)
    /// Counter mode: the sample counts ticks of ``TimecodeFormatDescription/frameQuanta`` frames.
    public static let counter = TimecodeFlags(rawValue: 1 << 3)
}

/// The format of a timecode track's samples (`CMTimeCodeFormatDescription`): the sample
/// type, the frame duration, the frames counted per second (the frame quanta) and the flags,
/// and optionally the name of the source tape (the reel).
///
/// It converts between frame numbers (what a timecode sample stores) and ``Timecode`` labels,
/// with the drop-frame rule (TN2310 listings 7 and 8, generalised to 59.94 and 119.88 as SMPTE
/// ST 12-1 and FFmpeg do: `frameQuanta / 15` labels skipped per minute).
public struct TimecodeFormatDescription: Hashable, Sendable, CustomStringConvertible {
    /// How a timecode sample stores its frame number.
    public enum SampleFormat: Hashable, Sendable, CaseIterable {
        /// `tmcd` (`kCMTimeCodeFormatType_TimeCode32`): a big-endian Int32 frame number.
        case timeCode32
        /// `tc64` (`kCMTimeCodeFormatType_TimeCode64`): a big-endian Int64 frame number.
        case timeCode64

        /// The sample entry type: `tmcd` or `tc64`.
        public var fourCC: FourCharCode { self == .timeCode32 ? "tmcd" : "tc64" }
        /// Bytes per sample: 4 for `tmcd`, 8 for `tc64`.
        public var sampleSize: Int { self == .timeCode32 ? 4 : 8 }
        /// The format of sample entry type `fourCC`, or nil when it is neither `tmcd` nor `tc64`.
        public init?(fourCC: FourCharCode) {
            switch fourCC {
            case "tmcd": self = .timeCode32
            case "tc64": self = .timeCode64
            default: return nil
            }
        }
    }

    /// The source reference name (`kCMTimeCodeFormatDescriptionExtension_SourceReferenceName`):
    /// usually the tape or reel the media came from, with a QuickTime language code.
    public struct SourceReference: Hashable, Sendable {
        /// The name, usually of the tape or reel.
        public var name: String
        /// A Macintosh language code (0 is English), as the `name` box stores it.
        public var languageCode: UInt16
        /// A source reference `name` in language `languageCode` (0, English, by default).
        public init(name: String, languageCode: UInt16 = 0) {
            self.name = name
            self.languageCode = languageCode
        }
    }

    /// How samples store the frame number: 32 or 64 bits.
    public var sampleFormat: SampleFormat
    /// The duration of one frame (1001/30000 for 29.97).
    public let frameDuration: MediaTime
    /// Frames counted per second (30 for 29.97), or frames per tick in counter mode.
    public let frameQuanta: Int
    /// Drop-frame, 24-hour, negative-times and counter flags.
    public let flags: TimecodeFlags
    /// The name of the source tape or reel, if any.
    public var sourceReference: SourceReference?

    /// A timecode format, checked: frame quanta 1...255 (the `tmcd` field is one byte), a
    /// positive frame duration, and drop-frame only at a rate of a multiple of 30000/1001
    /// (29.97, 59.94, 119.88; to 0.1%), where the labels skipped per minute make the count exact.
    public init(sampleFormat: SampleFormat = .timeCode32, frameDuration: MediaTime, frameQuanta: Int, flags: TimecodeFlags,
                sourceReference: SourceReference? = nil) throws(TimecodeError) {
        guard frameDuration.isNumeric, frameDuration.value > 0, frameDuration.timescale > 0 else {
            throw TimecodeError("frame duration \(frameDuration) is not a positive time")
        }
        guard (1...255).contains(frameQuanta) else { throw TimecodeError("frame quanta \(frameQuanta) is not in 1...255") }
        if flags.contains(.dropFrame) {
            guard !flags.contains(.counter) else { throw TimecodeError("counter mode cannot be drop-frame") }
            // frameQuanta * 1000 / 1001 frames per second (to 0.1%: files say 29.97 as 2997/100).
            let rate = Double(frameDuration.timescale) / Double(frameDuration.value)
            let ntsc = Double(frameQuanta) * 1000 / 1001
            guard frameQuanta % 30 == 0, abs(rate - ntsc) < ntsc / 1000 else {
                throw TimecodeError("drop-frame timecode needs a rate of 29.97, 59.94 or 119.88 fps (30000/1001 or a multiple); this rate is \(frameDuration.timescale)/\(frameDuration.value) fps with \(frameQuanta) frames counted per second; use ':' (non-drop) before the frames")
            }
        }
        self.sampleFormat = sampleFormat
        self.frameDuration = frameDuration
        self.frameQuanta = frameQuanta
        self.flags = flags
        self.sourceReference = sourceReference
    }

    /// The format for video at `frameRate` frames per second (an exact fraction such as
    /// 30000/1001): the frame quanta is the rate rounded up to a whole number, as SMPTE counts
    /// 23.976 as 24 and 29.97 as 30; hours wrap at 24.
    public init(frameRate: (numerator: Int32, denominator: Int32), dropFrame: Bool, sampleFormat: SampleFormat = .timeCode32,
                sourceReference: SourceReference? = nil) throws(TimecodeError) {
        guard frameRate.numerator > 0, frameRate.denominator > 0 else {
            throw TimecodeError("frame rate \(frameRate.numerator)/\(frameRate.denominator) is not positive")
        }
        let quanta = (Int(frameRate.numerator) + Int(frameRate.denominator) - 1) / Int(frameRate.denominator)
        try self.init(sampleFormat: sampleFormat, frameDuration: MediaTime(value: Int64(frameRate.denominator), timescale: frameRate.numerator),
                      frameQuanta: quanta, flags: dropFrame ? [.dropFrame, .twentyFourHourMax] : [.twentyFourHourMax],
                      sourceReference: sourceReference)
    }

    /// Whether the format uses the drop-frame rule.
    public var isDropFrame: Bool { flags.contains(.dropFrame) }
    /// Labels skipped at the start of each minute but every tenth (0 when not drop-frame).
    public var droppedPerMinute: Int { isDropFrame ? frameQuanta / 15 : 0 }
    /// Frames in one minute that starts with dropped labels.
    var framesPerDroppingMinute: Int64 { Int64(frameQuanta) * 60 - Int64(droppedPerMinute) }
    /// Frames in ten minutes: the first minute keeps all its labels.
    var framesPerTenMinutes: Int64 { Int64(frameQuanta) * 600 - 9 * Int64(droppedPerMinute) }
    /// Frames from 00:00:00:00 to 24:00:00:00.
    public var framesPerDay: Int64 { framesPerTenMinutes * 6 * 24 }
    /// The largest hours value a sample can hold: 8 bits in `tmcd`, 16 in `tc64`.
    var maximumHours: Int { flags.contains(.twentyFourHourMax) ? 23 : sampleFormat == .timeCode32 ? 255 : Int(Int16.max) }

    /// The sample type, rate, frame quanta and flags, e.g. "tmcd 30000/1001 fps, 30 frames/s, drop-frame, 24-hour".
    public var description: String {
        let rate = "\(frameDuration.timescale)/\(frameDuration.value)"
        var names: [String] = []
        if flags.contains(.dropFrame) { names.append("drop-frame") }
        if flags.contains(.twentyFourHourMax) { names.append("24-hour") }
        if flags.contains(.negativeTimesOK) { names.append("negative times") }
        if flags.contains(.counter) { names.append("counter") }
        return "\(sampleFormat.fourCC) \(rate) fps, \(frameQuanta) frames/s\(names.isEmpty ? "" : ", " + names.joined(separator: ", "))"
    }

    // MARK: Conversions

    /// The frame number a timecode label names (TN2310 listing 7): the label's frame count
    /// less the labels drop-frame skipped before it. Throws for a field out of range, a label
    /// drop-frame skips (00:01:00;00), a label of the wrong kind (`;` in a non-drop format or
    /// `:` in a drop-frame one), or a negative value the flags do not allow.
    public func frameNumber(for timecode: Timecode) throws(TimecodeError) -> Int64 {
        guard !flags.contains(.counter) else { throw TimecodeError("a counter-mode timecode has no hours, minutes and seconds") }
        guard timecode.isDropFrame == isDropFrame else {
            throw TimecodeError(isDropFrame ? "\(timecode): this format is drop-frame; write the frames after ';' (HH:MM:SS;FF)"
                                            : "\(timecode): this format is not drop-frame (';' marks a drop-frame timecode); write HH:MM:SS:FF")
        }
        guard (0...maximumHours).contains(timecode.hours) else {
            throw TimecodeError("\(timecode): hours \(timecode.hours) are above \(maximumHours)\(flags.contains(.twentyFourHourMax) ? " (the format wraps at 24 hours)" : "")")
        }
        guard (0..<60).contains(timecode.minutes) else { throw TimecodeError("\(timecode): minutes \(timecode.minutes) are not in 0...59") }
        guard (0..<60).contains(timecode.seconds) else { throw TimecodeError("\(timecode): seconds \(timecode.seconds) are not in 0...59") }
        guard (0..<frameQuanta).contains(timecode.frames) else {
            throw TimecodeError("\(timecode): frames \(timecode.frames) are not below the \(frameQuanta) frames counted per second")
        }
        let totalMinutes = Int64(timecode.hours) * 60 + Int64(timecode.minutes)
        if isDropFrame, timecode.seconds == 0, timecode.frames < droppedPerMinute, timecode.minutes % 10 != 0 {
            throw TimecodeError("\(timecode) does not exist: drop-frame timecode skips frames 00 to \(droppedPerMinute - 1) at the start of each minute except every tenth")
        }
        var number = (totalMinutes * 60 + Int64(timecode.seconds)) * Int64(frameQuanta) + Int64(timecode.frames)
        number -= Int64(droppedPerMinute) * (totalMinutes - totalMinutes / 10)
        if timecode.isNegative && number != 0 {
            guard flags.contains(.negativeTimesOK) else { throw TimecodeError("\(timecode): negative timecodes need the NegTimesOK flag") }
            number = -number
        }
        return number
    }

    /// A frame number and its timecode label, from `text`: a timecode (`HH:MM:SS:FF`, or
    /// `HH:MM:SS;FF` drop-frame), or a frame number. The label comes back as this format
    /// writes it (`h264kit timecode convert`).
    public func conversion(of text: String) throws(TimecodeError) -> (frameNumber: Int64, timecode: Timecode) {
        let number: Int64
        if text.contains(":") {
            number = try frameNumber(for: try Timecode(parsing: text))
        } else {
            guard let parsed = Int64(text) else { throw TimecodeError("neither a timecode (HH:MM:SS:FF) nor a frame number") }
            number = parsed
        }
        return (number, try timecode(forFrameNumber: number))
    }

    /// The timecode label of a frame number (TN2310 listing 8). With the 24-hour flag the
    /// count wraps at 24 hours; a negative number is a negative label when the flags allow
    /// it, else (24-hour) the label that many frames before midnight. Throws when neither flag
    /// makes sense of the number, or the hours do not fit the sample format.
    public func timecode(forFrameNumber frameNumber: Int64) throws(TimecodeError) -> Timecode {
        guard !flags.contains(.counter) else { throw TimecodeError("a counter-mode timecode has no hours, minutes and seconds; use counterValue(forFrameNumber:)") }
        var number = frameNumber
        var negative = false
        if number < 0 {
            if flags.contains(.negativeTimesOK) {
                negative = true
                number = number == .min ? .max : -number
            } else if flags.contains(.twentyFourHourMax) {
                number = number % framesPerDay + framesPerDay
            } else {
                throw TimecodeError("frame number \(frameNumber) is negative and the format allows neither negative times nor a 24-hour wrap")
            }
        }
        if flags.contains(.twentyFourHourMax) { number %= framesPerDay }
        guard let labels = labelCount(forFrameNumber: number) else {
            throw TimecodeError("frame number \(frameNumber) is beyond any \(sampleFormat.fourCC) timecode label")
        }
        let quanta = Int64(frameQuanta)
        let hours = labels / (quanta * 3600)
        guard hours <= Int64(maximumHours) else {
            throw TimecodeError("frame number \(frameNumber) is \(hours) hours in; \(sampleFormat.fourCC) holds at most \(maximumHours)")
        }
        return Timecode(hours: Int(hours), minutes: Int(labels / (quanta * 60) % 60), seconds: Int(labels / quanta % 60),
                        frames: Int(labels % quanta), isNegative: negative && number != 0, isDropFrame: isDropFrame)
    }

    /// Frame number (≥ 0) → the count of labels up to it, the skipped ones included; nil
    /// when that count passes Int64 (a frame number no timecode label reaches).
    private func labelCount(forFrameNumber number: Int64) -> Int64? {
        let drop = Int64(droppedPerMinute)
        guard drop > 0 else { return number }
        let tens = number / framesPerTenMinutes
        let rest = number % framesPerTenMinutes
        // The first minute of ten keeps all its labels; each later one skips `drop`.
        let minutesPast = rest < drop ? 0 : (rest - drop) / framesPerDroppingMinute
        let (skipped, overflow) = (9 * drop).multipliedReportingOverflow(by: tens)
        guard !overflow else { return nil }
        let (labels, past) = number.addingReportingOverflow(skipped + drop * minutesPast)
        return past ? nil : labels
    }

    /// The counter value of a frame number in counter mode: whole ticks of `frameQuanta` frames.
    public func counterValue(forFrameNumber frameNumber: Int64) -> Int64 {
        frameNumber >= 0 ? frameNumber / Int64(frameQuanta) : -((-frameNumber) / Int64(frameQuanta))
    }

    /// The frame number `time` after the frame `frameNumber` (whole frames, rounded down),
    /// held at the ends of Int64 rather than wrapping.
    public func frameNumber(_ frameNumber: Int64, advancedBy time: MediaTime) -> Int64 {
        let ticks = time.converted(toTimescale: frameDuration.timescale, rounding: .towardNegativeInfinity).value
        // Floor division without negating (Int64.min has no negation).
        let frames = ticks >= 0 ? ticks / frameDuration.value : (ticks + 1) / frameDuration.value - 1
        let (sum, overflow) = frameNumber.addingReportingOverflow(frames)
        return overflow ? (frames > 0 ? .max : .min) : sum
    }

    // MARK: Sample data

    /// A timecode sample: the frame number, big-endian, 4 bytes (`tmcd`) or 8 (`tc64`).
    public func sampleData(forFrameNumber frameNumber: Int64) throws(TimecodeError) -> [UInt8] {
        switch sampleFormat {
        case .timeCode32:
            guard let value = Int32(exactly: frameNumber) else { throw TimecodeError("frame number \(frameNumber) does not fit a 32-bit tmcd sample; use tc64") }
            return withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .timeCode64:
            return withUnsafeBytes(of: frameNumber.bigEndian) { Array($0) }
        }
    }

    /// The frame number in a timecode sample; throws when the sample is shorter than the format's.
    public func frameNumber(sampleData bytes: some Collection<UInt8>) throws(TimecodeError) -> Int64 {
        let size = sampleFormat.sampleSize
        guard bytes.count >= size else {
            throw TimecodeError("a \(sampleFormat.fourCC) sample holds \(size) bytes; this one has \(bytes.count)")
        }
        let value = bytes.prefix(size).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return size == 4 ? Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: value))) : Int64(bitPattern: value)
    }
}
