import Bitstream
/// A whole PES packet as a demuxer gathered it from its transport packets: the header, the
/// payload (the elementary stream's bytes), where it started and whether any of it was lost.
public struct PESPacket: Sendable {
    /// The PID it came on.
    public var pid: UInt16
    /// Its header: stream ID, length, timestamps.
    public var header: PESPacketHeader
    /// The packet's bytes, header included.
    public var bytes: [UInt8]
    /// Where the payload is in ``bytes``.
    public var payloadRange: Range<Int>
    /// The offset of the transport packet it started in (its sync byte).
    public var byteOffset: Int
    /// Transport packets it was gathered from.
    public var packetCount: Int
    /// What was lost or damaged while gathering it; nil when it arrived whole.
    public var damage: Damage?
    /// The `random_access_indicator` of its first transport packet.
    public var randomAccessIndicator: Bool
    /// A `discontinuity_indicator` was set on its PID's packets since the packet before: its
    /// timestamps may start a new time line.
    public var discontinuityIndicator: Bool

    /// Why a PES packet is not whole.
    public enum Damage: Sendable, Hashable, CustomStringConvertible {
        /// Transport packets of its PID were lost inside it (a continuity counter jumped).
        case packetsLost
        /// One of its packets had the transport error indicator set (its bytes were left out).
        case transportError
        /// One of its packets was scrambled (its bytes were left out).
        case scrambled
        /// It ended before `PES_packet_length` bytes (the stream ended, or the next packet
        /// started).
        case truncated(missing: Int)

        /// The damage in words.
        public var description: String {
            switch self {
            case .packetsLost: "transport packets lost inside it"
            case .transportError: "a transport packet with its error indicator set"
            case .scrambled: "a scrambled transport packet"
            case .truncated(let missing): "\(missing) bytes missing at its end"
            }
        }
    }

    /// The payload's bytes, valid during the call.
    public func withPayload<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try bytes.withTypedBytes { (raw) throws(E) in try body(UnsafeRawBufferPointer(rebasing: raw[payloadRange])) }
    }
}
