import H264Network
import Testing

/// The packet order both depacketizers share: reordering, duplicates, late packets, loss at the
/// depth, a sender that restarts its numbering, a depth of 0.
@Suite("RTPJitterBuffer")
struct RTPJitterBufferTests {
    static func packet(_ sequence: UInt16) -> RTPPacket {
        RTPPacket(marker: false, payloadType: 96, sequenceNumber: sequence, timestamp: 0, ssrc: 1, payload: [UInt8(truncatingIfNeeded: sequence)])
    }

    /// The events as text: "5" a packet, "-2" two lost, "R" a restart.
    static func run(_ buffer: inout RTPJitterBuffer, _ sequences: [UInt16]) -> [String] {
        sequences.flatMap { buffer.insert(packet($0)) }.map(describe)
    }

    static func describe(_ event: RTPJitterBuffer.Event) -> String {
        switch event {
        case .packet(let packet): "\(packet.sequenceNumber)"
        case .loss(let count): "-\(count)"
        case .restart: "R"
        }
    }

    @Test func reorderedDuplicatedAndWrappingPacketsComeOutInOrder() {
        var buffer = RTPJitterBuffer(reorderDepth: 4)
        #expect(Self.run(&buffer, [65_534, 0, 65_535, 0, 1]) == ["65534", "65535", "0", "1"])
        #expect(buffer.statistics.packetsDuplicated == 1 && buffer.statistics.packetsReordered == 1)
        #expect(buffer.statistics.extendedHighestSequenceNumber == 65_537)
    }

    @Test func aGapIsLossPastTheDepthOrWhenSkippedOrAtTheEnd() {
        var buffer = RTPJitterBuffer(reorderDepth: 2)
        #expect(Self.run(&buffer, [1, 3, 4]) == ["1"])
        #expect(Self.run(&buffer, [5]) == ["-1", "3", "4", "5"])  // three held behind 2: it is lost
        #expect(Self.run(&buffer, [2]) == [])  // late now
        #expect(buffer.statistics.packetsLate == 1 && buffer.statistics.packetsDuplicated == 0)
        #expect(Self.run(&buffer, [7]) == [])
        #expect(buffer.skipMissing().map(Self.describe) == ["-1", "7"])
        #expect(Self.run(&buffer, [10, 9]) == [])
        #expect(buffer.drain().map(Self.describe) == ["-1", "9", "10"])
        #expect(buffer.statistics.packetsLost == 3)
    }

    @Test func depthZeroTakesEveryGapAsLossAtOnce() {
        var buffer = RTPJitterBuffer(reorderDepth: 0)
        #expect(Self.run(&buffer, [1, 3]) == ["1", "-1", "3"])
        #expect(buffer.heldPacketCount == 0)
    }

    @Test func aSenderThatRestartsItsNumberingIsTakenUpOnItsSecondPacket() {
        var buffer = RTPJitterBuffer(reorderDepth: 8)
        #expect(Self.run(&buffer, Array(1000...1003)) == ["1000", "1001", "1002", "1003"])
        #expect(Self.run(&buffer, [5]) == [])  // far behind: on probation
        #expect(Self.run(&buffer, [6, 7]) == ["R", "6", "7"])
        #expect(buffer.statistics.packetsOutOfRange == 1)
    }
}
