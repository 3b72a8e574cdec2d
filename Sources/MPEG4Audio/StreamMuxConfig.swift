public import Bitstream

/// `StreamMuxConfig()` (ISO/IEC 14496-3 §1.7.3.1, Table 1.42): how an LATM stream multiplexes
/// its payloads, with the AudioSpecificConfig of its one stream. In a LOAS stream (AAC in an
/// MPEG-2 transport stream, `stream_type` 0x11) it comes in band; RFC 6416 (`MP4A-LATM` over
/// RTP) carries it in the session description's `config=` when `cpresent=0`.
///
/// What is read whole is what encoders write: one program of one layer, every stream on the same
/// time framing, payloads whose length precedes them (`frameLengthType` 0), any number of
/// subframes. Anything else (several programs or layers, fixed frame lengths, CELP and HVXC
/// framings, `audioMuxVersionA` 1) is refused with `BitstreamError/Code/unsupported`.
public struct StreamMuxConfig: Hashable, Sendable {
    /// `audioMuxVersion`: 1 gives the AudioSpecificConfig's length and `taraBufferFullness`.
    public var audioMuxVersion: UInt8
    /// `taraBufferFullness`, with `audioMuxVersion` 1.
    public var taraBufferFullness: UInt32?
    /// `numSubFrames` + 1: payloads per AudioMuxElement.
    public var subFrameCount: Int
    /// The stream's configuration.
    public var audioSpecificConfig: AudioSpecificConfig
    /// `latmBufferFullness`.
    public var latmBufferFullness: UInt8
    /// `otherDataLenBits`, when other data is present.
    public var otherDataLengthBits: UInt32?
    /// `crcCheckSum`, when present.
    public var crcCheckSum: UInt8?

    /// A configuration of one stream, one payload per element, version 0 (what FFmpeg's LATM
    /// muxer writes).
    public init(audioSpecificConfig: AudioSpecificConfig, subFrameCount: Int = 1) {
        audioMuxVersion = 0
        taraBufferFullness = nil
        self.subFrameCount = subFrameCount
        self.audioSpecificConfig = audioSpecificConfig
        latmBufferFullness = 0xFF
        otherDataLengthBits = nil
        crcCheckSum = nil
    }

    /// `LatmGetValue()`: 1 to 4 bytes, their count first.
    static func latmValue(_ reader: inout BitReader) throws(BitstreamError) -> UInt32 {
        let count = try reader.bits(2, "bytesForValue")
        var value: UInt32 = 0
        for _ in 0...count { value = value << 8 | (try reader.bits(8, "valueTmp")) }
        return value
    }

    static func writeLatmValue(_ value: UInt32, to writer: inout BitWriter) {
        let count = value < 1 << 8 ? 0 : value < 1 << 16 ? 1 : value < 1 << 24 ? 2 : 3
        writer.bits(UInt32(count), 2)
        for index in stride(from: count, through: 0, by: -1) { writer.bits((value >> UInt32(8 * index)) & 0xFF, 8) }
    }

    /// Parses the configuration at the reader's position.
    public init(parsing reader: inout BitReader) throws(BitstreamError) {
        audioMuxVersion = UInt8(try reader.bits(1, "audioMuxVersion"))
        let versionA = audioMuxVersion == 1 ? try reader.bits(1, "audioMuxVersionA") : 0
        guard versionA == 0 else { throw BitstreamError(.unsupported, "LATM audioMuxVersionA 1", bitOffset: reader.bitPosition) }
        taraBufferFullness = audioMuxVersion == 1 ? try Self.latmValue(&reader) : nil
        guard try reader.flag("allStreamsSameTimeFraming") else {
            throw BitstreamError(.unsupported, "LATM streams on different time framings", bitOffset: reader.bitPosition)
        }
        subFrameCount = Int(try reader.bits(6, "numSubFrames")) + 1
        let programs = try reader.bits(4, "numProgram") + 1
        guard programs == 1 else { throw BitstreamError(.unsupported, "LATM with \(programs) programs (one is read)", bitOffset: reader.bitPosition) }
        let layers = try reader.bits(3, "numLayer") + 1
        guard layers == 1 else { throw BitstreamError(.unsupported, "LATM with \(layers) layers (one is read)", bitOffset: reader.bitPosition) }
        if audioMuxVersion == 0 {
            // No length: the backward-compatible SBR extension (0x2B7) is looked for in what is
            // left (as FFmpeg's LATM reader does), which GStreamer's payloader carries; a
            // frameLengthType 0 cannot start with its first bits.
            audioSpecificConfig = try AudioSpecificConfig(parsing: &reader, bitLength: reader.bitsLeft)
        } else {
            let length = Int(try Self.latmValue(&reader))
            let start = reader.bitPosition
            audioSpecificConfig = try AudioSpecificConfig(parsing: &reader, bitLength: length)
            let used = reader.bitPosition - start
            guard used <= length else { throw BitstreamError(.invalidLength, "LATM ascLen \(length) bits, the configuration took \(used)", bitOffset: reader.bitPosition) }
            try reader.skip(length - used)
        }
        let frameLengthType = try reader.bits(3, "frameLengthType")
        guard frameLengthType == 0 else {
            throw BitstreamError(.unsupported, "LATM frameLengthType \(frameLengthType) (payload lengths in band, type 0, are read)", bitOffset: reader.bitPosition)
        }
        latmBufferFullness = UInt8(try reader.bits(8, "latmBufferFullness"))
        if try reader.flag("otherDataPresent") {
            if audioMuxVersion == 1 {
                otherDataLengthBits = try Self.latmValue(&reader)
            } else {
                var length: UInt32 = 0
                var more = true
                while more {
                    guard length < 1 << 24 else { throw BitstreamError(.invalidLength, "LATM otherDataLenBits runs on", bitOffset: reader.bitPosition) }
                    more = try reader.flag("otherDataLenEsc")
                    length = length << 8 | (try reader.bits(8, "otherDataLenTmp"))
                }
                otherDataLengthBits = length
            }
        } else {
            otherDataLengthBits = nil
        }
        crcCheckSum = try reader.flag("crcCheckPresent") ? UInt8(try reader.bits(8, "crcCheckSum")) : nil
    }

    /// Parses the configuration from bytes (an RFC 6416 `config=` in hex, decoded).
    public init(bytes: [UInt8]) throws(BitstreamError) {
        var reader = BitReader(bytes.span)
        try self.init(parsing: &reader)
    }

    /// Writes the configuration at the writer's position.
    public func write(to writer: inout BitWriter) throws(BitstreamError) {
        writer.bits(UInt32(audioMuxVersion & 1), 1)
        if audioMuxVersion == 1 {
            writer.bits(0, 1)
            Self.writeLatmValue(taraBufferFullness ?? 0xFF, to: &writer)
        }
        writer.flag(true)
        writer.bits(UInt32(max(0, min(subFrameCount - 1, 63))), 6)
        writer.bits(0, 4)
        writer.bits(0, 3)
        if audioMuxVersion == 0 {
            try audioSpecificConfig.write(to: &writer)
        } else {
            var config = BitWriter()
            try audioSpecificConfig.write(to: &config)
            Self.writeLatmValue(UInt32(config.bitCount), to: &writer)
            try audioSpecificConfig.write(to: &writer)
        }
        writer.bits(0, 3)
        writer.bits(UInt32(latmBufferFullness), 8)
        writer.flag(otherDataLengthBits != nil)
        if let otherDataLengthBits {
            if audioMuxVersion == 1 {
                Self.writeLatmValue(otherDataLengthBits, to: &writer)
            } else {
                var bytes: [UInt32] = []
                var value = otherDataLengthBits
                repeat { bytes.insert(value & 0xFF, at: 0); value >>= 8 } while value > 0
                for (index, byte) in bytes.enumerated() {
                    writer.flag(index + 1 < bytes.count)
                    writer.bits(byte, 8)
                }
            }
        }
        writer.flag(crcCheckSum != nil)
        if let crcCheckSum { writer.bits(UInt32(crcCheckSum), 8) }
    }

    /// The configuration's bytes, zero bits to the byte boundary.
    public func serialized() throws(BitstreamError) -> [UInt8] {
        var writer = BitWriter()
        try write(to: &writer)
        if !writer.isByteAligned { writer.bits(0, 8 - writer.bitCount % 8) }
        return writer.bytes
    }
}

/// `AudioMuxElement()` (ISO/IEC 14496-3 §1.7.3.1, Table 1.41): one LATM element, its AAC
/// payloads cut out. With `muxConfigPresent` (LOAS, RFC 6416 `cpresent=1`) it may carry a new
/// StreamMuxConfig; without, the configuration in force is given.
public struct AudioMuxElement: Sendable {
    /// The configuration the element carried, if it carried one (`useSameStreamMux` 0).
    public var streamMuxConfig: StreamMuxConfig?
    /// The AAC frames (raw data blocks), one per subframe.
    public var payloads: [[UInt8]]
    /// The element's length in bits, from its first bit to its last payload's end (where the
    /// next element begins, after padding to a byte when the elements are byte-aligned, as in
    /// an RTP packet of RFC 6416).
    public var bitLength: Int

    /// The most bytes one payload may declare (its 255-coded length runs on otherwise).
    public static let maximumPayloadSize = 1 << 16

    /// Parses an element from `bytes`. `current` is the configuration in force (from an
    /// earlier element, or the session description); an element that needs one and has none
    /// throws.
    public init(bytes: UnsafeRawBufferPointer, muxConfigPresent: Bool, current: StreamMuxConfig?) throws(BitstreamError) {
        var reader = BitReader(bytes.bindMemory(to: UInt8.self).span)
        var config = current
        streamMuxConfig = nil
        if muxConfigPresent {
            if !(try reader.flag("useSameStreamMux")) {
                let carried = try StreamMuxConfig(parsing: &reader)
                streamMuxConfig = carried
                config = carried
            }
        }
        guard let config else {
            throw BitstreamError(.missingParameterSet, "an LATM element uses the StreamMuxConfig in force, and none has come", bitOffset: reader.bitPosition)
        }
        var frames: [[UInt8]] = []
        for _ in 0..<config.subFrameCount {
            var length = 0
            var part: UInt32 = 255
            while part == 255 {
                part = try reader.bits(8, "tmp (MuxSlotLengthBytes)")
                length += Int(part)
                guard length <= Self.maximumPayloadSize else {
                    throw BitstreamError(.limitExceeded, "an LATM payload over \(Self.maximumPayloadSize) bytes", bitOffset: reader.bitPosition)
                }
            }
            guard length * 8 <= reader.bitsLeft else {
                throw BitstreamError(.truncated, "an LATM payload of \(length) bytes, \(reader.bitsLeft / 8) left", bitOffset: reader.bitPosition)
            }
            var payload = [UInt8](repeating: 0, count: length)
            for index in 0..<length { payload[index] = UInt8(try reader.bits(8, "payload")) }
            frames.append(payload)
        }
        payloads = frames
        bitLength = reader.bitPosition
    }
}
