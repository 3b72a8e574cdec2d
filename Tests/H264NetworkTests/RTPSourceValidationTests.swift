import H264Network
import Testing

/// RFC 3550 A.1 as the receiver applies it: which packets are the stream's, decided before any
/// of them changes the stream's state.
@Suite("RTPSourceValidation (RFC 3550 A.1)")
struct RTPSourceValidationTests {
    static func packet(_ sequence: UInt16, ssrc: UInt32 = 1234, payload: [UInt8] = [0x65, 0x88], payloadType: UInt8 = 96) -> RTPPacket {
        RTPPacket(payloadType: payloadType, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000, ssrc: ssrc, payload: payload)
    }

    static func accepted(_ verdict: RTPSourceValidation.Verdict) -> [UInt16] {
        switch verdict {
        case .accept(let packets), .restart(let packets): packets.map(\.sequenceNumber)
        case .drop: []
        }
    }

    @Test func aSourceIsTakenAfterTwoInSequenceAndItsFirstPacketIsHeldNotLost() {
        var validation = RTPSourceValidation()
        #expect(validation.admit(Self.packet(100), arrival: 0) == .drop)
        #expect(validation.ssrc == nil)
        #expect(Self.accepted(validation.admit(Self.packet(101), arrival: 0.01)) == [100, 101])
        #expect(validation.ssrc == 1234)
        #expect(Self.accepted(validation.admit(Self.packet(102), arrival: 0.02)) == [102])
        #expect(validation.statistics.packetsAccepted == 3)
    }

    @Test func otherSourcesNeverTouchTheStreamAndAreCountedApart() {
        var validation = RTPSourceValidation()
        _ = validation.admit(Self.packet(10), arrival: 0)
        _ = validation.admit(Self.packet(11), arrival: 0)
        // A second source, in sequence and well formed, while the stream goes on.
        for index in 0..<50 {
            #expect(validation.admit(Self.packet(UInt16(7000 + index), ssrc: 0), arrival: 0.001 * Double(index)) == .drop)
            #expect(Self.accepted(validation.admit(Self.packet(UInt16(12 + index)), arrival: 0.001 * Double(index))) == [UInt16(12 + index)])
        }
        #expect(validation.ssrc == 1234)
        #expect(validation.statistics.packetsFromOtherSources == 50)
        #expect(validation.statistics.restarts == 0)
    }

    @Test func aNewSourceTakesOverOnlyOnceTheStreamIsSilent() {
        var validation = RTPSourceValidation(configuration: .init(sourceTimeout: 1))
        _ = validation.admit(Self.packet(10), arrival: 0)
        _ = validation.admit(Self.packet(11), arrival: 0)
        // The sender restarts with a new SSRC two seconds later.
        #expect(validation.admit(Self.packet(500, ssrc: 99), arrival: 2) == .drop)
        guard case .restart(let packets) = validation.admit(Self.packet(501, ssrc: 99), arrival: 2.01) else {
            Issue.record("the new source did not take over")
            return
        }
        #expect(packets.map(\.sequenceNumber) == [501] && validation.ssrc == 99)
    }

    @Test func aWildJumpIsDroppedUnlessTheNextPacketFollowsIt() {
        var validation = RTPSourceValidation()
        _ = validation.admit(Self.packet(10), arrival: 0)
        _ = validation.admit(Self.packet(11), arrival: 0)
        // One packet 30,000 ahead (a corrupt header): dropped, the stream goes on.
        #expect(validation.admit(Self.packet(30_011), arrival: 0.01) == .drop)
        #expect(Self.accepted(validation.admit(Self.packet(12), arrival: 0.02)) == [12])
        #expect(validation.statistics.packetsWithBadSequence == 1)
        // Two in a row far ahead: the sender restarted its numbering.
        #expect(validation.admit(Self.packet(40_000), arrival: 0.03) == .drop)
        #expect(validation.admit(Self.packet(40_001), arrival: 0.04) == .restart([Self.packet(40_001)]))
        #expect(Self.accepted(validation.admit(Self.packet(40_002), arrival: 0.05)) == [40_002])
        // A packet shortly behind is the depacketizer's to place.
        #expect(Self.accepted(validation.admit(Self.packet(39_990), arrival: 0.06)) == [39_990])
        // Across the 16-bit wrap, in order.
        var sequence: UInt16 = 40_002
        for _ in 0..<30_000 {
            sequence &+= 1
            #expect(validation.admit(Self.packet(sequence), arrival: 0.07) != .drop)
        }
    }

    /// Malformed payloads (RFC 6184) are counted and dropped before they count towards any
    /// source: aggregates whose sizes run past the end, fragments with both start and end set,
    /// reserved types, empty payloads, the forbidden bit.
    @Test(arguments: [[], [0x78, 0x10, 0x00, 0x65], [0x78, 0x00, 0x02, 0x1C, 0x00], [0x7C, 0xC5, 0x00], [0x7C], [0x1E, 0x00], [0xE5, 0x00]] as [[UInt8]])
    func malformedPayloadsAreDroppedAndCounted(payload: [UInt8]) {
        var validation = RTPSourceValidation()
        for sequence in 0..<5 {
            #expect(validation.admit(Self.packet(UInt16(sequence), payload: payload), arrival: 0) == .drop)
        }
        #expect(validation.statistics.packetsMalformed == 5 && validation.ssrc == nil)
    }

    /// Fragment middles alone never make a source valid (no NAL unit starts in them): strays of
    /// that shape, numbered in sequence, are not taken for the stream.
    @Test func aSourceOfFragmentMiddlesIsNeverTaken() {
        var validation = RTPSourceValidation()
        for sequence in 0..<20 {
            #expect(validation.admit(Self.packet(UInt16(sequence), ssrc: 0, payload: [0x7C, 0x05, 0x01, 0x02]), arrival: 0) == .drop)
        }
        #expect(validation.ssrc == nil)
        _ = validation.admit(Self.packet(300), arrival: 0)
        #expect(Self.accepted(validation.admit(Self.packet(301), arrival: 0)) == [300, 301])
        #expect(validation.ssrc == 1234)
    }

    @Test func anExpectedSourceNeedsNoProbationAndIsTheOnlyOne() {
        var validation = RTPSourceValidation(configuration: .init(expectedSSRC: 1234))
        #expect(validation.admit(Self.packet(5, ssrc: 1), arrival: 0) == .drop)
        #expect(validation.admit(Self.packet(6, ssrc: 1), arrival: 0) == .drop)
        #expect(Self.accepted(validation.admit(Self.packet(700), arrival: 0)) == [700])
        #expect(validation.statistics.packetsFromOtherSources == 2)
    }

    @Test func otherPayloadTypesAndNonRTPAreCounted() {
        var validation = RTPSourceValidation(configuration: .init(payloadType: 96))
        #expect(validation.admit(Self.packet(1, payloadType: 97), arrival: 0) == .drop)
        let junk: [UInt8] = [0x00, 0x01, 0x02]
        #expect(junk.withUnsafeBytes { validation.admit(datagram: $0, arrival: 0) } == .drop)
        #expect(validation.statistics.packetsOfOtherPayloadTypes == 1 && validation.statistics.packetsUnparsable == 1)
    }
}
