/// The four-byte header of a transport stream packet (ISO/IEC 13818-1 §2.4.3.2, Table 2-2).
///
/// Every packet is 188 bytes: this header, then an adaptation field, a payload or both, as
/// ``adaptationFieldControl`` says. Packets of one PID carry one elementary stream or one kind
/// of table; ``continuityCounter`` counts the packets with a payload, modulo 16.
public struct TransportPacketHeader: Sendable, Hashable {
    /// The byte every packet starts with: `0x47`.
    public static let syncByte: UInt8 = 0x47
    /// The size of a transport packet: 188 bytes.
    public static let packetSize = 188
    /// The program association table's PID.
    public static let programAssociationPID: UInt16 = 0x0000
    /// The conditional access table's PID.
    public static let conditionalAccessPID: UInt16 = 0x0001
    /// The PID of null (stuffing) packets, whose contents mean nothing.
    public static let nullPID: UInt16 = 0x1FFF
    /// The largest PID: 13 bits.
    public static let maximumPID: UInt16 = 0x1FFF

    /// What follows the header (`adaptation_field_control`, Table 2-5).
    public enum AdaptationFieldControl: UInt8, Sendable, Hashable {
        /// `00`: reserved; a decoder discards the packet.
        case reserved = 0
        /// `01`: a payload only.
        case payloadOnly = 1
        /// `10`: an adaptation field only (183 bytes of it).
        case adaptationFieldOnly = 2
        /// `11`: an adaptation field, then a payload.
        case adaptationFieldAndPayload = 3
    }

    /// `transport_error_indicator`: a demodulator found an uncorrectable error in the packet.
    public var transportErrorIndicator: Bool
    /// `payload_unit_start_indicator`: a PES packet, or a section (after a `pointer_field`),
    /// starts in this packet's payload.
    public var payloadUnitStartIndicator: Bool
    /// `transport_priority`.
    public var transportPriority: Bool
    /// The packet's PID (13 bits): which stream or table it carries.
    public var pid: UInt16
    /// `transport_scrambling_control`: 0 when the payload is not scrambled.
    public var transportScramblingControl: UInt8
    /// What follows the header.
    public var adaptationFieldControl: AdaptationFieldControl
    /// `continuity_counter`: counts this PID's packets with a payload, modulo 16.
    public var continuityCounter: UInt8

    /// A header with the given fields.
    public init(pid: UInt16, payloadUnitStartIndicator: Bool = false, adaptationFieldControl: AdaptationFieldControl = .payloadOnly,
                continuityCounter: UInt8 = 0, transportErrorIndicator: Bool = false, transportPriority: Bool = false,
                transportScramblingControl: UInt8 = 0) {
        self.transportErrorIndicator = transportErrorIndicator
        self.payloadUnitStartIndicator = payloadUnitStartIndicator
        self.transportPriority = transportPriority
        self.pid = pid & Self.maximumPID
        self.transportScramblingControl = transportScramblingControl & 3
        self.adaptationFieldControl = adaptationFieldControl
        self.continuityCounter = continuityCounter & 15
    }

    /// Reads the header from the first four bytes of `packet`; nil when the first is not the
    /// sync byte or there are fewer than four.
    @inlinable
    public init?(parsing packet: UnsafeRawBufferPointer) {
        guard packet.count >= 4, packet[0] == Self.syncByte else { return nil }
        let b1 = packet[1], b2 = packet[2], b3 = packet[3]
        transportErrorIndicator = b1 & 0x80 != 0
        payloadUnitStartIndicator = b1 & 0x40 != 0
        transportPriority = b1 & 0x20 != 0
        pid = UInt16(b1 & 0x1F) << 8 | UInt16(b2)
        transportScramblingControl = b3 >> 6
        adaptationFieldControl = AdaptationFieldControl(rawValue: (b3 >> 4) & 3)!
        continuityCounter = b3 & 0x0F
    }

    /// Whether an adaptation field follows the header.
    @inlinable
    public var hasAdaptationField: Bool { adaptationFieldControl.rawValue & 2 != 0 }
    /// Whether the packet carries a payload (and so counts in the continuity counter).
    @inlinable
    public var hasPayload: Bool { adaptationFieldControl.rawValue & 1 != 0 }

    /// The four header bytes.
    public var bytes: (UInt8, UInt8, UInt8, UInt8) {
        (Self.syncByte,
         (transportErrorIndicator ? 0x80 : 0) | (payloadUnitStartIndicator ? 0x40 : 0) | (transportPriority ? 0x20 : 0) | UInt8(pid >> 8),
         UInt8(pid & 0xFF),
         transportScramblingControl << 6 | adaptationFieldControl.rawValue << 4 | continuityCounter)
    }

    /// Appends the four header bytes to `output`.
    public func write(to output: inout [UInt8]) {
        let (a, b, c, d) = bytes
        output.append(a)
        output.append(b)
        output.append(c)
        output.append(d)
    }
}
