/// An RTP packet (RFC 3550 §5.1): the fixed header, the contributing sources, the header
/// extension and the payload, padding removed.
public struct RTPPacket: Hashable, Sendable {
    /// The marker bit: in H.264 video, set on the last packet of an access unit (RFC 6184 §5.1).
    public var marker: Bool
    /// The payload type (7 bits; dynamic types are 96–127).
    public var payloadType: UInt8
    /// The sequence number, which wraps at 2^16.
    public var sequenceNumber: UInt16
    /// The media clock time of the payload's first sample (90 kHz for video).
    public var timestamp: UInt32
    /// The synchronization source.
    public var ssrc: UInt32
    /// The contributing sources (at most 15).
    public var csrcs: [UInt32]
    /// The header extension (RFC 3550 §5.3.1): its profile-defined 16 bits and its data, a multiple of 4 bytes.
    public var headerExtension: (profile: UInt16, data: [UInt8])? {
        get { extensionProfile.map { ($0, extensionData) } }
        set {
            extensionProfile = newValue?.profile
            extensionData = newValue?.data ?? []
        }
    }
    /// The payload, without padding.
    public var payload: [UInt8]

    var extensionProfile: UInt16?
    var extensionData: [UInt8] = []

    /// The size of the fixed header.
    public static let fixedHeaderSize = 12

    /// A packet with no contributing sources and no extension.
    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) {
        self.marker = marker
        self.payloadType = payloadType & 0x7F
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = []
        self.payload = payload
    }

    /// Parses a datagram (RFC 3550 §5.1): version 2, contributing sources, extension and padding
    /// all within the datagram.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(NetworkError) {
        guard bytes.count >= Self.fixedHeaderSize else {
            throw NetworkError(.truncated, "\(bytes.count) bytes: an RTP header needs 12")
        }
        let first = bytes[0]
        guard first >> 6 == 2 else { throw NetworkError(.invalidHeader, "RTP version \(first >> 6), expected 2", at: "byte 0") }
        let second = bytes[1]
        marker = second & 0x80 != 0
        payloadType = second & 0x7F
        sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        timestamp = Self.uint32(bytes, 4)
        ssrc = Self.uint32(bytes, 8)
        var offset = Self.fixedHeaderSize
        let csrcCount = Int(first & 0x0F)
        guard offset + 4 * csrcCount <= bytes.count else {
            throw NetworkError(.truncated, "\(csrcCount) contributing sources do not fit a \(bytes.count)-byte packet", at: "byte 0")
        }
        csrcs = (0..<csrcCount).map { Self.uint32(bytes, offset + 4 * $0) }
        offset += 4 * csrcCount
        if first & 0x10 != 0 {
            guard offset + 4 <= bytes.count else { throw NetworkError(.truncated, "the header extension does not fit", at: "byte \(offset)") }
            let words = Int(UInt16(bytes[offset + 2]) << 8 | UInt16(bytes[offset + 3]))
            guard offset + 4 + 4 * words <= bytes.count else {
                throw NetworkError(.truncated, "a \(words)-word header extension does not fit a \(bytes.count)-byte packet", at: "byte \(offset)")
            }
            extensionProfile = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            extensionData = Array(bytes[(offset + 4)..<(offset + 4 + 4 * words)])
            offset += 4 + 4 * words
        }
        var end = bytes.count
        if first & 0x20 != 0 {
            let padding = Int(bytes[bytes.count - 1])
            guard padding >= 1, offset + padding <= end else {
                throw NetworkError(.invalidHeader, "\(padding) bytes of padding do not fit the payload", at: "byte \(bytes.count - 1)")
            }
            end -= padding
        }
        payload = Array(bytes[offset..<end])
    }

    /// Parses a datagram.
    public init(parsing bytes: [UInt8]) throws(NetworkError) {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(NetworkError) in try RTPPacket(parsing: buffer) } }
        self = try result.get()
    }

    /// The packet's bytes (no padding).
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(Self.fixedHeaderSize + 4 * csrcs.count + (extensionProfile == nil ? 0 : 4 + extensionData.count) + payload.count)
        result.append(2 << 6 | (extensionProfile == nil ? 0 : 0x10) | UInt8(min(csrcs.count, 15)))
        result.append((marker ? 0x80 : 0) | payloadType & 0x7F)
        Self.append(UInt32(sequenceNumber), bytes: 2, to: &result)
        Self.append(timestamp, bytes: 4, to: &result)
        Self.append(ssrc, bytes: 4, to: &result)
        for csrc in csrcs.prefix(15) { Self.append(csrc, bytes: 4, to: &result) }
        if let extensionProfile {
            Self.append(UInt32(extensionProfile), bytes: 2, to: &result)
            Self.append(UInt32(extensionData.count / 4), bytes: 2, to: &result)
            result += extensionData.prefix(extensionData.count / 4 * 4)
        }
        result += payload
        return result
    }

    /// Whether `bytes` looks like RTCP rather than RTP when both share a port (RFC 5761 §4:
    /// payload types 64–95 with the marker are RTCP packet types 192–223).
    public static func isRTCP(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 2 && (192...223).contains(bytes[1])
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func append(_ value: UInt32, bytes count: Int, to result: inout [UInt8]) {
        for shift in stride(from: 8 * (count - 1), through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
