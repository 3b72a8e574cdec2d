import Bitstream

/// Cuts a LOAS stream (`AudioSyncStream()`, ISO/IEC 14496-3 §1.7.2: AAC in LATM in an MPEG-2
/// transport stream, `stream_type` 0x11) into AAC frames: each sync word 0x2B7 and 13-bit length
/// frames one AudioMuxElement, whose StreamMuxConfig (carried in band) gives the configuration.
/// Chunks may cut elements anywhere. Elements before the first configuration, and elements that
/// do not parse, are left out and counted; bytes without a sync word are skipped.
public struct LOASFrameSplitter: Sendable {
    /// One AAC frame.
    public struct Frame: Sendable {
        /// The raw data block.
        public var payload: [UInt8]
        /// The configuration in force.
        public var config: StreamMuxConfig
        /// Where its AudioMuxElement started in the stream (its sync word).
        public var offset: Int
        /// The frame's place among its element's subframes (0 for the first).
        public var subFrame: Int
    }

    /// Counts of what was cut and what was wrong.
    public struct Statistics: Sendable, Hashable {
        /// Frames handed out.
        public var frames = 0
        /// Bytes skipped looking for a sync word.
        public var skippedBytes = 0
        /// Elements left out (no configuration yet, or not parsing).
        public var elementsLeftOut = 0
    }

    /// The counts so far.
    public private(set) var statistics = Statistics()
    /// The first problems (at most 100), each with its offset in the stream, in words.
    public private(set) var problems: [String] = []
    /// The configuration in force.
    public private(set) var config: StreamMuxConfig?

    private var pending: [UInt8] = []
    private var pendingOffset = 0

    /// A splitter at the start of a stream.
    public init() {}

    /// Takes the next bytes; returns the frames they complete.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) -> [Frame] {
        pending.append(contentsOf: bytes.bindMemory(to: UInt8.self))
        return cut()
    }

    /// Takes the next bytes.
    public mutating func append(_ bytes: [UInt8]) -> [Frame] {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Ends the stream; an element it ends inside is left out.
    public mutating func finish() -> [Frame] {
        let frames = cut()
        if !pending.isEmpty {
            note("byte \(pendingOffset): the stream ends inside a LOAS element (\(pending.count) bytes); left out")
            statistics.elementsLeftOut += 1
            pendingOffset += pending.count
            pending.removeAll()
        }
        return frames
    }

    private mutating func note(_ text: String) { if problems.count < 100 { problems.append(text) } }

    private mutating func cut() -> [Frame] {
        var frames: [Frame] = []
        var start = 0
        defer {
            if start > 0 {
                pending.removeFirst(start)
                pendingOffset += start
            }
        }
        while pending.count - start >= 3 {
            guard pending[start] == 0x56, pending[start + 1] & 0xE0 == 0xE0 else {
                var next = start + 1
                while next + 1 < pending.count && !(pending[next] == 0x56 && pending[next + 1] & 0xE0 == 0xE0) { next += 1 }
                if next + 1 >= pending.count { next = pending.count - 1 }
                statistics.skippedBytes += next - start
                note("byte \(pendingOffset + start): \(next - start) byte(s) without a LOAS sync word, skipped")
                start = next
                continue
            }
            let length = Int(pending[start + 1] & 0x1F) << 8 | Int(pending[start + 2])
            let end = start + 3 + length
            guard end <= pending.count else { break }
            do throws(BitstreamError) {
                let element = try pending.withTypedBytes { (raw) throws(BitstreamError) in
                    try AudioMuxElement(bytes: UnsafeRawBufferPointer(rebasing: raw[(start + 3)..<end]), muxConfigPresent: true, current: config)
                }
                if let carried = element.streamMuxConfig { config = carried }
                for (index, payload) in element.payloads.enumerated() {
                    frames.append(Frame(payload: payload, config: config!, offset: pendingOffset + start, subFrame: index))
                    statistics.frames += 1
                }
            } catch {
                statistics.elementsLeftOut += 1
                note("byte \(pendingOffset + start): a LOAS element that does not parse (\(error.description)); left out")
            }
            start = end
        }
        return frames
    }
}
