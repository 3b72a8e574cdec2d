import MediaCore
import H264Network

/// What the server says to a page over its WebSocket: JSON text messages for control, binary
/// messages for the samples. The page (`player.js`) reads the same layout.
///
/// A sample message is a 40-byte header, all integers big-endian, then the sample's bytes (a
/// picture's AVCC NAL units, or one raw AAC frame):
///
/// | bytes | field |
/// | --- | --- |
/// | 0 | message kind: 1, a picture's sample; 2, a sound's |
/// | 1 | flags: 1 sync sample, 2 not to be shown (decoded before a seek target), 4 first after a flush |
/// | 2–3 | reserved, 0 |
/// | 4–7 | the sample's number in the stream (decode order, from 0) |
/// | 8–15 | presentation time, microseconds (WebCodecs' `timestamp`) |
/// | 16–23 | decode time, microseconds |
/// | 24–31 | duration, microseconds |
/// | 32–39 | when the server got it, wall-clock microseconds since 1970 (live latency) |
enum DisplayMessage {
    /// The sample header's size.
    static let headerSize = 40

    /// Microseconds of a media time (rounded), as WebCodecs counts.
    static func microseconds(_ time: MediaTime) -> Int64 {
        guard time.isNumeric else { return 0 }
        return time.converted(toTimescale: 1_000_000, rounding: .halfAwayFromZero).value
    }

    /// A sample message.
    /// `inBand`: NAL units (parameter sets) to put before the sample's own, in its AVCC framing.
    static func sample(_ sample: SampleBuffer, number: Int, hidden: Bool, afterFlush: Bool, arrival: Int64, inBand: [[UInt8]] = []) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + sample.data.count + inBand.reduce(0) { $0 + $1.count + 4 })
        bytes.append(sample.audioFormatDescription == nil ? 1 : 2)
        bytes.append((sample.isSync ? 1 : 0) | (hidden ? 2 : 0) | (afterFlush ? 4 : 0))
        bytes += [0, 0]
        append(UInt32(truncatingIfNeeded: number), to: &bytes)
        append(UInt64(bitPattern: microseconds(sample.presentationTime)), to: &bytes)
        append(UInt64(bitPattern: microseconds(sample.decodeTime)), to: &bytes)
        append(UInt64(bitPattern: microseconds(sample.duration)), to: &bytes)
        append(UInt64(bitPattern: arrival), to: &bytes)
        let lengthSize = sample.videoFormatDescription?.nalUnitLengthSize ?? 4
        for unit in inBand {
            for shift in stride(from: (lengthSize - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: unit.count >> shift)) }
            bytes += unit
        }
        sample.data.withUnsafeBytes { bytes.append(contentsOf: $0) }
        return bytes
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The `config` message: what a page configures its `VideoDecoder` with (the RFC 6381 codec
    /// string, the avcC record as the decoder's `description`, the coded size and the colour
    /// description when the stream gives one).
    static func configuration(_ description: VideoFormatDescription, live: Bool) -> String {
        var fields: [String] = [
            "\"type\":\"config\"", "\"codec\":\"\(description.codecString)\"",
            "\"description\":\"\(Base64.encode(description.avcC))\"",
            "\"width\":\(description.width)", "\"height\":\(description.height)", "\"live\":\(live)",
        ]
        if let colour = description.colour {
            fields.append("\"colour\":{\"primaries\":\(colour.primaries),\"transfer\":\(colour.transfer),\"matrix\":\(colour.matrix),\"fullRange\":\(colour.fullRange)}")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The `audioConfig` message: what a page configures its `AudioDecoder` with (the RFC 6381
    /// codec string, the AudioSpecificConfig as `description`, the rate and the channels), or
    /// nil for a sound a page cannot decode (not AAC).
    static func audioConfiguration(_ description: AudioFormatDescription) -> String? {
        guard description.isAAC else { return nil }
        return "{\"type\":\"audioConfig\",\"codec\":\"\(description.codecString)\",\"sampleRate\":\(description.sampleRate),"
            + "\"numberOfChannels\":\(description.channelCount),\"description\":\"\(Base64.encode(description.magicCookie))\"}"
    }

    /// The `timebase` message: the control timebase's time (seconds) and rate, now.
    static func timebase(time: MediaTime, rate: Double) -> String {
        "{\"type\":\"timebase\",\"time\":\(time.isNumeric ? time.seconds : 0),\"rate\":\(rate.isFinite ? rate : 0)}"
    }

    /// `info`: the stream's length in seconds (a file).
    static func info(duration: MediaTime) -> String {
        "{\"type\":\"info\",\"duration\":\(duration.isNumeric ? duration.seconds : 0)}"
    }

    /// `flush`: drop every queued and decoded frame; the next sample is a sync sample.
    static let flush = "{\"type\":\"flush\"}"
    /// `end`: no more samples; the page reports `ended` once it has shown the last.
    static let end = "{\"type\":\"end\"}"

    /// `capture`: send back, as PNG, what the canvas shows for these presentation times (µs).
    static func capture(_ timestamps: [Int64]) -> String {
        "{\"type\":\"capture\",\"timestamps\":[" + timestamps.map(String.init).joined(separator: ",") + "]}"
    }
}
