import Foundation
import H264Bitstream
import MediaCore
import MPEG4Audio
import TestSupport
import Testing

/// The first SPS and PPS of an Annex-B stream, and every SPS/PPS pair as the stream changes them.
func parameterSets(_ stream: [UInt8]) -> (sps: [[UInt8]], pps: [[UInt8]]) {
    var sps: [[UInt8]] = [], pps: [[UInt8]] = []
    for nal in AnnexB.nalUnits(in: stream) {
        let bytes = Array(stream[nal.payload])
        switch NALUnitHeader(byte: bytes[0]).nalUnitType {
        case .sps where !sps.contains(bytes): sps.append(bytes)
        case .pps where !pps.contains(bytes): pps.append(bytes)
        default: break
        }
    }
    return (sps, pps)
}

/// The avcC ffmpeg writes when it copies a raw stream into MP4 (the oracle).
func ffmpegAVCC(_ stream: [UInt8]) throws -> [UInt8]? {
    let input = try Checkout.temporaryFile(stream)
    let output = input + ".mp4"
    defer { try? FileManager.default.removeItem(atPath: input); try? FileManager.default.removeItem(atPath: output) }
    let result = try run("ffmpeg", ["-v", "error", "-y", "-f", "h264", "-i", input, "-c", "copy", output])
    guard result.status == 0 else { throw TestFailure("ffmpeg failed: \(result.stderrText)") }
    let mp4 = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
    let tag: [UInt8] = Array("avcC".utf8)
    guard let at = (4..<(mp4.count - 4)).first(where: { Array(mp4[$0..<($0 + 4)]) == tag }) else { return nil }
    let size = mp4[(at - 4)..<at].reduce(0) { $0 << 8 | Int($1) }
    return Array(mp4[(at + 4)..<(at - 4 + size)])
}

struct X264Setup: Sendable, CustomTestStringConvertible {
    var pixelFormat: String
    var arguments: [String]
    var codecString: String
    var chroma: Int
    var depth: Int
    var testDescription: String { arguments.joined(separator: " ") }
}

@Suite("Video format descriptions and avcC")
struct FormatDescriptionTests {
    static let setups: [X264Setup] = [
        .init(pixelFormat: "yuv420p", arguments: ["--profile", "high", "--level", "3.1"], codecString: "avc1.64001f", chroma: 1, depth: 8),
        .init(pixelFormat: "yuv420p", arguments: ["--profile", "baseline", "--level", "3"], codecString: "avc1.42c01e", chroma: 1, depth: 8),
        .init(pixelFormat: "yuv420p", arguments: ["--profile", "main", "--level", "4"], codecString: "avc1.4d4028", chroma: 1, depth: 8),
        .init(pixelFormat: "yuv422p10le", arguments: ["--output-csp", "i422", "--output-depth", "10", "--level", "4"], codecString: "avc1.7a0028", chroma: 2, depth: 10),
        .init(pixelFormat: "yuv420p10le", arguments: ["--output-depth", "10", "--level", "4"], codecString: "avc1.6e0028", chroma: 1, depth: 10),
        .init(pixelFormat: "yuv444p", arguments: ["--output-csp", "i444", "--level", "4"], codecString: "avc1.f40028", chroma: 3, depth: 8),
    ]

    @Test(.requires(.ffmpeg, .x264), arguments: setups)
    func avcCMatchesFFmpegAndRoundTrips(_ setup: X264Setup) throws {
        let stream = try x264Stream(frames: 3, sourcePixelFormat: setup.pixelFormat, arguments: setup.arguments)
        let (sps, pps) = parameterSets(stream)
        let description = try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps)
        #expect(description.codecString == setup.codecString)
        #expect(description.chromaFormatIdc == setup.chroma)
        #expect(description.bitDepthLuma == setup.depth && description.bitDepthChroma == setup.depth)
        #expect((description.width, description.height) == (176, 144))
        #expect(description.frameRate == FrameRate(25, 1))
        #expect(description.parameterSet(at: 0) == sps[0])
        #expect(description.parameterSet(at: 1) == pps[0])
        #expect(description.parameterSet(at: 2) == nil)
        let avcC = description.avcC
        let expected = try #require(try ffmpegAVCC(stream))
        #expect(avcC == expected)
        let parsed = try VideoFormatDescription(avcC: avcC)
        #expect(parsed == description)
        #expect(parsed.avcC == avcC)
    }

    @Test(.requires(.ffmpeg, .x264)) func aWrongHighProfileExtensionIsCorrectedFromTheSPS() throws {
        let stream = try x264Stream(frames: 1, sourcePixelFormat: "yuv422p10le", arguments: ["--output-csp", "i422", "--output-depth", "10"])
        let (sps, pps) = parameterSets(stream)
        var avcC = try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps).avcC
        // What one peer writes: 4:2:0, 8-bit, whatever the stream.
        avcC[avcC.count - 4] = 0xFD
        avcC[avcC.count - 3] = 0xF8
        avcC[avcC.count - 2] = 0xF8
        let parsed = try VideoFormatDescription(avcC: avcC)
        #expect(parsed.chromaFormatIdc == 2 && parsed.bitDepthLuma == 10)
        #expect(parsed.avcC[parsed.avcC.count - 4] == 0xFE)
    }

    /// One contract for ``VideoFormatDescription/canAccept(_:)`` and the decompression
    /// session's: any H.264 description with the same NAL length size can follow (an H.264
    /// decoder takes new parameter sets in band, a new size included); another length size
    /// cannot. (The description's answer used to refuse a size change the session took.)
    @Test(.requires(.ffmpeg, .x264)) func canAcceptIsTheDecodersContract() throws {
        func describe(_ size: String, _ format: String = "yuv420p", _ arguments: [String] = []) throws -> VideoFormatDescription {
            let stream = try x264Stream(frames: 1, size: size, sourcePixelFormat: format, arguments: arguments)
            let (sps, pps) = parameterSets(stream)
            return try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps)
        }
        let base = try describe("176x144", "yuv420p", ["--profile", "high"])
        let sameSizeOtherSettings = try describe("176x144", "yuv420p", ["--profile", "high", "--crf", "40", "--ref", "1"])
        let bigger = try describe("352x288", "yuv420p", ["--profile", "high"])
        let tenBit = try describe("176x144", "yuv420p10le", ["--output-depth", "10"])
        let baseline = try describe("176x144", "yuv420p", ["--profile", "baseline"])
        for other in [base, sameSizeOtherSettings, bigger, tenBit, baseline] { #expect(base.canAccept(other)) }
        #expect(base.hasSamePictureGeometry(as: sameSizeOtherSettings) && base.hasSamePictureGeometry(as: baseline))
        #expect(!base.hasSamePictureGeometry(as: bigger) && !base.hasSamePictureGeometry(as: tenBit))
        let twoByteLengths = try VideoFormatDescription(sequenceParameterSets: base.sequenceParameterSets, pictureParameterSets: base.pictureParameterSets,
                                                        nalUnitLengthSize: 2)
        #expect(!base.canAccept(twoByteLengths))
    }

    @Test func badInputIsATypedErrorWithItsOffset() throws {
        let truncated: [UInt8] = [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0x00, 0x20, 0x67]
        let error = #expect(throws: BitstreamError.self) { try VideoFormatDescription(avcC: truncated) }
        #expect(error?.code == .invalidLength)
        #expect(error?.byteOffset == 6)
        #expect(throws: BitstreamError.self) { try VideoFormatDescription(avcC: [2, 0x64]) }
        #expect(throws: BitstreamError.self) { try VideoFormatDescription(sequenceParameterSets: [[0x67, 0x64]], pictureParameterSets: [[0x68, 0xEE]]) }
        #expect(throws: BitstreamError.self) { try VideoFormatDescription(sequenceParameterSets: [], pictureParameterSets: []) }
    }

    /// Corpus streams whose SPS changes mid-stream (H264KIT_CORPUS).
    @Test(.requiresCorpus)
    func corpusResolutionChangesAreAcceptedWithNewGeometry() throws {
        let corpus = URL(fileURLWithPath: ProcessInfo.processInfo.environment["H264KIT_CORPUS"]!)
        let stream = [UInt8](try Data(contentsOf: corpus.appendingPathComponent("cisco_openh264/Error_I_P.264")))
        let parser = H264StreamParser.parse(annexB: stream)
        let (spsList, pps) = parameterSets(stream)
        #expect(spsList.count == 3)
        // Each SPS with the PPS that refers to it.
        let descriptions = spsList.compactMap { sps in
            pps.lazy.compactMap { try? VideoFormatDescription(sequenceParameterSets: [sps], pictureParameterSets: [$0]) }.first
        }
        #expect(descriptions.map { "\($0.width)x\($0.height)" } == ["352x288", "640x480", "352x288"])
        #expect(descriptions[0].canAccept(descriptions[1]) && descriptions[1].canAccept(descriptions[2]))
        #expect(!descriptions[0].hasSamePictureGeometry(as: descriptions[1]))
        #expect(parser.pictureSPSChanges.count == 3)
    }
}

@Suite("Audio format descriptions")
struct AudioFormatDescriptionTests {
    /// The configuration's bytes and what they say stay together: a new magic cookie is read
    /// again, and copies share the old one until then.
    @Test func aNewMagicCookieIsReadAgain() throws {
        let stereo48k: [UInt8] = [0x11, 0x90]  // AAC LC, 48 kHz, 2 channels
        let mono44k: [UInt8] = [0x12, 0x08]    // AAC LC, 44.1 kHz, 1 channel
        var format = try AudioFormatDescription(aacConfiguration: stereo48k)
        let copy = format
        #expect(format.audioSpecificConfig?.channelConfiguration == 2)
        format.magicCookie = mono44k
        #expect(format.magicCookie == mono44k)
        #expect(format.audioSpecificConfig?.channelConfiguration == 1)
        #expect(format.audioSpecificConfig?.samplingFrequency == 44_100)
        #expect(copy.magicCookie == stereo48k && copy.audioSpecificConfig?.channelConfiguration == 2)
        #expect(format != copy)
        #expect(copy == (try AudioFormatDescription(aacConfiguration: stereo48k)))
        // Another codec's cookie is kept as bytes, not read as AAC.
        var law = AudioFormatDescription(codec: "ulaw", sampleRate: 8000, channelCount: 1, framesPerPacket: 1)
        law.magicCookie = stereo48k
        #expect(law.audioSpecificConfig == nil && law.magicCookie == stereo48k)
    }
}
