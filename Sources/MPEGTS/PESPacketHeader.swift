/// The header of a PES packet (ISO/IEC 13818-1 §2.4.3.6, Table 2-21): the stream it belongs
/// to, its length, and the presentation and decoding timestamps of the access unit that starts
/// in it.
public struct PESPacketHeader: Sendable, Hashable {
    /// `stream_id`: 0xE0–0xEF video, 0xC0–0xDF audio, 0xBD private stream 1.
    public var streamID: UInt8
    /// `PES_packet_length`: bytes after this field; 0 (video in a transport stream only) when
    /// the packet runs to the next one's start.
    public var packetLength: UInt16
    /// `data_alignment_indicator`: the payload starts with an access unit (or the syntax
    /// element the stream type names).
    public var dataAlignmentIndicator: Bool
    /// `PTS` (33 bits, 90 kHz).
    public var presentationTimestamp: UInt64?
    /// `DTS` (33 bits, 90 kHz); absent when it equals the PTS.
    public var decodingTimestamp: UInt64?
    /// Bytes of the header, up to the payload: 6 for the stream IDs without the optional
    /// fields, else 9 plus `PES_header_data_length`.
    public var headerSize: Int

    /// The stream ID of the first video stream.
    public static let videoStreamID: UInt8 = 0xE0
    /// The largest value of a 33-bit timestamp plus one: timestamps wrap at 2^33 ticks
    /// (26.5 hours at 90 kHz).
    public static let timestampPeriod: Int64 = 1 << 33

    /// A header for a packet of `streamID` with the given timestamps (`packetLength` 0: the
    /// payload's length is filled in by ``write(payloadLength:to:)``).
    public init(streamID: UInt8 = PESPacketHeader.videoStreamID, presentationTimestamp: UInt64?, decodingTimestamp: UInt64? = nil,
                dataAlignmentIndicator: Bool = true) {
        self.streamID = streamID
        packetLength = 0
        self.dataAlignmentIndicator = dataAlignmentIndicator
        self.presentationTimestamp = presentationTimestamp.map { $0 & UInt64(Self.timestampPeriod - 1) }
        self.decodingTimestamp = decodingTimestamp.map { $0 & UInt64(Self.timestampPeriod - 1) }
        headerSize = 9 + (presentationTimestamp != nil ? 5 : 0) + (decodingTimestamp != nil && presentationTimestamp != nil ? 5 : 0)
    }

    /// Whether `streamID` has the optional header (flags, timestamps): all but the program
    /// stream map, padding, private stream 2, ECM, EMM, the directory, DSM-CC and H.222.1 type E.
    public static func hasOptionalHeader(streamID: UInt8) -> Bool {
        ![0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF].contains(streamID)
    }

    /// The bytes of the header needed before it can be read: 6, or 9 plus the header data
    /// length once those 9 are there; nil when `bytes` do not start with a PES start code.
    public static func sizeNeeded(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 3 else { return 6 }
        guard bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else { return nil }
        guard bytes.count >= 4 else { return 6 }
        guard hasOptionalHeader(streamID: bytes[3]) else { return 6 }
        guard bytes.count >= 9 else { return 9 }
        return 9 + Int(bytes[8])
    }

    /// Reads the header at the start of `bytes`, which must hold ``sizeNeeded(_:)`` bytes.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(TransportStreamError) {
        guard bytes.count >= 6, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else {
            throw TransportStreamError(.invalidPES, "no packet_start_code_prefix (00 00 01) where a PES packet starts")
        }
        streamID = bytes[3]
        packetLength = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
        dataAlignmentIndicator = false
        presentationTimestamp = nil
        decodingTimestamp = nil
        guard Self.hasOptionalHeader(streamID: streamID) else {
            headerSize = 6
            return
        }
        guard bytes.count >= 9 else { throw TransportStreamError(.invalidPES, "a PES header cut off after \(bytes.count) bytes") }
        guard bytes[6] & 0xC0 == 0x80 else { throw TransportStreamError(.invalidPES, "stream 0x\(String(streamID, radix: 16)): the optional header does not start with '10'") }
        dataAlignmentIndicator = bytes[6] & 0x04 != 0
        let flags = bytes[7] >> 6
        headerSize = 9 + Int(bytes[8])
        guard bytes.count >= headerSize else { throw TransportStreamError(.invalidPES, "a PES header of \(headerSize) bytes cut off after \(bytes.count)") }
        guard packetLength == 0 || Int(packetLength) + 6 >= headerSize else {
            throw TransportStreamError(.invalidPES, "PES_packet_length \(packetLength) is shorter than the header's \(headerSize - 6) bytes")
        }
        switch flags {
        case 2:
            guard headerSize >= 14 else { throw TransportStreamError(.invalidPES, "a PTS flagged in a \(headerSize)-byte header") }
            presentationTimestamp = Self.timestamp(bytes, at: 9)
        case 3:
            guard headerSize >= 19 else { throw TransportStreamError(.invalidPES, "a PTS and DTS flagged in a \(headerSize)-byte header") }
            presentationTimestamp = Self.timestamp(bytes, at: 9)
            decodingTimestamp = Self.timestamp(bytes, at: 14)
        case 1:
            throw TransportStreamError(.invalidPES, "PTS_DTS_flags '01' (forbidden)")
        default:
            break
        }
    }

    /// A 33-bit timestamp from its five bytes (marker bits not checked: encoders get them wrong).
    static func timestamp(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        let high = UInt64(bytes[offset] >> 1) & 0x07
        let middle = (UInt64(bytes[offset + 1]) << 7) | UInt64(bytes[offset + 2] >> 1)
        let low = (UInt64(bytes[offset + 3]) << 7) | UInt64(bytes[offset + 4] >> 1)
        return high << 30 | middle << 15 | low
    }

    /// Appends a timestamp's five bytes with the four-bit prefix `prefix`.
    static func write(timestamp: UInt64, prefix: UInt8, to output: inout [UInt8]) {
        output.append(prefix << 4 | UInt8((timestamp >> 29) & 0x0E) | 1)
        output.append(UInt8((timestamp >> 22) & 0xFF))
        output.append(UInt8((timestamp >> 14) & 0xFE) | 1)
        output.append(UInt8((timestamp >> 7) & 0xFF))
        output.append(UInt8((timestamp << 1) & 0xFE) | 1)
    }

    /// Appends the header for a payload of `payloadLength` bytes: `PES_packet_length` is that
    /// length plus the optional header's, or 0 when it does not fit 16 bits (video only).
    public func write(payloadLength: Int, to output: inout [UInt8]) {
        let hasDTS = decodingTimestamp != nil && presentationTimestamp != nil && decodingTimestamp != presentationTimestamp
        let dataLength = (presentationTimestamp != nil ? 5 : 0) + (hasDTS ? 5 : 0)
        let length = 3 + dataLength + payloadLength
        output += [0, 0, 1, streamID, length > 0xFFFF ? 0 : UInt8(length >> 8), length > 0xFFFF ? 0 : UInt8(length & 0xFF)]
        output.append(0x80 | (dataAlignmentIndicator ? 0x04 : 0))
        output.append(presentationTimestamp == nil ? 0 : hasDTS ? 0xC0 : 0x80)
        output.append(UInt8(dataLength))
        if let pts = presentationTimestamp { Self.write(timestamp: pts, prefix: hasDTS ? 3 : 2, to: &output) }
        if hasDTS, let dts = decodingTimestamp { Self.write(timestamp: dts, prefix: 1, to: &output) }
    }
}
