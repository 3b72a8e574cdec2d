import Foundation
import H264Bitstream
import H264Network
import MediaCore
import TestSupport
import SampleFlow
import Testing

/// Packetizer → depacketizer through every packet size and mode, then reordered, duplicated,
/// wrapped, lost and malformed packets.
@Suite("H264Packetizer and H264Depacketizer")
struct RTPPayloadTests {
    /// The embedded sample (High profile, B-frames, 3 IDRs, 90 frames).
    static func samples() throws -> [SampleBuffer] {
        let reader = try SampleBufferReader(path: Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264")
        var samples: [SampleBuffer] = []
        while let sample = try reader.next() { samples.append(sample) }
        return samples
    }

    /// What a receiver should rebuild for a sample: its NAL units, parameter sets first at sync samples.
    static func expectedNALUnits(_ sample: SampleBuffer) throws -> [[UInt8]] {
        let parameterSets = sample.isSync ? sample.videoFormatDescription!.sequenceParameterSets + sample.videoFormatDescription!.pictureParameterSets : []
        return parameterSets + (try sample.nalUnits())
    }

    static func packets(_ samples: [SampleBuffer], _ configuration: H264Packetizer.Configuration) throws -> [RTPPacket] {
        var packetizer = try H264Packetizer(configuration: configuration)
        return try samples.flatMap { try packetizer.packets(for: $0) }
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var mode: Int
        var packetSize: Int
        var testDescription: String { "mode \(mode), \(packetSize)-byte packets" }
    }

    static let shapes = [Shape(mode: 1, packetSize: 1200), Shape(mode: 1, packetSize: 500), Shape(mode: 1, packetSize: 100), Shape(mode: 0, packetSize: 65_507)]

    @Test(arguments: shapes) func everyAccessUnitComesBackWhole(_ shape: Shape) throws {
        let samples = try Self.samples()
        let configuration = H264Packetizer.Configuration(packetizationMode: shape.mode, maximumPacketSize: shape.packetSize, initialSequenceNumber: 65_000)
        let packets = try Self.packets(samples, configuration)
        #expect(packets.allSatisfy { $0.bytes.count <= shape.packetSize })
        #expect(packets.filter(\.marker).count == samples.count)
        // Sequence numbers run on across the wrap.
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 })
        var depacketizer = H264Depacketizer()
        var units = packets.flatMap { depacketizer.receive(RTPPacket(marker: $0.marker, payloadType: $0.payloadType, sequenceNumber: $0.sequenceNumber,
                                                                     timestamp: $0.timestamp, ssrc: $0.ssrc, payload: $0.payload)) }
        units += depacketizer.finish()
        #expect(units.count == samples.count)
        for (unit, sample) in zip(units, samples) {
            #expect(unit.nalUnits == (try Self.expectedNALUnits(sample)))
            #expect(unit.isIDR == sample.isSync)
            #expect(Int64(unit.timestamp &- configuration.timestampOffset) == sample.presentationTime.converted(toTimescale: 90_000).value)
        }
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.accessUnitsDropped == 0)
    }

    @Test func samplesRebuiltFromRTPHaveTheSourceTimesAndData() throws {
        let samples = try Self.samples()
        let packets = try Self.packets(samples, .init(sendsParameterSetsAtSyncSamples: true))
        var depacketizer = H264Depacketizer()
        // No SDP: the description comes from the in-band parameter sets.
        var builder = RTPSampleBufferBuilder()
        var rebuilt: [SampleBuffer] = []
        for packet in packets { for unit in depacketizer.receive(packet) { rebuilt += try builder.append(unit) } }
        for unit in depacketizer.finish() { rebuilt += try builder.append(unit) }
        rebuilt += builder.finish()
        #expect(rebuilt.count == samples.count)
        let origin = samples[0].presentationTime
        for (sample, source) in zip(rebuilt, samples) {
            #expect(sample.data.bytes == source.data.bytes)
            #expect(sample.formatDescription == source.formatDescription)
            #expect(sample.isSync == source.isSync)
            #expect(sample.presentationTime == (source.presentationTime - origin).converted(toTimescale: 90_000))
            // The source's decoding times came from its picture order; RTP's are rebuilt from the reordering depth.
            #expect(sample.decodeTime == (source.decodeTime - origin).converted(toTimescale: 90_000))
        }
        #expect(zip(rebuilt, rebuilt.dropFirst()).allSatisfy { $0.decodeTime < $1.decodeTime && $0.decodeTime <= $0.presentationTime })
    }

    @Test func modeZeroRefusesANALUnitLargerThanAPacketNamingItsSize() throws {
        let samples = try Self.samples()
        #expect {
            _ = try Self.packets(samples, .init(packetizationMode: 0, maximumPacketSize: 500))
        } throws: { error in
            let error = error as? NetworkError
            return error?.code == .tooLarge && error?.reason.contains("mode 1") == true
        }
        #expect(throws: NetworkError.self) { _ = try H264Packetizer(configuration: .init(packetizationMode: 2)) }
        #expect(throws: NetworkError.self) { _ = try H264Packetizer(configuration: .init(maximumPacketSize: 10)) }
    }

    @Test func reorderedAndDuplicatedPacketsGiveTheSameAccessUnits() throws {
        let samples = try Self.samples()
        let packets = try Self.packets(samples, .init(maximumPacketSize: 300, initialSequenceNumber: 65_500))
        // Reverse every window of 8 after the first (the first packet received starts the
        // sequence) and send every 5th packet twice.
        var shuffled: [RTPPacket] = []
        for window in stride(from: 0, to: packets.count, by: 8) {
            var part = Array(packets[window..<min(window + 8, packets.count)])
            if window > 0 { part.reverse() }
            shuffled += part
        }
        var sent: [RTPPacket] = []
        for (index, packet) in shuffled.enumerated() {
            sent.append(packet)
            if index % 5 == 0 { sent.append(packet) }
        }
        var depacketizer = H264Depacketizer(configuration: .init(reorderDepth: 16))
        var units = sent.flatMap { depacketizer.receive($0) }
        units += depacketizer.finish()
        #expect(units.count == samples.count)
        #expect(try units.map(\.nalUnits) == samples.map(Self.expectedNALUnits))
        let statistics = depacketizer.statistics
        #expect(statistics.packetsDuplicated == (shuffled.count + 4) / 5)
        #expect(statistics.packetsReordered > 0 && statistics.packetsLost == 0)
    }

    @Test func lossDropsTheDamagedAccessUnitAndResumesAtTheNextIDR() throws {
        let samples = try Self.samples()
        let packets = try Self.packets(samples, .init(maximumPacketSize: 300))
        // Lose one packet in the middle of sample 10's access unit.
        var boundaries: [Int] = []  // index of each access unit's first packet
        for (index, packet) in packets.enumerated() where index == 0 || packets[index - 1].marker { boundaries.append(index); _ = packet }
        let firstOfSample10 = boundaries[10], lastOfSample10 = boundaries[11] - 1
        #expect(lastOfSample10 > firstOfSample10, "sample 10 spans packets")
        let lost = firstOfSample10 + 1
        var depacketizer = H264Depacketizer(configuration: .init(reorderDepth: 4))
        var units: [H264Depacketizer.AccessUnit] = []
        for (index, packet) in packets.enumerated() where index != lost { units += depacketizer.receive(packet) }
        units += depacketizer.finish()
        let nextIDR = try #require(samples.indices.first { $0 > 10 && samples[$0].isSync })
        // Samples 0–9 whole, 10 dropped, 11 up to the next IDR skipped, the rest whole.
        #expect(units.count == 10 + (samples.count - nextIDR))
        #expect(try units.map(\.nalUnits) == (samples[..<10] + samples[nextIDR...]).map(Self.expectedNALUnits))
        #expect(depacketizer.statistics.packetsLost == 1)
        #expect(depacketizer.statistics.accessUnitsDropped == 1)
        #expect(depacketizer.statistics.accessUnitsSkipped == nextIDR - 11)
    }

    @Test func aStreamJoinedMidwayStartsAtItsNextIDR() throws {
        let samples = try Self.samples()
        let packets = try Self.packets(samples, .init())
        let start = packets.count / 2
        var depacketizer = H264Depacketizer()
        var units = packets[start...].flatMap { depacketizer.receive($0) }
        units += depacketizer.finish()
        #expect(units.first?.isIDR == true)
        #expect(units.count > 0 && units.count < samples.count)
    }

    /// Found by FuzzRTP: a STAP-A or FU-A carrying a unit of type 0 or 24–31 was handed on, and
    /// sent again as a single packet it read as a STAP-A or FU-A: the round trip changed it.
    @Test func aggregatedOrFragmentedUnitsOfPacketTypesAreMalformed() throws {
        let idr: [UInt8] = [0x65, 0x88, 0x84]
        for payload: [UInt8] in [[0x18, 0x00, 0x02, 0x1C, 0x01, 0x00, 0x03] + idr,  // STAP-A holding a "type 28" unit
                                 [0x18, 0x00, 0x01, 0x00, 0x00, 0x03] + idr,        // ... a type-0 unit
                                 [0x7C, 0x98, 0x01, 0x02]] {                        // FU-A start of a "type 24" unit
            var depacketizer = H264Depacketizer(configuration: .init(resumesAtSyncSample: false))
            var units = depacketizer.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload: payload))
            units += depacketizer.finish()
            #expect(units.isEmpty, "\(payload)")
            #expect(depacketizer.statistics.packetsInvalid == 1 && depacketizer.statistics.accessUnitsDropped == 1)
        }
        var packetizer = try H264Packetizer()
        #expect(throws: NetworkError.self) { _ = try packetizer.packets(nalUnits: [[0x18, 0x00, 0x01]], timestamp: 0) }
        #expect(throws: NetworkError.self) { _ = try packetizer.packets(nalUnits: [idr, [0x00, 0x01]], timestamp: 0) }
    }

    @Test func malformedPayloadsAreCountedAndTheSessionGoesOn() throws {
        let samples = try Self.samples()
        var packets = try Self.packets(samples, .init(maximumPacketSize: 300, initialSequenceNumber: 0))
        let count = packets.count
        // FU-A middles without a start, a STAP-A whose length runs past the end, reserved types,
        // an empty payload, garbage: each in the first access unit's place.
        packets[1].payload = [0x7C, 0x05, 1, 2, 3]  // FU-A, no start bit
        var depacketizer = H264Depacketizer()
        var units: [H264Depacketizer.AccessUnit] = []
        for packet in packets { units += depacketizer.receive(packet) }
        for garbage: [UInt8] in [[], [0x80], [0x80, 96] + [UInt8](repeating: 0xFF, count: 20), [UInt8](repeating: 0, count: 40)] {
            units += garbage.withUnsafeBytes { depacketizer.receive(datagram: $0) }
        }
        var next = UInt16(count)
        for payload: [UInt8] in [[0x78, 0x00, 0xFF, 0x67], [0x1E, 1, 2], [0x19, 1, 2], []] {
            units += depacketizer.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: next, timestamp: 1, ssrc: 1, payload: payload))
            next &+= 1
        }
        units += depacketizer.finish()
        #expect(depacketizer.statistics.packetsInvalid >= 7)
        #expect(units.count < samples.count && units.count > 0, "the damaged first GOP is dropped, the rest comes through")
        #expect(units.allSatisfy { !$0.nalUnits.isEmpty })
    }

    /// Found in review: each NAL unit held is an array, so STAP-As of one-byte units held some
    /// 56 times their bytes under the limit; and a fragment was checked alone, not with the
    /// units before it.
    @Test func theAccessUnitLimitChargesEachUnitAndCountsTheFragmentWithTheRest() throws {
        let limit = 64 << 10
        // Three STAP-As of 460 one-byte units each (1.4 KB of bytes, 90 KB held): dropped.
        let stap: [UInt8] = [0x18] + (0..<460).flatMap { _ in [0x00, 0x01, 0x06] as [UInt8] }   // SEI-type one-byte units
        var aggregated = H264Depacketizer(configuration: .init(resumesAtSyncSample: false, maximumAccessUnitSize: limit))
        var units: [H264Depacketizer.AccessUnit] = []
        for sequence in 0..<3 {
            units += aggregated.receive(RTPPacket(marker: sequence == 2, payloadType: 96, sequenceNumber: UInt16(sequence), timestamp: 1, ssrc: 1, payload: stap))
        }
        units += aggregated.finish()
        #expect(units.isEmpty && aggregated.statistics.accessUnitsDropped == 1)
        // One STAP-A of them (30 KB held) passes.
        var one = H264Depacketizer(configuration: .init(resumesAtSyncSample: false, maximumAccessUnitSize: limit))
        units = one.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0, timestamp: 1, ssrc: 1, payload: stap)) + one.finish()
        #expect(units.count == 1 && units.first?.nalUnits.count == 460)
        // 40 KB of single units, then a 40 KB fragmented unit: 80 KB in all, dropped (the
        // fragment is let go as soon as it and the units before it pass the limit).
        var fragmented = H264Depacketizer(configuration: .init(resumesAtSyncSample: false, maximumAccessUnitSize: limit))
        let single: [UInt8] = [0x41] + [UInt8](repeating: 0x9A, count: 40_000)
        units = fragmented.receive(RTPPacket(payloadType: 96, sequenceNumber: 0, timestamp: 1, ssrc: 1, payload: single))
        let body = [UInt8](repeating: 0x9A, count: 20_000)
        units += fragmented.receive(RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload: [0x5C, 0x81] + body))   // FU-A start
        units += fragmented.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 2, timestamp: 1, ssrc: 1, payload: [0x5C, 0x41] + body))   // end
        units += fragmented.finish()
        #expect(units.isEmpty && fragmented.statistics.accessUnitsDropped == 1)
    }
}
