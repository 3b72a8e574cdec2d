// Datagrams (each after a 2-byte length) through an RTP depacketizer (H.264, or RFC 3640 AAC
// with an AU-header layout the input chooses) and the RTCP parser; every access unit or frame
// it hands on must survive packetizing and depacketizing again unchanged.
import FuzzSupport
import H264Network
import MediaCore

@_cdecl("FuzzRTP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let flags = choice.byte()
        if flags & 0x80 != 0 { return fuzzAAC(&choice) }
        let configuration = H264Depacketizer.Configuration(reorderDepth: Int(flags & 0x1F), payloadType: flags & 0x20 != 0 ? 96 : nil,
                                                           resumesAtSyncSample: flags & 0x40 == 0, maximumAccessUnitSize: 1 << 20)
        let packetSize = H264Packetizer.smallestPacketSize + Int(choice.byte()) * 8
        var depacketizer = H264Depacketizer(configuration: configuration)
        var units: [H264Depacketizer.AccessUnit] = []
        forEachDatagram(choice.rest) { datagram in
            if RTPPacket.isRTCP(datagram) {
                if let packets = try? RTCPPacket.parse(compound: datagram) {
                    let again = try? RTCPPacket.parse(compound: RTCPPacket.serialize(packets))
                    fuzzCheck(again != nil, "serialized RTCP does not parse")
                }
                return
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

/// The LATM path (RFC 6416): the StreamMuxConfig in the description or in band.
func fuzzLATM(_ choice: inout FuzzOptions, inBand: Bool) {
    let fmtp = inBand ? "cpresent=1" : "cpresent=0;config=400023103fc0"
    let medium = SessionDescription.Media(type: "audio", port: 1, formats: ["97"], attributes: ["rtpmap:97 MP4A-LATM/48000/2", "fmtp:97 " + fmtp])
    guard let format = try? MP4ALATMPayloadFormat(medium: medium) else { fatalError("fuzz check failed: the LATM format does not parse") }
    var depacketizer = LATMDepacketizer(configuration: .init(format: format, reorderDepth: Int(choice.byte() & 0x3F), maximumElementSize: 1 << 14))
    var frames: [AACDepacketizer.Frame] = []
    forEachDatagram(choice.rest) { frames += depacketizer.receive(datagram: $0) }
    frames += depacketizer.finish()
    fuzzCheck(depacketizer.statistics.framesComplete == frames.count, "\(frames.count) LATM frames handed on, \(depacketizer.statistics.framesComplete) counted")
    fuzzCheck(frames.allSatisfy { $0.bytes.count <= 1 << 16 }, "a LATM frame over the element limit handed on")
}

/// The G.711 path (RFC 3551): runs of samples through the depacketizer and the receiving
/// session; every run handed on is whole sample frames, and counted.
func fuzzG711(_ choice: inout FuzzOptions) {
    let format = G711PayloadFormat(law: choice.byte() & 1 == 0 ? .mu : .a, channelCount: Int(choice.byte() % 3) + 1)
    var depacketizer = G711Depacketizer(configuration: .init(format: format, reorderDepth: Int(choice.byte() & 0x3F)))
    var runs: [AACDepacketizer.Frame] = []
    forEachDatagram(choice.rest) { datagram in
        if let packet = try? RTPPacket(parsing: datagram) { runs += depacketizer.receive(packet) }
    }
    runs += depacketizer.finish()
    fuzzCheck(depacketizer.statistics.runsComplete == runs.count, "\(runs.count) G.711 runs handed on, \(depacketizer.statistics.runsComplete) counted")
    fuzzCheck(runs.allSatisfy { !$0.bytes.isEmpty && $0.bytes.count % format.channelCount == 0 }, "a G.711 run that is not whole sample frames")
    if var session = try? RTPAudioReceivingSession(configuration: .init(format: .g711(format), ssrc: 1)) {
        var made = 0, arrival = 0.0
        forEachDatagram(choice.rest) { datagram in
            arrival += 0.01
            if RTPPacket.isRTCP(datagram) { _ = session.receiveRTCP(datagram, arrival: arrival) } else { made += session.receiveRTP(datagram, arrival: arrival).count }
            made += session.expire(now: arrival + 0.05).count
        }
        made += session.finish().count
        fuzzCheck(made == session.samplesMade, "\(session.samplesMade) G.711 samples made, \(made) handed on")
    }
}

/// The AAC path: the first bytes choose the AU-header layout (or LATM, or G.711).
func fuzzAAC(_ choice: inout FuzzOptions) {
    var format = MPEG4GenericPayloadFormat(formatDescription: try! AudioFormatDescription(aacConfiguration: [0x11, 0x90]), payloadType: 97)
    let layout = choice.byte()
    if layout & 0x70 == 0x70 && layout & 0x08 != 0 { return fuzzG711(&choice) }
    if layout & 0x60 == 0x60 { return fuzzLATM(&choice, inBand: layout & 0x10 != 0) }
    if layout & 0x80 != 0 {
        format.sizeLength = Int(layout & 0x1F) + (layout & 0x20 != 0 ? 16 : 0)
        format.indexLength = Int(choice.byte() % 5)
        format.indexDeltaLength = Int(choice.byte() % 5)
        format.ctsDeltaLength = Int(choice.byte() % 33)
        format.dtsDeltaLength = Int(choice.byte() % 33)
        format.randomAccessIndication = layout & 0x40 != 0
        format.streamStateIndication = Int(choice.byte() % 9)
        format.auxiliaryDataSizeLength = Int(choice.byte() % 33)
    }
    var depacketizer = AACDepacketizer(configuration: .init(format: format, reorderDepth: Int(choice.byte() & 0x3F), maximumFrameSize: 1 << 14))
    var frames: [AACDepacketizer.Frame] = []
    forEachDatagram(choice.rest) { frames += depacketizer.receive(datagram: $0) }
    // The same datagrams through the receiving session (RTP and RTCP, with a timer), its sound
    // placed by the lip-sync state machine: every sample made is counted and handed on once.
    if var session = try? RTPAudioReceivingSession(configuration: .init(format: format, ssrc: 1)) {
        var sync = RTPLipSync(maximumHeldSamples: 64, reportWait: 1)
        var made: [SampleBuffer] = [], handed = 0, arrival = 0.0
        let video = RTPLipSync.MediumClock(firstTimestamp: 0, firstArrival: 0, senderClock: RTPSenderClock(ntpTimestamp: 1 << 40, rtpTimestamp: 0, clockRate: 90_000))
        forEachDatagram(choice.rest) { datagram in
            arrival += 0.01
            if RTPPacket.isRTCP(datagram) { _ = session.receiveRTCP(datagram, arrival: arrival) } else { made += session.receiveRTP(datagram, arrival: arrival) }
            made += session.expire(now: arrival + 0.05)
            _ = session.feedback(now: arrival)
            let clock = RTPLipSync.MediumClock(firstTimestamp: session.firstTimestamp, firstArrival: session.firstArrival, senderClock: session.senderClock)
            handed += sync.align(made, video: video, audio: clock, now: arrival).count
            made = []
        }
        let clock = RTPLipSync.MediumClock(firstTimestamp: session.firstTimestamp, firstArrival: session.firstArrival, senderClock: session.senderClock)
        handed += sync.align(session.finish(), video: video, audio: clock, now: arrival).count + sync.finish(video: video, audio: clock, now: arrival).count
        fuzzCheck(handed == session.samplesMade, "\(session.samplesMade) sound samples made, \(handed) handed on")
    }
    frames += depacketizer.finish()
    let statistics = depacketizer.statistics
    fuzzCheck(statistics.framesComplete == frames.count, "\(frames.count) frames handed on, \(statistics.framesComplete) counted")
    fuzzCheck(frames.allSatisfy { $0.bytes.count <= 1 << 14 }, "a frame over the limit handed on")
    let sendable = frames.filter { !$0.bytes.isEmpty && $0.bytes.count <= AACPacketizer.largestFrameSize }
    guard !sendable.isEmpty, var packetizer = try? AACPacketizer(configuration: .init(maximumPacketSize: 200, maximumFramesPerPacket: 4), clockRate: 48_000) else { return }
    var again = AACDepacketizer(configuration: .init(format: MPEG4GenericPayloadFormat(formatDescription: try! AudioFormatDescription(aacConfiguration: [0x11, 0x90]))))
    var rebuilt: [AACDepacketizer.Frame] = []
    for (index, frame) in sendable.enumerated() {
        guard let packets = try? packetizer.packets(frame: frame.bytes, timestamp: UInt32(index) * 1024, duration: 1024) else {
            fatalError("fuzz check failed: the packetizer refused a frame of \(frame.bytes.count) bytes")
        }
        for packet in packets { rebuilt += again.receive(packet) }
    }
    for packet in packetizer.flush() { rebuilt += again.receive(packet) }
    rebuilt += again.finish()
    // (A frame that itself holds an ADTS frame loses that header again.)
    if again.statistics.framesUnwrapped == 0 {
        fuzzCheck(rebuilt.map(\.bytes) == sendable.map(\.bytes), "frames changed across packetizing and depacketizing")
    }
}

/// Each datagram of `bytes`: a 2-byte length, then that many bytes (fewer at the end).
func forEachDatagram(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
    var rest = bytes
    while rest.count >= 2 {
        let length = min(rest.count - 2, Int(rest[0]) << 8 | Int(rest[1]))
        body(UnsafeRawBufferPointer(rebasing: rest[2..<(2 + length)]))
        rest = UnsafeRawBufferPointer(rebasing: rest[(2 + length)...])
    }
}
