public import Bitstream

/// `adts_fixed_header()` and `adts_variable_header()` (ISO/IEC 13818-7 §6.2, ISO/IEC 14496-3
/// §1.A.2.2): the 7-byte header before each AAC frame in an ADTS stream (a `.aac` file, AAC in
/// an MPEG-2 transport stream, some cameras' RTP), 9 bytes with a CRC. Parsed, checked (sync
/// word, layer, a reserved rate, a length shorter than the header) and written back.
public struct ADTSHeader: Hashable, Sendable {
    /// `ID`: 0 for MPEG-4, 1 for MPEG-2 (the same AAC; only the object types differ in name).
    public var isMPEG2: Bool
    /// `protection_absent` inverted: a CRC follows the header (2 bytes, and 2 more per extra
    /// raw data block's position).
    public var hasCRC: Bool
    /// `profile_ObjectType`: the audio object type less one (1 is AAC LC).
    public var profile: UInt8
    /// `sampling_frequency_index` (0 to 12).
    public var samplingFrequencyIndex: UInt8
    /// `private_bit`.
    public var privateBit: Bool
    /// `channel_configuration` (0: a program config element in the frame gives the layout).
    public var channelConfiguration: UInt8
    /// `original_copy`.
    public var originalCopy: Bool
    /// `home`.
    public var home: Bool
    /// `copyright_identification_bit` and `copyright_identification_start`.
    public var copyrightIdentification: (bit: Bool, start: Bool)
    /// `aac_frame_length`: the whole frame, header included, bytes.
    public var frameLength: Int
    /// `adts_buffer_fullness` (0x7FF: variable rate).
    public var bufferFullness: UInt16
    /// `number_of_raw_data_blocks_in_frame` + 1: AAC frames in this ADTS frame.
    public var rawDataBlockCount: Int

    /// The header's size: 7 bytes, 9 with a CRC.
    public var size: Int { hasCRC ? 9 : 7 }

    /// The smallest header.
    public static let minimumSize = 7

    /// A header for one raw data block of `payloadSize` bytes, without CRC, variable rate
    /// (what FFmpeg's ADTS muxer writes). `payloadSize` must fit the 13-bit length.
    public init(profile: UInt8, samplingFrequencyIndex: UInt8, channelConfiguration: UInt8, payloadSize: Int) {
        isMPEG2 = false
        hasCRC = false
        self.profile = profile & 3
        self.samplingFrequencyIndex = samplingFrequencyIndex & 15
        privateBit = false
        self.channelConfiguration = channelConfiguration & 7
        originalCopy = false
        home = false
        copyrightIdentification = (false, false)
        frameLength = payloadSize + Self.minimumSize
        bufferFullness = 0x7FF
        rawDataBlockCount = 1
    }

    /// The largest frame the 13-bit length can say.
    public static let maximumFrameLength = (1 << 13) - 1

    /// A header for a raw AAC frame of `payloadSize` bytes described by `config` (an AAC
    /// object type of 1 to 4 at a rate of the table, with a channel configuration of 0 to 7):
    /// nil when ADTS cannot say it, or the frame is too long.
    public init?(config: AudioSpecificConfig, payloadSize: Int) {
        guard (1...4).contains(config.audioObjectType.rawValue), config.samplingFrequencyIndex < 13, config.channelConfiguration < 8,
              payloadSize >= 0, payloadSize + Self.minimumSize <= Self.maximumFrameLength else { return nil }
        self.init(profile: config.audioObjectType.rawValue - 1, samplingFrequencyIndex: config.samplingFrequencyIndex,
                  channelConfiguration: config.channelConfiguration, payloadSize: payloadSize)
    }

    /// Parses the header at the start of `bytes` (at least 7 bytes, 9 when it has a CRC).
    public init(bytes: UnsafeRawBufferPointer) throws(BitstreamError) {
        guard bytes.count >= Self.minimumSize else { throw BitstreamError(.truncated, "an ADTS header needs 7 bytes, \(bytes.count) left") }
        guard bytes[0] == 0xFF, bytes[1] & 0xF0 == 0xF0 else { throw BitstreamError(.invalidStructure, "no ADTS syncword (0xFFF)", byteOffset: 0) }
        guard bytes[1] & 0x06 == 0 else { throw BitstreamError(.invalidStructure, "ADTS layer \((bytes[1] >> 1) & 3) (must be 0: this is MPEG audio, not AAC)", byteOffset: 1) }
        isMPEG2 = bytes[1] & 0x08 != 0
        hasCRC = bytes[1] & 0x01 == 0
        profile = bytes[2] >> 6
        samplingFrequencyIndex = (bytes[2] >> 2) & 15
        guard samplingFrequencyIndex < 13 else {
            throw BitstreamError(.valueOutOfRange, "ADTS sampling_frequency_index \(samplingFrequencyIndex) is reserved", byteOffset: 2)
        }
        privateBit = bytes[2] & 2 != 0
        channelConfiguration = (bytes[2] & 1) << 2 | bytes[3] >> 6
        originalCopy = bytes[3] & 0x20 != 0
        home = bytes[3] & 0x10 != 0
        copyrightIdentification = (bytes[3] & 0x08 != 0, bytes[3] & 0x04 != 0)
        frameLength = Int(bytes[3] & 3) << 11 | Int(bytes[4]) << 3 | Int(bytes[5] >> 5)
        bufferFullness = UInt16(bytes[5] & 0x1F) << 6 | UInt16(bytes[6] >> 2)
        rawDataBlockCount = Int(bytes[6] & 3) + 1
        let headerSize = hasCRC ? 9 : 7
        guard frameLength >= headerSize + (hasCRC ? 2 * (rawDataBlockCount - 1) : 0) else {
            throw BitstreamError(.invalidLength, "ADTS aac_frame_length \(frameLength) is shorter than its header", byteOffset: 3)
        }
        guard !hasCRC || bytes.count >= headerSize else { throw BitstreamError(.truncated, "an ADTS header with CRC needs 9 bytes, \(bytes.count) left") }
    }

    /// The header's bytes (the CRC field zero when ``hasCRC``: it is filled in by whoever
    /// computes it).
    public var bytes: [UInt8] {
        var w = BitWriter()
        w.bits(0xFFF, 12)
        w.flag(isMPEG2)
        w.bits(0, 2)
        w.flag(!hasCRC)
        w.bits(UInt32(profile & 3), 2)
        w.bits(UInt32(samplingFrequencyIndex & 15), 4)
        w.flag(privateBit)
        w.bits(UInt32(channelConfiguration & 7), 3)
        w.flag(originalCopy)
        w.flag(home)
        w.flag(copyrightIdentification.bit)
        w.flag(copyrightIdentification.start)
        w.bits(UInt32(frameLength & 0x1FFF), 13)
        w.bits(UInt32(bufferFullness & 0x7FF), 11)
        w.bits(UInt32((rawDataBlockCount - 1) & 3), 2)
        if hasCRC { w.bits(0, 16) }
        return w.bytes
    }

    /// The audio object type (profile + 1).
    public var audioObjectType: AudioObjectType { AudioObjectType(rawValue: profile + 1) }

    /// The rate, Hz.
    public var samplingFrequency: Int { SamplingFrequency.table[Int(samplingFrequencyIndex)] }

    /// The configuration the header says (with `programConfigElement` when the channel
    /// configuration is 0 and the frame's first element gave one).
    public func audioSpecificConfig(programConfigElement: ProgramConfigElement? = nil) -> AudioSpecificConfig {
        AudioSpecificConfig(audioObjectType: audioObjectType, samplingFrequency: samplingFrequency, channelConfiguration: channelConfiguration,
                            programConfigElement: programConfigElement)
    }

    /// Whether `other` can continue the same stream: the same rate, object type and channels.
    public func isSameStream(as other: ADTSHeader) -> Bool {
        profile == other.profile && samplingFrequencyIndex == other.samplingFrequencyIndex && channelConfiguration == other.channelConfiguration
    }

    /// Equal in every field.
    public static func == (a: ADTSHeader, b: ADTSHeader) -> Bool {
        a.isMPEG2 == b.isMPEG2 && a.hasCRC == b.hasCRC && a.profile == b.profile && a.samplingFrequencyIndex == b.samplingFrequencyIndex
            && a.privateBit == b.privateBit && a.channelConfiguration == b.channelConfiguration && a.originalCopy == b.originalCopy && a.home == b.home
            && a.copyrightIdentification.bit == b.copyrightIdentification.bit && a.copyrightIdentification.start == b.copyrightIdentification.start
            && a.frameLength == b.frameLength && a.bufferFullness == b.bufferFullness && a.rawDataBlockCount == b.rawDataBlockCount
    }

    /// Hashes the stream fields and the length.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(profile)
        hasher.combine(samplingFrequencyIndex)
        hasher.combine(channelConfiguration)
        hasher.combine(frameLength)
    }
}
