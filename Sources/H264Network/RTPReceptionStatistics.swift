/// A receiver's statistics for one RTP source (RFC 3550 §6.4.1, appendices A.3 and A.8): the
/// counts behind a reception report block, updated packet by packet with each packet's arrival
/// time. A pure value: the caller reads the clock.
public struct RTPReceptionStatistics: Sendable, Hashable {
    /// The source reported on.
    public let ssrc: UInt32
    /// The RTP clock rate (90 kHz for video).
    public let clockRate: Int

    /// Packets received (duplicates included, as RFC 3550 counts them).
    public private(set) var packetsReceived = 0
    /// The first sequence number, extended.
    public private(set) var baseSequenceNumber: Int64?
    /// The highest sequence number received, extended past its wraps.
    public private(set) var highestSequenceNumber: Int64 = 0
    /// The interarrival jitter estimate in timestamp units (A.8), as a real number.
    public private(set) var jitter: Double = 0

    private var lastTransit: Int64?
    private var expectedAtLastReport: Int64 = 0
    private var receivedAtLastReport = 0

    /// Statistics for `ssrc` on a `clockRate` clock.
    public init(ssrc: UInt32, clockRate: Int = 90_000) {
        self.ssrc = ssrc
        self.clockRate = clockRate
    }

    /// Packets expected from the first sequence number to the highest.
    public var packetsExpected: Int64 { baseSequenceNumber.map { highestSequenceNumber - $0 + 1 } ?? 0 }
    /// Packets lost since the start: expected less received (negative with duplicates).
    public var cumulativeLost: Int64 { packetsExpected - Int64(packetsReceived) }

    /// Records a packet that arrived at `arrival` seconds (any fixed origin).
    public mutating func record(sequenceNumber: UInt16, timestamp: UInt32, arrival: Double) {
        packetsReceived += 1
        if baseSequenceNumber != nil {
            let delta = Int64(Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: highestSequenceNumber)))
            if delta > 0 { highestSequenceNumber += delta }
        } else {
            baseSequenceNumber = Int64(sequenceNumber)
            highestSequenceNumber = Int64(sequenceNumber)
        }
        // A.8: transit = arrival (in timestamp units) - timestamp; J += (|D| - J) / 16.
        let arrivalTicks = Int64((arrival * Double(clockRate)).rounded())
        let transit = arrivalTicks - Int64(timestamp)
        if let last = lastTransit {
            var difference = transit - last
            // The timestamp wraps at 2^32: take the nearest difference.
            difference = Int64(Int32(truncatingIfNeeded: difference))
            jitter += (Double(abs(difference)) - jitter) / 16
        }
        lastTransit = transit
    }

    /// A report block for now, and the interval it closes (fraction lost since the last one).
    /// `lastSenderReport` and its delay come from the RTCP sender reports received.
    public mutating func report(lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0) -> RTCPPacket.ReceptionReport {
        let expectedInterval = packetsExpected - expectedAtLastReport
        let receivedInterval = Int64(packetsReceived - receivedAtLastReport)
        let lostInterval = expectedInterval - receivedInterval
        expectedAtLastReport = packetsExpected
        receivedAtLastReport = packetsReceived
        let fraction = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        let lost = Int32(clamping: max(-0x80_0000, min(0x7F_FFFF, cumulativeLost)))
        return RTCPPacket.ReceptionReport(ssrc: ssrc, fractionLost: fraction, cumulativeLost: lost,
                                          extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highestSequenceNumber),
                                          jitter: UInt32(jitter.rounded()), lastSenderReport: lastSenderReport,
                                          delaySinceLastSenderReport: delaySinceLastSenderReport)
    }
}
