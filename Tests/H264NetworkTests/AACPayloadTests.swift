import Foundation
import H264Network
import MediaCore
import MPEG4Audio
import Bitstream
import TestSupport
import Testing

/// RFC 3640 AAC-hbr: packetizer → depacketizer through frame counts and packet sizes, then the
/// forms other senders use (fragments that state their own size, ADTS inside RTP, an
/// auxiliary section, other AU-header layouts), loss, reordering, interleaving and malformed
/// payloads; the SDP parameters both ways.
@Suite("AACPacketizer and AACDepacketizer")
struct AACPayloadTests {
    /// 48 kHz stereo AAC LC.
    static let config: [UInt8] = [0x11, 0x90]
    static var format: MPEG4GenericPayloadFormat {
        MPEG4GenericPayloadFormat(formatDescription: try! AudioFormatDescription(aacConfiguration: config))
    }

    /// Frames of sizes from 1 byte to 6,000 (pseudo-random bytes; none starts like ADTS).
    static func frames(_ count: Int) -> [[UInt8]] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        return (0..<count).map { index in
            let size = [1, 7, 200, 371, 1150, 1400, 6000][index % 7] + Int(next() % 50)
            return [0x21] + (1..<size).map { _ in UInt8(truncatingIfNeeded: next()) }
        }
    }

    static func packets(_ frames: [[UInt8]], _ configuration: AACPacketizer.Configuration) throws -> [RTPPacket] {
        var packetizer = try AACPacketizer(configuration: configuration, clockRate: 48_000)
        var packets: [RTPPacket] = []
        for (index, frame) in frames.enumerated() {
            packets += try packetizer.packets(frame: frame, timestamp: configuration.timestampOffset &+ UInt32(1024 * index), duration: 1024)
        }
        return packets + packetizer.flush()
    }

    static func depacketize(_ packets: [RTPPacket], format: MPEG4GenericPayloadFormat = format) -> ([AACDepacketizer.Frame], AACDepacketizer.Statistics) {
        var depacketizer = AACDepacketizer(configuration: .init(format: format))
        var frames: [AACDepacketizer.Frame] = []
        for packet in packets { frames += depacketizer.receive(packet) }
        frames += depacketizer.finish()
        return (frames, depacketizer.statistics)
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var packetSize: Int
        var framesPerPacket: Int
        var testDescription: String { "\(packetSize)-byte packets, up to \(framesPerPacket) frame(s) each" }
    }

    @Test(arguments: [Shape(packetSize: 1200, framesPerPacket: 1), Shape(packetSize: 1200, framesPerPacket: 8), Shape(packetSize: 300, framesPerPacket: 3),
                      Shape(packetSize: 17, framesPerPacket: 64), Shape(packetSize: 65_507, framesPerPacket: 64)])
    func everyFrameComesBackWithItsTime(_ shape: Shape) throws {
        let frames = Self.frames(200)
        let configuration = AACPacketizer.Configuration(maximumPacketSize: shape.packetSize, maximumFramesPerPacket: shape.framesPerPacket,
                                                        timestampOffset: 0xFFFF_0000)  // wraps within the stream
        let packets = try Self.packets(frames, configuration)
        #expect(packets.allSatisfy { $0.bytes.count <= shape.packetSize })
        // Markers end frames: on every packet but the non-final fragments.
        #expect(packets.last?.marker == true)
        let (received, statistics) = Self.depacketize(packets)
        #expect(received.map(\.bytes) == frames)
        #expect(received.map(\.timestamp) == frames.indices.map { 0xFFFF_0000 &+ UInt32(1024 * $0) })
        #expect(received.map(\.extendedTimestamp) == frames.indices.map { Int64(1024 * $0) })
        #expect(statistics.framesComplete == 200 && statistics.framesDropped == 0 && statistics.packetsInvalid == 0, "\(statistics)")
        if shape.framesPerPacket > 1, shape.packetSize >= 1200 {
            var single = configuration
            single.maximumFramesPerPacket = 1
            let alone = try Self.packets(frames, single).count
            #expect(packets.count < alone, "frames that fit together share packets: \(packets.count), one a packet \(alone)")
        }
    }

    @Test func aFrameOverTheAUSizeOrEmptyIsRefused() throws {
        var packetizer = try AACPacketizer(configuration: .init(), clockRate: 48_000)
        #expect(throws: NetworkError.self) { try packetizer.packets(frame: [UInt8](repeating: 1, count: 8192), timestamp: 0, duration: 1024) }
        #expect(throws: NetworkError.self) { try packetizer.packets(frame: [], timestamp: 0, duration: 1024) }
        #expect(throws: NetworkError.self) { try AACPacketizer(configuration: .init(maximumPacketSize: 16), clockRate: 48_000) }
        #expect(throws: NetworkError.self) { try AACPacketizer(configuration: .init(maximumFramesPerPacket: 0), clockRate: 48_000) }
    }

    @Test func framesThatDoNotFollowOnStartAPacket() throws {
        var packetizer = try AACPacketizer(configuration: .init(maximumFramesPerPacket: 4, timestampOffset: 0), clockRate: 48_000)
        var packets: [RTPPacket] = []
        for timestamp: UInt32 in [0, 1024, 5000, 6024] { packets += try packetizer.packets(frame: [0x21, 1, 2], timestamp: timestamp, duration: 1024) }
        packets += packetizer.flush()
        #expect(packets.map(\.timestamp) == [0, 5000])
        #expect(Self.depacketize(packets).0.map(\.timestamp) == [0, 1024, 5000, 6024])
    }

    @Test func reorderedAndDuplicatedPacketsChangeNothing() throws {
        let frames = Self.frames(70)
        var packets = try Self.packets(frames, .init(maximumPacketSize: 500, maximumFramesPerPacket: 4))
        // (From the second group on: the first packet to come starts the sequence.)
        for index in stride(from: 4, to: packets.count - 3, by: 4) { packets.swapAt(index, index + 2) }
        packets.insert(packets[10], at: 20)
        let (received, statistics) = Self.depacketize(packets)
        #expect(received.map(\.bytes) == frames)
        #expect(statistics.packets.packetsReordered > 0 && statistics.packets.packetsDuplicated == 1 && statistics.framesDropped == 0)
    }

    @Test func aLostFragmentDropsItsFrameOnly() throws {
        let frames = Self.frames(14)
        let packets = try Self.packets(frames, .init(maximumPacketSize: 500))
        // The second packet of the 1,150-byte frame (index 4: a first fragment, a middle one, a last).
        let first = try #require(packets.firstIndex { !$0.marker })
        var lossy = packets
        lossy.remove(at: first + 1)
        let (received, statistics) = Self.depacketize(lossy)
        let lostFrame = packets[..<first].filter(\.marker).count
        var expected = frames
        expected.remove(at: lostFrame)
        #expect(received.map(\.bytes) == expected)
        #expect(statistics.framesDropped == 1 && statistics.packets.packetsLost == 1, "\(statistics)")
        // The last fragment lost: the frame never ends whole, the next one does.
        var tailless = packets
        let last = try #require(packets[first...].firstIndex { $0.marker })
        tailless.remove(at: last)
        let (tail, tailStatistics) = Self.depacketize(tailless)
        #expect(tail.map(\.bytes) == expected)
        #expect(tailStatistics.framesDropped == 1)
    }

    /// Older senders state each fragment's own size and end the frame with the marker bit.
    @Test func fragmentsThatStateTheirOwnSize() throws {
        let frame = [0x21] + [UInt8](repeating: 0x55, count: 999)
        func packet(_ sequence: UInt16, _ part: ArraySlice<UInt8>, marker: Bool, timestamp: UInt32 = 3000) -> RTPPacket {
            RTPPacket(marker: marker, payloadType: 97, sequenceNumber: sequence, timestamp: timestamp, ssrc: 1,
                      payload: [0, 16, UInt8(part.count >> 5), UInt8((part.count & 0x1F) << 3)] + part)
        }
        let packets = [packet(1, frame[..<400], marker: false), packet(2, frame[400..<800], marker: false), packet(3, frame[800...], marker: true),
                       // a whole frame sent without the marker, then another frame
                       packet(4, [0x21, 9, 9][...], marker: false, timestamp: 4024), packet(5, [0x21, 8][...], marker: true, timestamp: 5048)]
        let (received, statistics) = Self.depacketize(packets)
        #expect(received.map(\.bytes) == [frame, [0x21, 9, 9], [0x21, 8]])
        #expect(received.map(\.timestamp) == [3000, 4024, 5048])
        #expect(statistics.framesDropped == 0)
        // The first fragment lost: the rest cannot tell they are not a whole frame by their
        // sizes; the loss before them does.
        let (afterLoss, lossStatistics) = Self.depacketize([packet(0, [0x21, 7][...], marker: true, timestamp: 1976)] + packets.dropFirst())
        #expect(afterLoss.map(\.bytes) == [[0x21, 7], [0x21, 9, 9], [0x21, 8]])
        #expect(lossStatistics.framesDropped == 1 && lossStatistics.packets.packetsLost == 1)
    }

    /// The RFC's form with the first of two fragments lost: the last one alone is dropped as loss, not as invalid.
    @Test func aLastFragmentAloneIsLoss() throws {
        let frames = [[0x21] + [UInt8](repeating: 3, count: 700), [0x21, 4]]
        var packets = try Self.packets(frames, .init(maximumPacketSize: 500, initialSequenceNumber: 10, timestampOffset: 0))
        #expect(packets.count == 3)
        packets.remove(at: 0)
        var depacketizer = AACDepacketizer(configuration: .init(format: Self.format))
        var received: [AACDepacketizer.Frame] = []
        // A packet before them, so that the first fragment's place is known to be missing.
        received += depacketizer.receive(RTPPacket(marker: true, payloadType: 97, sequenceNumber: 9, timestamp: 0xFFFF_FC00, ssrc: 1, payload: [0, 16, 0, 0x10, 0x21, 5]))
        for packet in packets { received += depacketizer.receive(packet) }
        received += depacketizer.finish()
        #expect(received.map(\.bytes) == [[0x21, 5], [0x21, 4]])
        #expect(depacketizer.statistics.framesDropped == 1 && depacketizer.statistics.packetsInvalid == 0, "\(depacketizer.statistics)")
    }

    /// Some cameras send each frame with its ADTS header inside the payload.
    @Test func adtsHeadersInsideRTPAreRemoved() throws {
        let raw = Self.frames(5).map { Array($0.prefix(300)) }
        let wrapped = raw.map { frame in
            ADTSHeader(profile: 1, samplingFrequencyIndex: 3, channelConfiguration: 2, payloadSize: frame.count).bytes + frame
        }
        let (received, statistics) = Self.depacketize(try Self.packets(wrapped, .init(maximumFramesPerPacket: 2)))
        #expect(received.map(\.bytes) == raw)
        #expect(statistics.framesUnwrapped == 5)
    }

    /// Another layout: 16-bit sizes, no indices, a RAP flag, and an auxiliary section to skip.
    @Test func otherAUHeaderLayoutsAndTheAuxiliarySection() throws {
        var format = Self.format
        format.sizeLength = 16
        format.indexLength = 0
        format.indexDeltaLength = 0
        format.randomAccessIndication = true
        format.auxiliaryDataSizeLength = 8
        // Two AU-headers of 17 bits (34 bits: 5 bytes), aux: size 12 bits + 12 bits of data (3 bytes).
        let a: [UInt8] = [0x21, 1, 2], b: [UInt8] = [0x21, 3]
        var bits = BitString()
        bits.append(UInt64(a.count), 16); bits.append(1, 1)
        bits.append(UInt64(b.count), 16); bits.append(0, 1)
        let headers = bits.bytes
        let payload: [UInt8] = [0, 34] + headers + [12, 0xAB, 0xC0] + a + b
        let packet = RTPPacket(marker: true, payloadType: 97, sequenceNumber: 9, timestamp: 100, ssrc: 1, payload: payload)
        let (received, statistics) = Self.depacketize([packet], format: format)
        #expect(received.map(\.bytes) == [a, b])
        #expect(received.map(\.timestamp) == [100, 1124])
        #expect(statistics.packetsInvalid == 0)
    }

    /// CTS and DTS deltas (RFC 3640 §3.2.1.1): the CTS-flag in every header, 0 in the first.
    @Test func ctsAndDTSFieldsAreRead() throws {
        var format = Self.format
        format.ctsDeltaLength = 16
        format.dtsDeltaLength = 8
        let a: [UInt8] = [0x21, 1], b: [UInt8] = [0x21, 2, 3]
        var bits = BitString()
        // First: size 13, index 3, CTS-flag 0, DTS-flag 1 + 8 bits. Second: size, delta 0, CTS-flag 1 + 16 bits, DTS-flag 0.
        bits.append(UInt64(a.count), 13); bits.append(0, 3); bits.append(0, 1); bits.append(1, 1); bits.append(0x55, 8)
        bits.append(UInt64(b.count), 13); bits.append(0, 3); bits.append(1, 1); bits.append(1024, 16); bits.append(0, 1)
        let length = 13 + 3 + 1 + 1 + 8 + 13 + 3 + 1 + 16 + 1
        let payload = [UInt8(length >> 8), UInt8(length & 0xFF)] + bits.bytes + a + b
        let (received, statistics) = Self.depacketize([RTPPacket(marker: true, payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 1, payload: payload)],
                                                      format: format)
        #expect(received.map(\.bytes) == [a, b])
        #expect(statistics.packetsInvalid == 0)
        // One AU alone: 17 bits of header with its CTS-flag.
        var one = BitString()
        one.append(UInt64(a.count), 13); one.append(0, 3); one.append(0, 1); one.append(0, 1)
        let single = [0, 18] + one.bytes + a
        #expect(Self.depacketize([RTPPacket(marker: true, payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 1, payload: single)], format: format).0.map(\.bytes) == [a])
    }

    @Test func interleavedAndMalformedPacketsAreCountedNotHandedOn() throws {
        func packet(_ sequence: UInt16, _ payload: [UInt8]) -> RTPPacket {
            RTPPacket(marker: true, payloadType: 97, sequenceNumber: sequence, timestamp: 1024 * UInt32(sequence), ssrc: 1, payload: payload)
        }
        let packets = [
            packet(1, [0, 32, 0, 0x18, 0, 0x09, 0x21, 1, 2, 0x21]),  // AU-sizes 3 and 1, the second's delta 1: interleaved
            packet(2, [0, 16, 0, 0x28, 0x21]),  // AU-size 5, 1 byte there
            packet(3, [0, 200, 0, 0x08]),  // headers longer than the payload
            packet(4, [0]),  // no room for the length
            packet(5, [0, 16, 0, 0x10, 0x21, 7]),  // a good one
        ]
        let (received, statistics) = Self.depacketize(packets)
        #expect(received.map(\.bytes) == [[0x21, 7]])
        #expect(statistics.packetsInterleaved == 1 && statistics.packetsInvalid == 3, "\(statistics)")
        // Other payload types and non-RTP datagrams are ignored.
        var depacketizer = AACDepacketizer(configuration: .init(format: Self.format))
        #expect(depacketizer.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1, payload: [0, 16, 0, 8, 1])).isEmpty)
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { depacketizer.receive(datagram: $0) }.isEmpty)
        #expect(depacketizer.statistics.packetsIgnored == 2)
    }

    @Test func randomPayloadsNeverTrap() {
        var state: UInt64 = 7
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            return state >> 33
        }
        var formats = [Self.format]
        var odd = Self.format
        odd.sizeLength = 32; odd.indexLength = 0; odd.indexDeltaLength = 0; odd.ctsDeltaLength = 7; odd.dtsDeltaLength = 9; odd.streamStateIndication = 3
        odd.auxiliaryDataSizeLength = 32
        formats.append(odd)
        var none = Self.format
        none.sizeLength = 0; none.indexLength = 0; none.indexDeltaLength = 0
        formats.append(none)
        for format in formats {
            var depacketizer = AACDepacketizer(configuration: .init(format: format, maximumFrameSize: 4096))
            for sequence in 0..<3000 {
                let payload = (0..<Int(next() % 40)).map { _ in UInt8(truncatingIfNeeded: next()) }
                let packet = RTPPacket(marker: next() % 3 == 0, payloadType: 97, sequenceNumber: UInt16(sequence), timestamp: UInt32(next() % 4) * 1024,
                                       ssrc: 1, payload: payload)
                for frame in depacketizer.receive(packet) { #expect(frame.bytes.count <= 4096) }
            }
            _ = depacketizer.finish()
            #expect(depacketizer.statistics.packets.packetsReceived == 3000)
        }
    }

    /// A frame over the limit whole in one packet (as large as RTP over TCP lets a packet be)
    /// is dropped and counted, as one over several packets is (FuzzRTP: it was handed on).
    @Test func aFrameOverTheLimitInOnePacketIsDroppedAndCounted() throws {
        var depacketizer = AACDepacketizer(configuration: .init(format: Self.format, maximumFrameSize: 4096))
        func packet(_ sizes: [Int], sequence: UInt16) -> RTPPacket {
            // AU-headers of 13-bit sizes and 3-bit indices (AAC-hbr), then the frames.
            let bits = 16 * sizes.count
            var payload: [UInt8] = [UInt8(bits >> 8), UInt8(bits & 0xFF)]
            for size in sizes { payload += [UInt8(size >> 5), UInt8((size & 0x1F) << 3)] }
            for (index, size) in sizes.enumerated() { payload += [UInt8](repeating: UInt8(index + 1), count: size) }
            return RTPPacket(marker: true, payloadType: 97, sequenceNumber: sequence, timestamp: UInt32(sequence) * 2048, ssrc: 1, payload: payload)
        }
        var frames = depacketizer.receive(packet([5000, 300], sequence: 0))
        frames += depacketizer.receive(packet([200], sequence: 1))
        frames += depacketizer.finish()
        #expect(frames.map(\.bytes.count) == [300, 200])
        #expect(depacketizer.statistics.framesDropped == 1 && depacketizer.statistics.framesComplete == 2, "\(depacketizer.statistics)")
    }

    // MARK: LATM (RFC 6416)

    /// One element per timestamp: PayloadLengthInfo (255-coded) then the payload, for each subframe.
    static func latmElement(_ payloads: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for payload in payloads {
            var length = payload.count
            while length >= 255 { bytes.append(255); length -= 255 }
            bytes.append(UInt8(length))
            bytes += payload
        }
        return bytes
    }

    static func latmFormat(_ fmtp: String) throws -> MP4ALATMPayloadFormat {
        try MP4ALATMPayloadFormat(medium: .init(type: "audio", port: 1, formats: ["96"], attributes: ["rtpmap:96 MP4A-LATM/48000/2", "fmtp:96 " + fmtp]))
    }

    @Test("GStreamer's MP4A-LATM medium (rtpmp4apay: no channel count, cpresent=0, a StreamMuxConfig cut after its AudioSpecificConfig) is a sound this side receives: 48 kHz stereo AAC LC")
    func gstreamersLATMMediumIsReceived() throws {
        let medium = SessionDescription.Media(type: "audio", port: 0, formats: ["97"],
                                              attributes: ["rtpmap:97 MP4A-LATM/48000", "fmtp:97 cpresent=0;config=40002320adca00", "control:stream=1"])
        let format = try #require(AudioPayloadFormat(medium: medium))
        #expect(format.encodingName == "MP4A-LATM" && format.payloadType == 97 && format.clockRate == 48000 && format.control == "stream=1")
        let description = try format.formatDescription()
        #expect(description.sampleRate == 48000 && description.channelCount == 2 && description.codecString == "mp4a.40.2", "\(description)")
        #expect(AudioPayloadFormat(medium: .init(type: "audio", port: 0, formats: ["96"], attributes: ["rtpmap:96 opus/48000/2"])) == nil)
    }

    @Test func latmElementsOverPacketsAndLossAreHandledWhole() throws {
        // ffmpeg's 6-byte StreamMuxConfig for 48 kHz stereo, one subframe.
        let format = try Self.latmFormat("profile-level-id=41;cpresent=0;config=400023103fc0")
        var depacketizer = LATMDepacketizer(configuration: .init(format: format))
        #expect(depacketizer.streamMuxConfig?.subFrameCount == 1 && depacketizer.configuration.frameDuration == 1024)
        let frames = Self.frames(6).map { Array($0.prefix(600)) }
        var packets: [RTPPacket] = []
        var sequence: UInt16 = 65_530  // wraps
        for (index, frame) in frames.enumerated() {
            let element = Self.latmElement([frame])
            // Each element in 250-byte pieces, the marker on the last.
            var offset = 0
            while offset < element.count {
                let end = min(element.count, offset + 250)
                packets.append(RTPPacket(marker: end == element.count, payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(1024 * index), ssrc: 7,
                                         payload: Array(element[offset..<end])))
                sequence &+= 1
                offset = end
            }
        }
        var received: [AACDepacketizer.Frame] = []
        for packet in packets { received += depacketizer.receive(packet) }
        received += depacketizer.finish()
        #expect(received.map(\.bytes) == frames)
        #expect(received.map(\.timestamp) == frames.indices.map { UInt32(1024 * $0) })
        // The last piece of the fourth element lost (its marker with it): that element alone is dropped.
        var lossy = LATMDepacketizer(configuration: .init(format: format))
        let lost = try #require(packets.lastIndex { $0.timestamp == 3072 })
        #expect(packets.filter { $0.timestamp == 3072 }.count > 1)
        var kept: [AACDepacketizer.Frame] = []
        for (index, packet) in packets.enumerated() where index != lost { kept += lossy.receive(packet) }
        kept += lossy.finish()
        var expected = frames
        expected.remove(at: 3)
        #expect(kept.map(\.bytes) == expected)
        #expect(lossy.statistics.gatheringsDropped == 1 && lossy.statistics.packets.packetsLost == 1)
    }

    /// GStreamer's payloader writes the config without its last fields; cpresent=1 carries it in band.
    @Test func latmConfigurationsShortOrInBand() throws {
        let short = try Self.latmFormat("cpresent=0;config=40002320")
        #expect(try short.streamMuxConfig()?.audioSpecificConfig.samplingFrequency == 48_000)
        #expect(try short.formatDescription()?.channelCount == 2)
        // cpresent=1: the first element carries the config (useSameStreamMux 0), the next reuses it.
        var writer = BitWriter()
        writer.flag(false)  // useSameStreamMux
        let config = try StreamMuxConfig(bytes: [0x40, 0x00, 0x23, 0x10, 0x3F, 0xC0])
        try config.write(to: &writer)
        var first = writer
        for byte in Self.latmElement([[0x21, 1, 2]]) { first.bits(UInt32(byte), 8) }
        var second = BitWriter()
        second.flag(true)
        for byte in Self.latmElement([[0x21, 3]]) { second.bits(UInt32(byte), 8) }
        let inBand = try Self.latmFormat("cpresent=1")
        var depacketizer = LATMDepacketizer(configuration: .init(format: inBand))
        #expect(depacketizer.streamMuxConfig == nil)
        var received: [AACDepacketizer.Frame] = []
        for (index, bytes) in [first.bytes, second.bytes].enumerated() {
            received += depacketizer.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: UInt16(index), timestamp: UInt32(1024 * index), ssrc: 1, payload: bytes))
        }
        #expect(received.map(\.bytes) == [[0x21, 1, 2], [0x21, 3]])
        #expect(depacketizer.formatDescription?.sampleRate == 48_000)
        // An element before any configuration, or one that does not parse, is counted and dropped.
        var none = LATMDepacketizer(configuration: .init(format: inBand))
        #expect(none.receive(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1, payload: second.bytes)).isEmpty)
        #expect(none.statistics.elementsInvalid == 1)
        #expect(throws: NetworkError.self) { try Self.latmFormat("cpresent=0") }
        #expect(throws: NetworkError.self) { try Self.latmFormat("cpresent=0;config=zz").streamMuxConfig() }
        #expect(throws: NetworkError.self) { try Self.latmFormat("cpresent=0;config=ff").streamMuxConfig() }
    }

    @Test func randomLATMPayloadsNeverTrap() {
        var state: UInt64 = 11
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            return state >> 33
        }
        for fmtp in ["cpresent=0;config=400023103fc0", "cpresent=1"] {
            var depacketizer = LATMDepacketizer(configuration: .init(format: try! Self.latmFormat(fmtp), maximumElementSize: 2048))
            for sequence in 0..<3000 {
                let payload = (0..<Int(next() % 60)).map { _ in UInt8(truncatingIfNeeded: next()) }
                _ = depacketizer.receive(RTPPacket(marker: next() % 2 == 0, payloadType: 96, sequenceNumber: UInt16(sequence), timestamp: UInt32(next() % 3) * 1024,
                                                   ssrc: 1, payload: payload))
            }
            _ = depacketizer.finish()
            #expect(depacketizer.statistics.packets.packetsReceived == 3000)
        }
    }

    // MARK: The session description

    @Test func theSDPParametersGoBothWays() throws {
        let format = MPEG4GenericPayloadFormat(formatDescription: try AudioFormatDescription(aacConfiguration: Self.config), control: "trackID=1")
        #expect(format.attributes == ["rtpmap:97 mpeg4-generic/48000/2",
                                      "fmtp:97 streamtype=5; profile-level-id=41; mode=AAC-hbr; config=1190; sizelength=13; indexlength=3; indexdeltalength=3",
                                      "control:trackID=1"])
        let parsed = try MPEG4GenericPayloadFormat(medium: format.medium(port: 5004))
        #expect(parsed == format)
        #expect(try parsed.formatDescription().sampleRate == 48_000)
        #expect(try parsed.formatDescription().channelCount == 2)
    }

    /// The lines ffmpeg 5.1 writes (no streamtype, upper-case encoding name), and GStreamer's.
    @Test func descriptionsOtherSendersWrite() throws {
        let ffmpeg = try SessionDescription(parsing: """
            v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\na=tool:libavformat 59.27.100\r\nm=audio 5004 RTP/AVP 97\r\n\
            b=AS:128\r\na=rtpmap:97 MPEG4-GENERIC/44100/1\r\na=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=1208\r\n
            """)
        let fromFFmpeg = try MPEG4GenericPayloadFormat(medium: ffmpeg.media[0])
        #expect(fromFFmpeg.clockRate == 44_100 && fromFFmpeg.channelCount == 1 && fromFFmpeg.config == [0x12, 0x08] && fromFFmpeg.sizeLength == 13)
        #expect(try fromFFmpeg.formatDescription().sampleRate == 44_100)
        let gstreamer = try SessionDescription(parsing: """
            v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=Session\r\nt=0 0\r\nm=audio 5006 RTP/AVP 96\r\na=rtpmap:96 MPEG4-GENERIC/48000/2\r\n\
            a=fmtp:96 streamtype=5;profile-level-id=2;mode=AAC-hbr;config=1190;sizeLength=13;indexLength=3;indexDeltaLength=3;constantDuration=1024\r\n
            """)
        let fromGStreamer = try MPEG4GenericPayloadFormat(medium: gstreamer.media[0])
        #expect(fromGStreamer.payloadType == 96 && fromGStreamer.indexDeltaLength == 3 && fromGStreamer.constantDuration == 1024)
        // What cannot be received says why.
        func medium(_ fmtp: String, rtpmap: String = "mpeg4-generic/48000/2") -> SessionDescription.Media {
            .init(type: "audio", port: 1, formats: ["97"], attributes: ["rtpmap:97 \(rtpmap)", "fmtp:97 \(fmtp)"])
        }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("mode=AAC-hbr; sizelength=13")) }  // no config
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("config=11G0")) }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("config=1190; streamtype=4")) }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("config=1190; sizelength=99")) }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("config=1190", rtpmap: "mpeg4-generic")) }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: medium("config=1190", rtpmap: "mpeg4-generic/44100/2")).formatDescription() }
        #expect(throws: NetworkError.self) { try MPEG4GenericPayloadFormat(medium: .init(type: "audio", port: 1, formats: ["0"], attributes: [])) }
    }
}

/// Bits gathered most significant first, padded with zeros to a byte.
struct BitString {
    private var bits: [Bool] = []
    mutating func append(_ value: UInt64, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> UInt64(shift) & 1 == 1) }
    }
    var bytes: [UInt8] {
        stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { byte, offset in byte << 1 | (start + offset < bits.count && bits[start + offset] ? 1 : 0) }
        }
    }
}
