import TestSupport
import Testing
@testable import H264Bitstream

@Suite("Annex-B and AVCC framing")
struct FramingTests {
    /// A stream exercising every byte-stream edge case: junk first, a 4-byte then 3-byte start
    /// code, trailing_zero_8bits, an empty NAL unit, and zero padding at the end.
    static let edgeCaseStream: [UInt8] = [0xAB, 0xCD, 0, 0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1E, 0, 0, 0,  // junk, leading zeros, SPS-ish, trailing zeros
                                          0, 0, 1, 0x68, 0xCE,  // 4-byte (zero_byte is a trailing zero)
                                          0, 0, 1, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01,  // empty NAL, then an IDR with EPB
                                          0, 0, 1, 0x06, 0x05, 0, 0, 0, 0]

    @Test func wholeBufferScanFindsEveryNALUnit() {
        let nals = AnnexB.nalUnits(in: Self.edgeCaseStream)
        #expect(nals.map { Array(Self.edgeCaseStream[$0.payload]) } == [
            [0x67, 0x42, 0x00, 0x1E], [0x68, 0xCE], [0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01], [0x06, 0x05],
        ])
        #expect(nals.map(\.startCodeLength) == [4, 4, 3, 3])
        #expect(nals[0].startCodeOffset == 3)
        Self.edgeCaseStream.withUnsafeBytes { #expect(AnnexB.leadingGarbageCount(in: $0) == 2) }
    }

    static func splitIncrementally(_ stream: [UInt8], chunkSizes: () -> Int) -> ([AnnexBNALUnit], [[UInt8]], Int) {
        var splitter = AnnexBStreamSplitter()
        var locations: [AnnexBNALUnit] = []
        var payloads: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + max(1, chunkSizes()))
            stream[offset..<end].withUnsafeBytes { chunk in
                splitter.append(chunk) { location, bytes in
                    locations.append(location)
                    payloads.append(Array(bytes))
                }
            }
            offset = end
        }
        splitter.finish { location, bytes in
            locations.append(location)
            payloads.append(Array(bytes))
        }
        return (locations, payloads, splitter.leadingGarbageCount)
    }

    /// The drip-feed check: the same NAL units whatever the chunking (swift-nio's
    /// ByteToMessageDecoderVerifier idea).
    @Test(arguments: [0, 1, 2, 3])
    func incrementalSplitMatchesWholeBufferScan(_ seed: Int) throws {
        var streams = [Self.edgeCaseStream]
        for name in ["cisco-bframe-cabac.264", "jcodec-fmo-explicit.264", "jcodec-random_1.264"] {
            streams.append(try Fixtures.bytes(name))
        }
        var rng = SeededGenerator(seed: UInt64(seed))
        for stream in streams {
            let expected = AnnexB.nalUnits(in: stream)
            let whole = Self.splitIncrementally(stream) { stream.count }
            let byteByByte = Self.splitIncrementally(stream) { 1 }
            let random = Self.splitIncrementally(stream) { Int.random(in: 1...97, using: &rng) }
            for result in [whole, byteByByte, random] {
                #expect(result.0 == expected)
                #expect(result.1 == expected.map { Array(stream[$0.payload]) })
                stream.withUnsafeBytes { #expect(result.2 == AnnexB.leadingGarbageCount(in: $0)) }
            }
        }
    }

    @Test func noStartCodeMeansNoNALUnitsAndAllGarbage() {
        let junk: [UInt8] = [1, 2, 3, 0, 0, 2, 0, 0]
        #expect(AnnexB.nalUnits(in: junk).isEmpty)
        let (nals, _, garbage) = Self.splitIncrementally(junk) { 3 }
        #expect(nals.isEmpty)
        #expect(garbage == junk.count)
    }

    @Test(arguments: [1, 2, 4])
    func avccRoundTrip(lengthSize: Int) throws {
        let nals: [[UInt8]] = [[0x67, 1, 2, 3], [0x68, 4], Array(repeating: 0x41, count: 200), [0x65]]
        var sample: [UInt8] = []
        for nal in nals { try AVCC.append(nalUnit: nal.span, lengthSize: lengthSize, to: &sample) }
        let ranges = try AVCC.nalUnitRanges(in: sample.span, lengthSize: lengthSize)
        #expect(ranges.map { Array(sample[$0]) } == nals)
        // Annex-B from AVCC and back gives the same NAL units.
        var annexB: [UInt8] = []
        for range in ranges { AnnexB.append(nalUnit: sample.span.extracting(range), to: &annexB) }
        #expect(AnnexB.nalUnits(in: annexB).map { Array(annexB[$0.payload]) } == nals)
    }

    @Test func avccRejectsLengthsPastTheEnd() {
        let sample: [UInt8] = [0, 0, 0, 5, 0x65, 1, 2]
        let error = #expect(throws: BitstreamError.self) { try AVCC.nalUnitRanges(in: sample.span, lengthSize: 4) }
        #expect(error?.code == .invalidLength)
        #expect(error?.byteOffset == 0)
        let cut: [UInt8] = [0, 2, 0x65, 1, 0]
        let truncated = #expect(throws: BitstreamError.self) { try AVCC.nalUnitRanges(in: cut.span, lengthSize: 2) }
        #expect(truncated?.code == .truncated)
        #expect(truncated?.byteOffset == 4)
    }

    @Test func avccRefusesANALUnitTooLongForItsPrefix() {
        var out: [UInt8] = []
        let big = [UInt8](repeating: 1, count: 256)
        #expect(throws: BitstreamError.self) { try AVCC.append(nalUnit: big.span, lengthSize: 1, to: &out) }
        #expect(out.isEmpty)
    }
}

/// A deterministic generator so random chunkings are repeatable.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
