import Foundation
import H264Bitstream
import MediaCore
import TestSupport
import SampleFlow
import Testing

@Suite("Sample buffer reader")
struct SampleBufferReaderTests {
    static let fixture = "cisco-bframe-cabac.264"

    static func all(_ reader: SampleBufferReader) throws -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while let sample = try reader.next() { samples.append(sample) }
        return samples
    }

    /// The reader gives what the builder gives, from a file, a descriptor and bytes.
    @Test func theSameSamplesAsTheBuilder() async throws {
        let bytes = try Checkout.fixture(Self.fixture)
        let built = try SampleBufferBuilder.samples(fromAnnexB: bytes, frameRate: .stream(fallback: FrameRate(25, 1))).samples
        let path = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for reader in [try SampleBufferReader(path: path), SampleBufferReader(bytes: bytes)] {
            let samples = try Self.all(reader)
            #expect(samples.map(\.timing) == built.map(\.timing))
            #expect(samples.map(\.data) == built.map(\.data))
        }
        var streamed: [SampleBuffer] = []
        for try await sample in try SampleBufferReader(path: path) { streamed.append(sample) }
        #expect(streamed.map(\.timing) == built.map(\.timing))
    }

    /// The remux policies: leading pictures before the first sync sample are left out and
    /// counted; a stream without timing gets the assumed rate with a warning; a given rate
    /// overrides the stream's VUI timing, with a warning naming both.
    @Test(.requires(.ffmpeg, .x264)) func policiesAreOptions() throws {
        let bytes = try x264Stream(frames: 30, arguments: ["--keyint", "10", "--bframes", "0"])
        let whole = try Self.all(SampleBufferReader(bytes: bytes))
        // Start mid-GOP: at the first non-IDR slice, with the parameter sets in front.
        let units = AnnexB.nalUnits(in: bytes)
        let firstSlice = units.first { bytes[$0.payload.lowerBound] & 0x1F == 1 }!
        let headers = units.filter { [7, 8].contains(bytes[$0.payload.lowerBound] & 0x1F) }.flatMap { [0, 0, 0, 1] + bytes[$0.payload] }
        let cut = Array(headers) + Array(bytes[firstSlice.startCodeOffset...])
        let reader = SampleBufferReader(bytes: cut)
        let samples = try Self.all(reader)
        #expect(samples.first?.isSync == true)
        #expect(reader.skippedLeadingSamples > 0 && samples.count + reader.skippedLeadingSamples < whole.count + 1)
        #expect(reader.warnings.contains(.leadingSamplesSkipped(count: reader.skippedLeadingSamples)))
        let everything = SampleBufferReader(bytes: cut, options: .init(startsAtSyncSample: false))
        #expect(try Self.all(everything).count == samples.count + reader.skippedLeadingSamples)

        let given = SampleBufferReader(bytes: bytes, options: .init(frameRate: FrameRate(50, 1)))
        let fast = try Self.all(given)
        #expect(fast[1].duration == MediaTime(value: 1, timescale: 50))
        if let streamRate = H264StreamParser.parse(annexB: bytes).firstPictureSPS?.frameRate {
            #expect(given.warnings.contains(.frameRateOverridden(stream: streamRate, given: FrameRate(50, 1))))
        } else {
            let assumed = SampleBufferReader(bytes: bytes)
            _ = try Self.all(assumed)
            #expect(assumed.warnings.contains(.assumedFrameRate(FrameRate(25, 1))))
            #expect(given.warnings.isEmpty)
        }
        let strict = SampleBufferReader(bytes: bytes, options: .init(assumedFrameRate: nil))
        if H264StreamParser.parse(annexB: bytes).firstPictureSPS?.frameRate == nil {
            #expect { _ = try strict.next() } throws: { ($0 as? SampleFlowError)?.bitstreamError?.code == .missingTiming }
        }
    }

    @Test func slicesBeforeTheirParameterSetsAreRefusedOnRequest() throws {
        let bytes = try Checkout.fixture(Self.fixture)
        let stripped = AnnexB.nalUnits(in: bytes).filter { ![7, 8].contains(bytes[$0.payload.lowerBound] & 0x1F) }.flatMap { [0, 0, 0, 1] + bytes[$0.payload] }
        #expect { try Self.all(SampleBufferReader(bytes: Array(stripped))) } throws: { ($0 as? SampleFlowError)?.bitstreamError?.code == .noPicture }
        // The first picture is decodable, an earlier slice is not: refused, or (decoding) kept.
        let units = AnnexB.nalUnits(in: bytes)
        let slice = units.first { bytes[$0.payload.lowerBound] & 0x1F == 5 }!
        let early = [0, 0, 0, 1] + Array(bytes[slice.payload]) + bytes
        #expect { try Self.all(SampleBufferReader(bytes: early)) } throws: { ($0 as? SampleFlowError)?.bitstreamError?.code == .missingParameterSet }
        #expect(try Self.all(SampleBufferReader(bytes: early, options: .init(rejectsSlicesBeforeParameterSets: false))).count > 0)
    }

    @Test func notAStream() throws {
        #expect { _ = try SampleBufferReader(bytes: [UInt8](repeating: 0x42, count: 4096)).next() } throws: {
            ($0 as? SampleFlowError)?.bitstreamError?.code == .noPicture && "\($0)".contains("no H.264 start code found in 4096 bytes")
        }
    }
}


/// A caller that stops after 5 samples of a 50 MB stream, with `next()` and with a `break` out
/// of `for try await`: the reader goes cleanly (it used to trap at its deinit).
@Suite("Sample buffer reader stopped early")
struct SampleBufferReaderEarlyStopTests {
    @Test func fiveSamplesThenLetGo() async throws {
        do {
            let reader = try SampleBufferReader(path: LargeStream.annexB)
            for _ in 0..<5 { #expect(try reader.next() != nil) }
        }
        var count = 0
        for try await sample in try SampleBufferReader(path: LargeStream.annexB) {
            #expect(sample.size > 0)
            count += 1
            if count == 5 { break }
        }
        #expect(count == 5)
    }
}
