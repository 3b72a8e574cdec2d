/// An RTCP packet (RFC 3550 §6.4–6.6, RFC 4585 §6.3.1): the reports, BYE and the picture loss
/// indication a receiver sends when it loses a reference picture. Packets travel in compound
/// datagrams: `parse(compound:)` and ``serialize(_:)``.
public enum RTCPPacket: Sendable, Hashable {
    /// A sender report (SR, type 200).
    case senderReport(SenderReport)
    /// A receiver report (RR, type 201).
    case receiverReport(ReceiverReport)
    /// BYE (type 203): the sources leave.
    case goodbye(Goodbye)
    /// A picture loss indication (PSFB type 206, FMT 1): the receiver asks for a new IDR picture.
    case pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32)
    /// Any other packet (SDES, APP, other feedback), kept as its type and bytes.
    case other(type: UInt8, bytes: [UInt8])

    /// One reception report block (RFC 3550 §6.4.1).
    public struct ReceptionReport: Sendable, Hashable {
        /// The source reported on.
        public var ssrc: UInt32
        /// Packets lost since the last report, as a fraction of 256.
        public var fractionLost: UInt8
        /// Packets lost since the start (24 bits, signed: duplicates can make it negative).
        public var cumulativeLost: Int32
        /// The highest sequence number received, with its wraps in the high 16 bits.
        public var extendedHighestSequenceNumber: UInt32
        /// The interarrival jitter in timestamp units (RFC 3550 §6.4.1, A.8).
        public var jitter: UInt32
        /// The middle 32 bits of the last sender report's NTP time (0: none yet).
        public var lastSenderReport: UInt32
        /// The delay since that report, in 1/65536 s.
        public var delaySinceLastSenderReport: UInt32

        /// A report block.
        public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequenceNumber: UInt32, jitter: UInt32,
                    lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0) {
            self.ssrc = ssrc
            self.fractionLost = fractionLost
            self.cumulativeLost = cumulativeLost
            self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
            self.jitter = jitter
            self.lastSenderReport = lastSenderReport
            self.delaySinceLastSenderReport = delaySinceLastSenderReport
        }
    }

    /// A sender report: the mapping from wall clock (NTP) to RTP time, and the counts sent.
    public struct SenderReport: Sendable, Hashable {
        /// The sender.
        public var ssrc: UInt32
        /// The wall-clock time of the report, NTP format (seconds since 1900 in the high 32 bits).
        public var ntpTimestamp: UInt64
        /// The same instant on the RTP clock.
        public var rtpTimestamp: UInt32
        /// Packets sent since the start.
        public var packetCount: UInt32
        /// Payload bytes sent since the start.
        public var octetCount: UInt32
        /// Reports on the sources this sender receives.
        public var reports: [ReceptionReport]

        /// A sender report.
        public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [ReceptionReport] = []) {
            self.ssrc = ssrc
            self.ntpTimestamp = ntpTimestamp
            self.rtpTimestamp = rtpTimestamp
            self.packetCount = packetCount
            self.octetCount = octetCount
            self.reports = reports
        }
    }

    /// A receiver report.
    public struct ReceiverReport: Sendable, Hashable {
        /// The receiver.
        public var ssrc: UInt32
        /// Its reports, one per source.
        public var reports: [ReceptionReport]

        /// A receiver report.
        public init(ssrc: UInt32, reports: [ReceptionReport]) {
            self.ssrc = ssrc
            self.reports = reports
        }
    }

    /// BYE: the sources that leave and why.
    public struct Goodbye: Sendable, Hashable {
        /// The sources leaving (at most 31).
        public var sources: [UInt32]
        /// The reason, at most 255 bytes of UTF-8.
        public var reason: String?

        /// A BYE.
        public init(sources: [UInt32], reason: String? = nil) {
            self.sources = sources
            self.reason = reason
        }
    }

    /// The packets of a compound datagram. A packet whose length runs past the datagram is an
    /// error naming its byte offset.
    public static func parse(compound bytes: UnsafeRawBufferPointer) throws(NetworkError) -> [RTCPPacket] {
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw NetworkError(.truncated, "an RTCP header needs 4 bytes", at: "byte \(offset)") }
            guard bytes[offset] >> 6 == 2 else { throw NetworkError(.invalidHeader, "RTCP version \(bytes[offset] >> 6), expected 2", at: "byte \(offset)") }
            let count = Int(bytes[offset] & 0x1F)
            let type = bytes[offset + 1]
            let length = 4 * ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1)
            guard offset + length <= bytes.count else {
                throw NetworkError(.truncated, "a \(length)-byte RTCP packet does not fit the \(bytes.count)-byte datagram", at: "byte \(offset)")
            }
            var body = Array(bytes[(offset + 4)..<(offset + length)])
            if bytes[offset] & 0x20 != 0, let padding = body.last {
                guard Int(padding) <= body.count else { throw NetworkError(.invalidHeader, "RTCP padding past the packet", at: "byte \(offset)") }
                body.removeLast(Int(padding))
            }
            let place = "byte \(offset)"
            switch type {
            case 200:
                guard body.count >= 24 + 24 * count else { throw NetworkError(.truncated, "a sender report with \(count) blocks needs \(28 + 24 * count) bytes", at: place) }
                let ntp = UInt64(word(body, 4)) << 32 | UInt64(word(body, 8))
                packets.append(.senderReport(SenderReport(ssrc: word(body, 0), ntpTimestamp: ntp, rtpTimestamp: word(body, 12), packetCount: word(body, 16),
                                                          octetCount: word(body, 20), reports: reports(body, from: 24, count: count))))
            case 201:
                guard body.count >= 4 + 24 * count else { throw NetworkError(.truncated, "a receiver report with \(count) blocks needs \(8 + 24 * count) bytes", at: place) }
                packets.append(.receiverReport(ReceiverReport(ssrc: word(body, 0), reports: reports(body, from: 4, count: count))))
            case 203:
                guard body.count >= 4 * count else { throw NetworkError(.truncated, "a BYE of \(count) sources needs \(4 + 4 * count) bytes", at: place) }
                var reason: String?
                if body.count > 4 * count {
                    let length = Int(body[4 * count])
                    let text = body[(4 * count + 1)...].prefix(length)
                    reason = String(decoding: text, as: UTF8.self)
                }
                packets.append(.goodbye(Goodbye(sources: (0..<count).map { word(body, 4 * $0) }, reason: reason)))
            case 206 where count == 1:
                guard body.count >= 8 else { throw NetworkError(.truncated, "a picture loss indication needs 12 bytes", at: place) }
                packets.append(.pictureLossIndication(senderSSRC: word(body, 0), mediaSSRC: word(body, 4)))
            default:
                packets.append(.other(type: type, bytes: Array(bytes[offset..<(offset + length)])))
            }
            offset += length
        }
        return packets
    }

    /// The packets of a compound datagram.
    public static func parse(compound bytes: [UInt8]) throws(NetworkError) -> [RTCPPacket] {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(NetworkError) in try parse(compound: buffer) } }
        return try result.get()
    }

    /// A source description (SDES, RFC 3550 §6.5) with one chunk: `ssrc` and its canonical name
    /// (CNAME, at most 255 bytes of UTF-8), which ties the media of one sender together: a
    /// receiver lines up the streams whose reports carry the same CNAME (RFC 3550 §6.5.1).
    /// It goes after the report in every compound packet.
    public static func sourceDescription(ssrc: UInt32, canonicalName: String) -> RTCPPacket {
        let name = Array(canonicalName.utf8.prefix(255))
        var body: [UInt8] = []
        append(ssrc, to: &body)
        body += [1, UInt8(name.count)] + name + [0]  // CNAME, then the END item
        while body.count % 4 != 0 { body.append(0) }
        var bytes: [UInt8] = [2 << 6 | 1, 202]
        let words = body.count / 4
        bytes += [UInt8(words >> 8), UInt8(words & 0xFF)]
        return .other(type: 202, bytes: bytes + body)
    }

    /// A compound datagram of `packets`, in order (RFC 3550 wants a report first).
    public static func serialize(_ packets: [RTCPPacket]) -> [UInt8] {
        var result: [UInt8] = []
        for packet in packets { packet.append(to: &result) }
        return result
    }

    /// The packet's bytes, appended.
    func append(to result: inout [UInt8]) {
        var body: [UInt8] = []
        let count: Int
        let type: UInt8
        switch self {
        case .senderReport(let report):
            type = 200
            count = min(report.reports.count, 31)
            for value in [report.ssrc, UInt32(report.ntpTimestamp >> 32), UInt32(truncatingIfNeeded: report.ntpTimestamp), report.rtpTimestamp,
                          report.packetCount, report.octetCount] { Self.append(value, to: &body) }
            for block in report.reports.prefix(31) { Self.append(block, to: &body) }
        case .receiverReport(let report):
            type = 201
            count = min(report.reports.count, 31)
            Self.append(report.ssrc, to: &body)
            for block in report.reports.prefix(31) { Self.append(block, to: &body) }
        case .goodbye(let goodbye):
            type = 203
            count = min(goodbye.sources.count, 31)
            for source in goodbye.sources.prefix(31) { Self.append(source, to: &body) }
            if let reason = goodbye.reason {
                let text = Array(reason.utf8.prefix(255))
                body.append(UInt8(text.count))
                body += text
                while body.count % 4 != 0 { body.append(0) }
            }
        case .pictureLossIndication(let sender, let media):
            type = 206
            count = 1
            Self.append(sender, to: &body)
            Self.append(media, to: &body)
        case .other(_, let bytes):
            result += bytes
            return
        }
        result.append(2 << 6 | UInt8(count))
        result.append(type)
        let words = body.count / 4
        result += [UInt8(words >> 8), UInt8(words & 0xFF)]
        result += body
    }

    static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func reports(_ body: [UInt8], from start: Int, count: Int) -> [ReceptionReport] {
        (0..<count).map { index in
            let offset = start + 24 * index
            let lost = word(body, offset + 4) & 0x00FF_FFFF
            return ReceptionReport(ssrc: word(body, offset), fractionLost: body[offset + 4],
                                   cumulativeLost: Int32(bitPattern: lost << 8) >> 8, extendedHighestSequenceNumber: word(body, offset + 8),
                                   jitter: word(body, offset + 12), lastSenderReport: word(body, offset + 16), delaySinceLastSenderReport: word(body, offset + 20))
        }
    }

    static func append(_ value: UInt32, to body: inout [UInt8]) {
        body += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func append(_ block: ReceptionReport, to body: inout [UInt8]) {
        append(block.ssrc, to: &body)
        let lost = UInt32(bitPattern: max(-0x80_0000, min(0x7F_FFFF, block.cumulativeLost))) & 0x00FF_FFFF
        append(UInt32(block.fractionLost) << 24 | lost, to: &body)
        for value in [block.extendedHighestSequenceNumber, block.jitter, block.lastSenderReport, block.delaySinceLastSenderReport] { append(value, to: &body) }
    }
}
