// Datagrams (each after a 2-byte length) through the RTP depacketizer and the RTCP parser; every
// access unit it hands on must survive packetizing and depacketizing again unchanged.
import FuzzSupport
import H264Network

@_cdecl("FuzzRTP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let flags = choice.byte()
        let configuration = H264Depacketizer.Configuration(reorderDepth: Int(flags & 0x1F), payloadType: flags & 0x20 != 0 ? 96 : nil,
                                                           resumesAtSyncSample: flags & 0x40 == 0, maximumAccessUnitSize: 1 << 20)
        let packetSize = H264Packetizer.smallestPacketSize + Int(choice.byte()) * 8
        var depacketizer = H264Depacketizer(configuration: configuration)
        var units: [H264Depacketizer.AccessUnit] = []
        var rest = choice.rest
        while rest.count >= 2 {
            let length = min(rest.count - 2, Int(rest[0]) << 8 | Int(rest[1]))
            let datagram = UnsafeRawBufferPointer(rebasing: rest[2..<(2 + length)])
            rest = UnsafeRawBufferPointer(rebasing: rest[(2 + length)...])
            if RTPPacket.isRTCP(datagram) {
                if let packets = try? RTCPPacket.parse(compound: datagram) {
                    let again = try? RTCPPacket.parse(compound: RTCPPacket.serialize(packets))
                    fuzzCheck(again != nil, "serialized RTCP does not parse")
                }
                continue
            }
            if let packet = try? RTPPacket(parsing: datagram) {
                fuzzCheck((try? RTPPacket(parsing: packet.bytes)) == packet, "an RTP packet changed across serialize and parse")
            }
            units += depacketizer.receive(datagram: datagram)
        }
        units += depacketizer.finish()
        let statistics = depacketizer.statistics
        fuzzCheck(statistics.accessUnitsComplete == units.count, "\(units.count) access units handed on, \(statistics.accessUnitsComplete) counted")
        guard !units.isEmpty, var packetizer = try? H264Packetizer(configuration: .init(maximumPacketSize: packetSize)) else { return }
        var again = H264Depacketizer(configuration: .init(resumesAtSyncSample: false))
        var rebuilt: [H264Depacketizer.AccessUnit] = []
        for unit in units {
            fuzzCheck(!unit.nalUnits.isEmpty && unit.nalUnits.allSatisfy { !$0.isEmpty }, "an empty access unit or NAL unit handed on")
            guard let packets = try? packetizer.packets(nalUnits: unit.nalUnits, timestamp: unit.timestamp) else {
                fatalError("fuzz check failed: mode 1 refused an access unit")
            }
            for packet in packets { rebuilt += again.receive(packet) }
        }
        rebuilt += again.finish()
        fuzzCheck(rebuilt.map(\.nalUnits) == units.map(\.nalUnits), "access units changed across packetizing and depacketizing")
    }
}
