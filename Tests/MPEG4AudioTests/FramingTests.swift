import Bitstream
import MPEG4Audio
import Testing

/// ADTS (ISO/IEC 13818-7 §6.2, 14496-3 §1.A.2) and LOAS/LATM (§1.7): frames found in streams
/// cut anywhere, damage skipped and said.
@Suite("ADTS and LOAS framing")
struct FramingTests {
    /// An ADTS frame of `payload`: AAC LC at 48 kHz stereo, as FFmpeg writes it.
    static func adts(_ payload: [UInt8], profile: UInt8 = 1) -> [UInt8] {
        ADTSHeader(profile: profile, samplingFrequencyIndex: 3, channelConfiguration: 2, payloadSize: payload.count).bytes + payload
    }

    static let payloads: [[UInt8]] = (0..<12).map { index in (0..<(20 + index * 37)).map { UInt8(truncatingIfNeeded: $0 * 7 + index) } }
    static let stream: [UInt8] = payloads.flatMap { adts($0) }

    @Test func aHeaderReadsBackWhatWasWritten() throws {
        let header = ADTSHeader(profile: 1, samplingFrequencyIndex: 4, channelConfiguration: 1, payloadSize: 300)
        let bytes = header.bytes
        #expect(bytes.count == 7)
        #expect(bytes[0] == 0xFF && bytes[1] == 0xF1)  // MPEG-4, layer 0, no CRC
        let read = try bytes.withUnsafeBytes { try ADTSHeader(bytes: $0) }
        #expect(read == header)
        #expect(read.frameLength == 307)
        #expect(read.bufferFullness == 0x7FF)
        #expect(read.samplingFrequency == 44_100)
        #expect(read.audioSpecificConfig().codecString == "mp4a.40.2")
    }

    /// A header with a CRC is 9 bytes; the frame's payload starts after the CRC.
    @Test func aHeaderWithACRC() throws {
        var bytes = ADTSHeader(profile: 1, samplingFrequencyIndex: 3, channelConfiguration: 2, payloadSize: 10).bytes
        bytes[1] &= 0xFE  // protection_absent 0
        let length = 9 + 10
        bytes[3] = bytes[3] & 0xFC | UInt8(length >> 11)
        bytes[4] = UInt8(length >> 3 & 0xFF)
        bytes[5] = bytes[5] & 0x1F | UInt8(length & 7) << 5
        let frame = bytes + [0xAB, 0xCD] + [UInt8](repeating: 0x11, count: 10)
        let header = try frame.withUnsafeBytes { try ADTSHeader(bytes: $0) }
        #expect(header.hasCRC)
        #expect(header.size == 9)
        var splitter = ADTSFrameSplitter()
        let frames = splitter.append(frame) + splitter.finish()
        #expect(frames.count == 1)
        #expect(frames.first?.payload == [UInt8](repeating: 0x11, count: 10))
    }

    /// Viewed where they lie: a frame wholly inside the chunk given is shown with its range
    /// there (what a reader slices without copying), one begun in an earlier chunk gathered;
    /// whatever the cut, every frame at its offset, and garbage between frames said once.
    @Test(arguments: [5, 7, 100, 333, 1 << 20])
    func framesViewedWhereTheyLie(chunk: Int) {
        let half = Self.payloads.prefix(6).reduce(0) { $0 + 7 + $1.count }
        let garbage: [UInt8] = [0x12, 0x34, 0xFF]
        let stream = Array(Self.stream[..<half]) + garbage + Array(Self.stream[half...])
        var expectedOffsets: [Int] = []
        var position = 0
        for (index, payload) in Self.payloads.enumerated() {
            if index == 6 { position += garbage.count }
            expectedOffsets.append(position)
            position += 7 + payload.count
        }
        var splitter = ADTSFrameSplitter()
        var viewed: [(payload: [UInt8], offset: Int)] = []
        var inPlace = 0
        var start = 0
        while start < stream.count {
            let bytes = Array(stream[start..<min(start + chunk, stream.count)])
            bytes.withUnsafeBytes { raw in
                splitter.append(raw) { (view: ADTSFrameSplitter.FrameView) in
                    let payload = Array(view.payload.bindMemory(to: UInt8.self))
                    if let range = view.rangeInAppendedBytes {
                        #expect(Array(bytes[range]) == payload, "the range is where the payload lies in the chunk")
                        inPlace += 1
                    }
                    viewed.append((payload, view.offset))
                }
            }
            start += chunk
        }
        viewed += splitter.finish().map { ($0.payload, $0.offset) }
        #expect(viewed.map(\.payload) == Self.payloads)
        #expect(viewed.map(\.offset) == expectedOffsets)
        #expect(splitter.problems.map(\.description) == ["byte \(half): 3 byte(s) that are no ADTS frame, skipped"])
        #expect(splitter.statistics.frames == Self.payloads.count && splitter.statistics.skippedBytes == garbage.count)
        // In one chunk every frame lies in place; in chunks of 100 bytes or more, those that
        // do not straddle a cut.
        if chunk == 1 << 20 { #expect(inPlace == Self.payloads.count) }
        if chunk >= 100 { #expect(inPlace > 0, "frames seen in place: \(inPlace)") }
    }

    /// Whatever the chunk size, the same frames at the same offsets.
    @Test(arguments: [1, 2, 3, 6, 7, 8, 64, 1000, 1 << 20])
    func framesAcrossChunks(chunk: Int) {
        var splitter = ADTSFrameSplitter()
        var frames: [ADTSFrameSplitter.Frame] = []
        var start = 0
        while start < Self.stream.count {
            frames += splitter.append(Array(Self.stream[start..<min(start + chunk, Self.stream.count)]))
            start += chunk
        }
        frames += splitter.finish()
        #expect(frames.map(\.payload) == Self.payloads)
        var offset = 0
        for (frame, payload) in zip(frames, Self.payloads) {
            #expect(frame.offset == offset)
            offset += 7 + payload.count
        }
        #expect(splitter.problems.isEmpty)
        #expect(splitter.statistics.frames == Self.payloads.count)
    }

    /// Garbage before and between frames is skipped and said, with where; every frame is kept
    /// (a frame found after garbage counts once the next one follows it).
    @Test func garbageIsSkippedAndSaid() {
        let garbage: [UInt8] = [0x00, 0x12, 0xFF, 0x00, 0x34, 0x56]
        let half = Self.payloads.prefix(6).reduce(0) { $0 + 7 + $1.count }
        let stream = garbage + Array(Self.stream[..<half]) + garbage + Array(Self.stream[half...])
        var splitter = ADTSFrameSplitter()
        let frames = splitter.append(stream) + splitter.finish()
        #expect(frames.map(\.payload) == Self.payloads)
        #expect(splitter.statistics.skippedBytes == 2 * garbage.count)
        #expect(splitter.problems.first?.offset == 0)
        #expect(splitter.problems.contains { $0.description.contains("skipped") })
    }

    /// A stream cut inside its last frame: the frames before it, and the cut said.
    @Test func aCutEndIsSaid() {
        var splitter = ADTSFrameSplitter()
        let frames = splitter.append(Array(Self.stream.dropLast(5))) + splitter.finish()
        #expect(frames.map(\.payload) == Array(Self.payloads.dropLast()))
        #expect(splitter.statistics.framesLeftOut == 1)
        guard case .truncated(let missing) = splitter.problems.last?.kind else {
            Issue.record("expected a cut frame, got \(splitter.problems)")
            return
        }
        #expect(missing == 5)
    }

    /// An ADTS frame of several raw data blocks is left out with the reason (a sample is one
    /// AAC frame); the frames around it are kept.
    @Test func severalRawDataBlocksAreRefused() {
        var multi = Self.adts([UInt8](repeating: 0x22, count: 40))
        multi[6] = multi[6] & 0xFC | 1  // number_of_raw_data_blocks_in_frame: 2 blocks
        let stream = Self.adts(Self.payloads[0]) + multi + Self.adts(Self.payloads[1])
        var splitter = ADTSFrameSplitter()
        let frames = splitter.append(stream) + splitter.finish()
        #expect(frames.map(\.payload) == [Self.payloads[0], Self.payloads[1]])
        #expect(splitter.problems.contains { if case .severalRawDataBlocks(2) = $0.kind { true } else { false } })
    }

    /// A lost packet: the half frame held is forgotten and counted, the next frame found.
    @Test func resynchronizingForgetsTheHalfFrame() {
        let firstLength = 7 + Self.payloads[0].count
        var splitter = ADTSFrameSplitter()
        var frames = splitter.append(Array(Self.stream[..<(firstLength + 10)]))
        splitter.resynchronize()
        let secondLength = 7 + Self.payloads[1].count
        frames += splitter.append(Array(Self.stream[(firstLength + secondLength)...])) + splitter.finish()
        #expect(frames.map(\.payload) == [Self.payloads[0]] + Array(Self.payloads.dropFirst(2)))
        #expect(splitter.statistics.framesLeftOut == 1)
    }

    /// Random bytes never trap and never make a frame longer than its header says.
    @Test func randomBytesAreSafe() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0..<4000, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var splitter = ADTSFrameSplitter()
            for frame in splitter.append(bytes) + splitter.finish() {
                #expect(frame.payload.count + frame.header.size == frame.header.frameLength)
            }
        }
    }

    // MARK: LOAS

    /// A LOAS element carrying `payload`, with its StreamMuxConfig in band.
    static func loas(_ payload: [UInt8], config: StreamMuxConfig) throws -> [UInt8] {
        var element = BitWriter()
        element.flag(false)  // useSameStreamMux: the configuration follows
        try config.write(to: &element)
        var remaining = payload.count
        while remaining >= 255 {
            element.bits(255, 8)
            remaining -= 255
        }
        element.bits(UInt32(remaining), 8)
        for byte in payload { element.bits(UInt32(byte), 8) }
        while !element.isByteAligned { element.flag(false) }
        let body = element.bytes
        return [0x56, 0xE0 | UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    @Test func streamMuxConfigRoundTrips() throws {
        let config = StreamMuxConfig(audioSpecificConfig: AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 48_000, channelConfiguration: 2))
        let bytes = try config.serialized()
        let read = try StreamMuxConfig(bytes: bytes)
        #expect(read.audioSpecificConfig == config.audioSpecificConfig)
        #expect(try read.serialized() == bytes)
    }

    @Test(arguments: [1, 5, 300])
    func loasFramesAcrossChunks(chunk: Int) throws {
        let config = StreamMuxConfig(audioSpecificConfig: AudioSpecificConfig(audioObjectType: .aacLC, samplingFrequency: 44_100, channelConfiguration: 1))
        let stream = try Self.payloads.flatMap { try Self.loas($0, config: config) }
        var splitter = LOASFrameSplitter()
        var frames: [LOASFrameSplitter.Frame] = []
        var start = 0
        while start < stream.count {
            frames += splitter.append(Array(stream[start..<min(start + chunk, stream.count)]))
            start += chunk
        }
        frames += splitter.finish()
        #expect(frames.map(\.payload) == Self.payloads)
        #expect(frames.first?.config.audioSpecificConfig.samplingFrequency == 44_100)
        #expect(splitter.problems.isEmpty)
    }
}
