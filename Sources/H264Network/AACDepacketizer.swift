import MediaCore
import MPEG4Audio

/// The RTP payload format for AAC (RFC 3640 `mpeg4-generic`), receiving side: a pure state
/// machine from RTP packets to raw AAC frames, each with its timestamp.
///
/// Packets are put back in order by an ``RTPJitterBuffer``. Each payload's AU-header section is
/// read with the lengths the session description states (``MPEG4GenericPayloadFormat``: AAC-hbr's
/// 13-bit sizes and 3-bit indices, or any other), the auxiliary section skipped; the n-th frame
/// of a packet is timed at the packet's timestamp plus n frame durations (§3.2.3.2).
///
/// - A frame over several packets (§3.2.3.1) is gathered whether each fragment states the
///   whole frame's size (the RFC's form) or its own size with the marker bit on the last
///   (older senders); one touched by loss, or not whole when its marker comes, is dropped and
///   counted, never handed on.
/// - Frames wrapped in ADTS (some cameras send them so) are unwrapped: a frame that begins with
///   an ADTS header of one raw data block stating its whole length loses the header (as
///   GStreamer's depayloader does; ffmpeg passes the header on inside the frame).
/// - Interleaving (non-zero AU-index or index deltas, §3.2.3.2) is refused: such packets are
///   counted in ``Statistics/packetsInterleaved`` and their frames dropped.
public struct AACDepacketizer: Sendable {
    /// How packets are taken.
    public struct Configuration: Sendable, Hashable {
        /// The AU-header layout (sizes, indices, ...) and payload type, from the SDP.
        public var format: MPEG4GenericPayloadFormat
        /// One frame's duration in RTP clock ticks (the format's `constantDuration`, else the
        /// configuration's frame length: 1024 or 960).
        public var frameDuration: UInt32
        /// Packets held waiting for a missing one before it is declared lost.
        public var reorderDepth: Int
        /// The largest frame gathered; a larger one is dropped as damaged.
        public var maximumFrameSize: Int

        /// A configuration for `format`; the frame duration is its `constantDuration`, else
        /// read from its AudioSpecificConfig (1024 when that does not say).
        public init(format: MPEG4GenericPayloadFormat, frameDuration: UInt32? = nil, reorderDepth: Int = 64, maximumFrameSize: Int = 1 << 16) {
            self.format = format
            let fromConfig = (try? AudioFormatDescription(aacConfiguration: format.config)).map { description in
                description.sampleRate == format.clockRate ? description.framesPerPacket : description.audioSpecificConfig?.frameLength ?? 1024
            }
            self.frameDuration = frameDuration ?? UInt32(clamping: format.constantDuration ?? fromConfig ?? 1024)
            self.reorderDepth = reorderDepth
            self.maximumFrameSize = maximumFrameSize
        }
    }

    /// One AAC frame as it arrived.
    public struct Frame: Sendable, Hashable {
        /// The frame's RTP timestamp.
        public var timestamp: UInt32
        /// The timestamp counted from the first frame's, wraps of 2^32 unfolded.
        public var extendedTimestamp: Int64
        /// The raw frame (a raw_data_block, no ADTS header).
        public var bytes: [UInt8]

        /// A frame.
        public init(timestamp: UInt32, extendedTimestamp: Int64, bytes: [UInt8]) {
            self.timestamp = timestamp
            self.extendedTimestamp = extendedTimestamp
            self.bytes = bytes
        }
    }

    /// What the depacketizer has seen.
    public struct Statistics: Sendable, Hashable, Codable {
        /// The packets' order: received, lost, reordered, duplicated, late.
        public var packets = RTPJitterBuffer.Statistics()
        /// Packets of another payload type, or not RTP.
        public var packetsIgnored = 0
        /// Packets whose AU-header section or frames do not fit the payload.
        public var packetsInvalid = 0
        /// Packets with interleaved frames (refused).
        public var packetsInterleaved = 0
        /// Frames handed on whole.
        public var framesComplete = 0
        /// Frames dropped: fragments touched by loss, not whole at their end, too large, or
        /// in an invalid or interleaved packet.
        public var framesDropped = 0
        /// Frames that came with an ADTS header, removed.
        public var framesUnwrapped = 0

        /// Nothing seen.
        public init() {}
    }

    /// How packets are taken.
    public let configuration: Configuration
    /// What has been seen so far.
    public var statistics: Statistics {
        var statistics = counts
        statistics.packets = jitterBuffer.statistics
        return statistics
    }

    private var counts = Statistics()
    private var jitterBuffer: RTPJitterBuffer
    /// A frame being gathered from fragments.
    private var assembly: Assembly?
    /// Packets were lost just before the next one (which may then not be its frame's first).
    private var lossBeforeNext = false
    private var lastTimestamp: UInt32?
    private var unfolded: Int64 = 0

    private struct Assembly {
        var timestamp: UInt32
        /// The whole frame's size when the fragments state it (the RFC's form), else nil.
        var size: Int?
        var bytes: [UInt8]
        var fragments = 1
        var damaged = false
    }

    /// A depacketizer with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        jitterBuffer = RTPJitterBuffer(reorderDepth: configuration.reorderDepth)
    }

    /// Packets held behind a missing one, waiting for it.
    public var heldPacketCount: Int { jitterBuffer.heldPacketCount }

    /// Takes one datagram; returns the frames it completes, in order. A datagram that is not
    /// an RTP packet is counted and ignored.
    public mutating func receive(datagram: UnsafeRawBufferPointer) -> [Frame] {
        do { return receive(try RTPPacket(parsing: datagram)) } catch {
            counts.packetsIgnored += 1
            return []
        }
    }

    /// Takes one packet; returns the frames it completes, in order.
    public mutating func receive(_ packet: RTPPacket) -> [Frame] {
        guard packet.payloadType == configuration.format.payloadType else {
            counts.packetsIgnored += 1
            return []
        }
        return take(jitterBuffer.insert(packet))
    }

    /// Gives up waiting for the packets missing before the held ones; returns the frames that
    /// completes.
    public mutating func skipMissing() -> [Frame] { take(jitterBuffer.skipMissing()) }

    /// The end of the stream: every held packet is taken, gaps counted as loss; a frame still
    /// being gathered is dropped (unless it is one packet of its own size without the marker:
    /// an older sender's whole frame).
    public mutating func finish() -> [Frame] {
        var frames = take(jitterBuffer.drain())
        if let gathering = assembly, gathering.size == nil, gathering.fragments == 1, !gathering.damaged {
            assembly = nil
            emit(gathering.bytes, timestamp: gathering.timestamp, into: &frames)
        }
        dropAssembly()
        return frames
    }

    private mutating func take(_ events: [RTPJitterBuffer.Event]) -> [Frame] {
        var frames: [Frame] = []
        for event in events {
            switch event {
            case .packet(let packet): take(packet, into: &frames)
            case .loss:
                assembly?.damaged = true
                lossBeforeNext = true
            case .restart: dropAssembly()
            }
        }
        return frames
    }

    private mutating func dropAssembly() {
        if assembly != nil { counts.framesDropped += 1 }
        assembly = nil
    }

    /// One AU-header's fields that matter here.
    struct AUHeader: Hashable {
        var size: Int?
        /// The AU-index (first header) or AU-index-delta (later ones).
        var index: UInt64
    }

    /// The AU-headers and where the frames begin, or nil when the section does not fit.
    static func headers(of payload: [UInt8], format: MPEG4GenericPayloadFormat) -> (headers: [AUHeader], dataOffset: Int)? {
        var offset = 0
        var headers: [AUHeader] = []
        let hasHeaders = format.sizeLength > 0 || format.indexLength > 0 || format.indexDeltaLength > 0 || format.ctsDeltaLength > 0
            || format.dtsDeltaLength > 0 || format.randomAccessIndication || format.streamStateIndication > 0
        if hasHeaders {
            guard payload.count >= 2 else { return nil }
            let bits = Int(payload[0]) << 8 | Int(payload[1])
            let bytes = (bits + 7) / 8
            guard 2 + bytes <= payload.count else { return nil }
            var reader = PayloadBits(payload, from: 2, bits: bits)
            while reader.remaining > 0 {
                reader.mark()
                let first = headers.isEmpty
                guard let size = reader.read(format.sizeLength),
                      let index = reader.read(first ? format.indexLength : format.indexDeltaLength) else { return nil }
                if format.ctsDeltaLength > 0 {  // (its flag 0 in the first header)
                    guard let flag = reader.read(1) else { return nil }
                    if flag == 1, reader.read(format.ctsDeltaLength) == nil { return nil }
                }
                if format.dtsDeltaLength > 0 {
                    guard let flag = reader.read(1) else { return nil }
                    if flag == 1, reader.read(format.dtsDeltaLength) == nil { return nil }
                }
                if format.randomAccessIndication, reader.read(1) == nil { return nil }
                if reader.read(format.streamStateIndication) == nil { return nil }
                headers.append(AUHeader(size: format.sizeLength > 0 ? Int(size) : nil, index: index))
                // A header of no bits would never end the section.
                if reader.consumedNothing { return nil }
            }
            offset = 2 + bytes
        } else {
            headers = [AUHeader(size: nil, index: 0)]
        }
        if format.auxiliaryDataSizeLength > 0 {
            guard offset + (format.auxiliaryDataSizeLength + 7) / 8 <= payload.count else { return nil }
            var reader = PayloadBits(payload, from: offset, bits: 8 * (payload.count - offset))
            guard let size = reader.read(format.auxiliaryDataSizeLength) else { return nil }
            let bytes = (format.auxiliaryDataSizeLength + Int(size) + 7) / 8
            guard offset + bytes <= payload.count else { return nil }
            offset += bytes
        }
        return headers.isEmpty ? nil : (headers, offset)
    }

    private mutating func take(_ packet: RTPPacket, into frames: inout [Frame]) {
        let afterLoss = lossBeforeNext
        lossBeforeNext = false
        let payload = packet.payload
        guard let section = Self.headers(of: payload, format: configuration.format) else {
            counts.packetsInvalid += 1
            dropAssembly()
            return
        }
        let (headers, dataOffset) = section
        let available = payload.count - dataOffset
        if var gathering = assembly {
            if headers.count == 1, packet.timestamp == gathering.timestamp {
                if !gathering.damaged { gathering.bytes += payload[dataOffset...] }
                gathering.fragments += 1
                if gathering.bytes.count > configuration.maximumFrameSize { gathering.damaged = true; gathering.bytes = [] }
                let whole = gathering.size.map { gathering.bytes.count >= $0 } ?? false
                if packet.marker || whole {
                    assembly = nil
                    if gathering.damaged || gathering.size.map({ gathering.bytes.count != $0 }) ?? false {
                        counts.framesDropped += 1
                    } else {
                        emit(gathering.bytes, timestamp: gathering.timestamp, into: &frames)
                    }
                } else {
                    assembly = gathering
                }
                return
            }
            if gathering.size == nil, gathering.fragments == 1, !gathering.damaged {
                // One packet of its own size without the marker, then another frame: a whole
                // frame from a sender that leaves the marker off.
                assembly = nil
                emit(gathering.bytes, timestamp: gathering.timestamp, into: &frames)
            } else {
                dropAssembly()  // its last fragment never came
            }
        }
        // (The first AU-Index is a serial number; non-zero deltas put frames out of order.)
        if headers.dropFirst().contains(where: { $0.index != 0 }) {
            counts.packetsInterleaved += 1
            counts.framesDropped += headers.count
            return
        }
        if headers.count == 1 {
            let size = headers[0].size ?? available
            if size > available, packet.marker {
                // A frame's last packet without the rest: its first fragments were lost, or
                // (with no loss before it) the packet was cut short.
                if !afterLoss { counts.packetsInvalid += 1 }
                counts.framesDropped += 1
                return
            }
            if size > available || (!packet.marker && size == available && headers[0].size != nil) {
                // The first fragment: of a frame of `size` bytes, or (the older form) of one whose
                // marker ends it. In the older form a fragment after a loss may not be the first
                // (the RFC's form tells by the size at the end). A frame over the limit is
                // gathered as damaged, without its bytes, to be counted once.
                let tooLarge = size > configuration.maximumFrameSize
                let unsure = afterLoss && size == available
                assembly = Assembly(timestamp: packet.timestamp, size: size > available ? size : nil, bytes: tooLarge ? [] : Array(payload[dataOffset...]),
                                    damaged: tooLarge || unsure)
                return
            }
        }
        var offset = dataOffset
        var timestamp = packet.timestamp
        for header in headers {
            let size = header.size ?? (payload.count - offset)
            guard size <= payload.count - offset else {
                counts.packetsInvalid += 1
                counts.framesDropped += 1
                return
            }
            if size > configuration.maximumFrameSize {
                counts.framesDropped += 1  // (whole in one packet, as large as a packet over TCP can be)
            } else if size > 0 {
                emit(Array(payload[offset..<(offset + size)]), timestamp: timestamp, into: &frames)
            }
            offset += size
            timestamp &+= configuration.frameDuration
        }
    }

    private mutating func emit(_ bytes: [UInt8], timestamp: UInt32, into frames: inout [Frame]) {
        var frame = bytes
        if frame.count >= ADTSHeader.minimumSize, frame[0] == 0xFF, frame[1] & 0xF6 == 0xF0,
           let header = frame.withUnsafeBytes({ try? ADTSHeader(bytes: $0) }), header.frameLength == frame.count, header.rawDataBlockCount == 1, header.size < frame.count {
            frame.removeFirst(header.size)
            counts.framesUnwrapped += 1
        }
        if let lastTimestamp {
            unfolded = min(max(unfolded + Int64(Int32(bitPattern: timestamp &- lastTimestamp)), -(1 << 61)), 1 << 61)
        }
        lastTimestamp = timestamp
        counts.framesComplete += 1
        frames.append(Frame(timestamp: timestamp, extendedTimestamp: unfolded, bytes: frame))
    }
}

/// Big-endian bits of a payload, at most `bits` of them: the AU-header section's reader.
struct PayloadBits {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int
    private var lastRead = 0

    init(_ bytes: [UInt8], from byteOffset: Int, bits: Int) {
        self.bytes = bytes
        position = 8 * byteOffset
        end = min(8 * bytes.count, position + bits)
    }

    /// Bits left.
    var remaining: Int { end - position }

    /// Whether the last header read took no bits.
    var consumedNothing: Bool { position == lastRead }

    /// The next `count` bits (0–64), or nil when fewer are left.
    mutating func read(_ count: Int) -> UInt64? {
        guard count >= 0, count <= 64, count <= remaining else { return nil }
        var value: UInt64 = 0
        for _ in 0..<count {
            let bit = bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1
            value = value << 1 | UInt64(bit)
            position += 1
        }
        return value
    }

    /// Marks the start of a header (for ``consumedNothing``).
    mutating func mark() { lastRead = position }
}
