import H264Network
import Testing

@Suite("RTPReceptionStatistics (RFC 3550 A.3, A.8)")
struct RTPReceptionStatisticsTests {
    @Test func lossAcrossTheWrapIsCountedAndReported() {
        var statistics = RTPReceptionStatistics(ssrc: 9)
        // 20 packets from 65530 across the wrap, 3 lost, one duplicated; evenly paced.
        let lost: Set<UInt16> = [65533, 2, 7]
        var arrival = 0.0
        for offset in 0..<20 {
            let sequence = UInt16(65530) &+ UInt16(offset)
            arrival += 0.01
            guard !lost.contains(sequence) else { continue }
            statistics.record(sequenceNumber: sequence, timestamp: UInt32(offset * 900), arrival: arrival)
            if offset == 10 { statistics.record(sequenceNumber: sequence, timestamp: UInt32(offset * 900), arrival: arrival) }
        }
        #expect(statistics.packetsExpected == 20)
        #expect(statistics.packetsReceived == 18)
        #expect(statistics.cumulativeLost == 2)  // 3 lost, 1 duplicate
        let block = statistics.report()
        #expect(block.extendedHighestSequenceNumber == 0x1_0000 + 13)
        #expect(block.fractionLost == UInt8((2 << 8) / 20))
        #expect(block.jitter < 90, "evenly paced packets: jitter \(block.jitter) ticks")
        // The next interval: nothing new, nothing lost.
        #expect(statistics.report().fractionLost == 0)
    }

    @Test func jitterFollowsTheArrivalSpread() {
        var statistics = RTPReceptionStatistics(ssrc: 1)
        // Packets 1/30 s apart on the media clock, arriving alternately 5 ms early and late.
        for index in 0..<200 {
            let arrival = Double(index) / 30 + (index % 2 == 0 ? 0.005 : -0.005)
            statistics.record(sequenceNumber: UInt16(index), timestamp: UInt32(index * 3000), arrival: arrival)
        }
        // |D| = 10 ms = 900 ticks every packet: J converges to 900.
        #expect(abs(statistics.jitter - 900) < 5)
    }
}
