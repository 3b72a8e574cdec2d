import Bitstream
import MPEG4Audio
import Testing

/// AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1): the configurations encoders write, read
/// field by field and written back to the same bytes.
@Suite("AudioSpecificConfig")
struct AudioSpecificConfigTests {
    @Test func aacLCAt48kHzStereoAsFFmpegWritesItFromADTS() throws {
        let config = try AudioSpecificConfig(bytes: [0x11, 0x90])
        #expect(config.audioObjectType == .aacLC)
        #expect(config.samplingFrequency == 48_000)
        #expect(config.channelConfiguration == 2)
        #expect(config.channelCount == 2)
        #expect(config.frameLength == 1024)
        #expect(config.codecString == "mp4a.40.2")
        #expect(!config.sbrPresent)
        #expect(try config.serialized() == [0x11, 0x90])
    }

    @Test func monoAt44100() throws {
        let config = try AudioSpecificConfig(bytes: [0x12, 0x08])
        #expect(config.samplingFrequency == 44_100)
        #expect(config.channelCount == 1)
        #expect(try config.serialized() == [0x12, 0x08])
    }

    /// FFmpeg's native encoder signals "no SBR" backward compatibly: the sync extension 0x2B7
    /// with object type 5 and `sbrPresentFlag` 0 after the LC configuration.
    @Test func ffmpegsEncoderWritesANoSBRSyncExtension() throws {
        let bytes: [UInt8] = [0x11, 0x90, 0x56, 0xE5, 0x00]
        let config = try AudioSpecificConfig(bytes: bytes)
        #expect(config.audioObjectType == .aacLC)
        #expect(!config.sbrPresent)
        guard case .backwardCompatible(let sbr, _, _, _) = config.signalledExtension else {
            Issue.record("expected a backward-compatible extension, got \(String(describing: config.signalledExtension))")
            return
        }
        #expect(!sbr)
        #expect(config.outputSamplingFrequency == 48_000)
        #expect(try config.serialized() == bytes)
    }

    /// HE-AAC signalled hierarchically: object type 5, the core at 22.05 kHz, SBR out at 44.1.
    @Test func heAACHierarchical() throws {
        let bytes: [UInt8] = [0x2B, 0x92, 0x08, 0x00]
        let config = try AudioSpecificConfig(bytes: bytes)
        #expect(config.sbrPresent)
        #expect(!config.psPresent)
        #expect(config.samplingFrequency == 22_050)
        #expect(config.outputSamplingFrequency == 44_100)
        #expect(config.codecString == "mp4a.40.5")
        #expect(config.frameLength == 1024)
        #expect(try config.serialized() == bytes)
    }

    /// HE-AAC v2 (PS, object type 29) and backward-compatible SBR + PS, written and read back.
    @Test(arguments: [true, false])
    func parametricStereoRoundTrips(hierarchical: Bool) throws {
        var config = AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 24_000, channelConfiguration: 1)
        config.signalledExtension = hierarchical
            ? .hierarchical(ps: true, extensionSamplingFrequencyIndex: 3, extensionSamplingFrequency: 48_000)
            : .backwardCompatible(sbr: true, extensionSamplingFrequencyIndex: 3, extensionSamplingFrequency: 48_000, ps: true)
        let bytes = try config.serialized()
        let read = try AudioSpecificConfig(bytes: bytes)
        #expect(read == config)
        #expect(read.sbrPresent && read.psPresent)
        #expect(read.outputSamplingFrequency == 48_000)
        // Hierarchical signalling names PS in the object type; backward-compatible signalling
        // keeps the core's (a decoder without SBR plays it as LC).
        #expect(read.codecString == (hierarchical ? "mp4a.40.29" : "mp4a.40.2"))
        #expect(try read.serialized() == bytes)
    }

    /// A rate not in the table goes in the escape: index 15 and 24 bits.
    @Test func anEscapedRate() throws {
        let config = AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 12_345, channelConfiguration: 2)
        #expect(config.samplingFrequencyIndex == 15)
        let bytes = try config.serialized()
        #expect(bytes.count == 5)
        let read = try AudioSpecificConfig(bytes: bytes)
        #expect(read.samplingFrequency == 12_345)
        #expect(read == config)
    }

    @Test func nineHundredSixtySampleFrames() throws {
        let config = AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 48_000, channelConfiguration: 2, frameLengthFlag: true)
        let read = try AudioSpecificConfig(bytes: try config.serialized())
        #expect(read.frameLength == 960)
        #expect(read == config)
    }

    /// Channel configuration 0: the layout is a program config element (5.1 here).
    @Test func aProgramConfigElementGivesTheLayout() throws {
        let pce = ProgramConfigElement(samplingFrequencyIndex: 3, front: [.init(isChannelPair: false, tag: 0), .init(isChannelPair: true, tag: 0)],
                                       side: [], back: [.init(isChannelPair: true, tag: 1)], lowFrequencyEffects: [0])
        #expect(pce.channelCount == 6)
        let config = AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 48_000, channelConfiguration: 0, programConfigElement: pce)
        let bytes = try config.serialized()
        let read = try AudioSpecificConfig(bytes: bytes)
        #expect(read == config)
        #expect(read.channelCount == 6)
        #expect(try read.serialized() == bytes)
    }

    /// Every cut of a real configuration is an error naming where, never a trap.
    @Test func aCutConfigurationIsAnError() {
        let bytes: [UInt8] = [0x2B, 0x92, 0x08, 0x00]
        for length in 0..<2 {
            #expect(throws: BitstreamError.self) { try AudioSpecificConfig(bytes: Array(bytes.prefix(length))) }
        }
    }

    /// Every two-byte configuration parses or fails cleanly; what parses writes back to a
    /// configuration that parses to the same.
    @Test func everyTwoByteConfigurationParsesOrFailsCleanly() {
        var parsed = 0
        for value in 0..<65_536 {
            let bytes = [UInt8(value >> 8), UInt8(value & 0xFF)]
            guard let config = try? AudioSpecificConfig(bytes: bytes) else { continue }
            parsed += 1
            if let written = try? config.serialized() { #expect((try? AudioSpecificConfig(bytes: written)) == config, "\(bytes)") }
        }
        #expect(parsed > 1000)
    }
}

/// esds (ISO/IEC 14496-1 §7.2.6.5): the ES_Descriptor FFmpeg writes, read and written back.
@Suite("ElementaryStreamDescriptor")
struct ElementaryStreamDescriptorTests {
    /// The esds of an MP4 FFmpeg 5.1 wrote (its 4-byte descriptor sizes, OTI 0x40, the DSI).
    static let ffmpegs: [UInt8] = [
        0x03, 0x80, 0x80, 0x80, 0x25, 0x00, 0x02, 0x00, 0x04, 0x80, 0x80, 0x80, 0x17, 0x40, 0x15, 0x00, 0x00, 0x00, 0x00, 0x01, 0xF4, 0x00, 0x00, 0x01,
        0xF3, 0x70, 0x05, 0x80, 0x80, 0x80, 0x05, 0x11, 0x90, 0x56, 0xE5, 0x00, 0x06, 0x80, 0x80, 0x80, 0x01, 0x02,
    ]

    @Test func ffmpegsDescriptorReadsAndWritesBack() throws {
        let descriptor = try ElementaryStreamDescriptor(bytes: Self.ffmpegs)
        #expect(descriptor.esID == 2)
        #expect(descriptor.decoderConfig.objectTypeIndication == 0x40)
        #expect(descriptor.decoderConfig.streamType == 5)
        #expect(descriptor.decoderConfig.maxBitrate == 128_000)
        #expect(descriptor.decoderConfig.averageBitrate == 127_856)
        #expect(descriptor.decoderConfig.decoderSpecificInfo == [0x11, 0x90, 0x56, 0xE5, 0x00])
        #expect(descriptor.slConfigPredefined == 2)
        #expect(descriptor.serialized == Self.ffmpegs)
    }

    @Test func everyCutIsAnError() {
        for length in 0..<Self.ffmpegs.count - 1 {
            #expect(throws: BitstreamError.self, "\(length) bytes") { try ElementaryStreamDescriptor(bytes: Array(Self.ffmpegs.prefix(length))) }
        }
    }

    /// A descriptor size past its parent is an error, not a read past the end.
    @Test func aSizeLargerThanTheDescriptorIsAnError() {
        var bytes = Self.ffmpegs
        bytes[12] = 0x7F  // DecoderConfigDescriptor's size
        #expect(throws: BitstreamError.self) { try ElementaryStreamDescriptor(bytes: bytes) }
    }
}

/// Inputs the fuzzer found, kept.
@Suite("AudioSpecificConfig regressions")
struct AudioSpecificConfigRegressionTests {
    /// SBR signalled hierarchically with escaped rates: what parses writes back to the same.
    @Test func escapedRatesRoundTrip() throws {
        let bytes: [UInt8] = [0x2F, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF, 0x73, 0x5B, 0x5B, 0x5B, 0x5B, 0xFF, 0xF9, 0x01, 0x0F, 0x5B, 0x5B, 0x5B, 0xFA, 0x17, 0x00, 0x60]
        guard let config = try? AudioSpecificConfig(bytes: bytes) else { return }
        let written = try config.serialized()
        let read = try AudioSpecificConfig(bytes: written)
        #expect(read == config, "\(config) wrote \(written) which reads as \(read)")
    }
}
