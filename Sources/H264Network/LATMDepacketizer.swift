public import MediaCore
public import MPEG4Audio
import Bitstream

/// The RTP payload format for AAC in LATM (RFC 6416 `MP4A-LATM`), receiving side: a pure state
/// machine from RTP packets to raw AAC frames, each with its timestamp.
///
/// Packets are put back in order by an ``RTPJitterBuffer``; the packets of one timestamp are
/// gathered until the marker bit (an element over several packets, §6.2), then read as
/// AudioMuxElements (each padded to a byte), every subframe's payload a frame, the n-th frame
/// timed at the timestamp plus n frame durations. The StreamMuxConfig is the session
/// description's (`cpresent=0`) or the one elements carry (`cpresent=1`; a change is counted
/// and ``streamMuxConfig`` follows it). A gathering touched by loss, cut short by a new
/// timestamp, over ``Configuration/maximumElementSize`` or whose elements do not account for
/// its bytes exactly (one begun right after a loss may lack its first pieces: only that tells)
/// is dropped and counted, never handed on.
public struct LATMDepacketizer: Sendable {
    /// How packets are taken.
    public struct Configuration: Sendable, Hashable {
        /// The payload type, `cpresent` and `config=` from the SDP.
        public var format: MP4ALATMPayloadFormat
        /// One frame's duration in RTP clock ticks (from the configuration's frame length:
        /// 1024 or 960). When the description gives no configuration, the frame length of the
        /// one in force in the stream is used instead, and this only before it (1024 by default).
        public var frameDuration: UInt32
        /// Packets held waiting for a missing one before it is declared lost.
        public var reorderDepth: Int
        /// The most bytes of one timestamp's packets gathered; more is dropped as damaged.
        public var maximumElementSize: Int

        /// A configuration for `format`.
        public init(format: MP4ALATMPayloadFormat, frameDuration: UInt32? = nil, reorderDepth: Int = 64, maximumElementSize: Int = 1 << 17) {
            self.format = format
            let description = (try? format.formatDescription()) ?? nil
            self.frameDuration = frameDuration ?? description.map { Self.frameDuration(of: $0, clockRate: format.clockRate) } ?? 1024

            self.reorderDepth = reorderDepth
            self.maximumElementSize = maximumElementSize
        }

        /// A frame of `description` in ticks of a `clockRate` clock: its samples when the clock
        /// runs at the sample rate, else the configuration's frame length.
        static func frameDuration(of description: AudioFormatDescription, clockRate: Int) -> UInt32 {
            UInt32(clamping: description.sampleRate == clockRate ? description.framesPerPacket : description.audioSpecificConfig?.frameLength ?? 1024)
        }
    }

    /// What the depacketizer has seen.
    public struct Statistics: Sendable, Hashable, Codable {
        /// The packets' order: received, lost, reordered, duplicated, late.
        public var packets = RTPJitterBuffer.Statistics()
        /// Packets of another payload type, or not RTP.
        public var packetsIgnored = 0
        /// Gatherings whose elements did not parse (or came before any configuration).
        public var elementsInvalid = 0
        /// Frames handed on whole.
        public var framesComplete = 0
        /// Gatherings dropped: touched by loss, cut short by a new timestamp, too large, or
        /// invalid.
        public var gatheringsDropped = 0
        /// StreamMuxConfigs carried in band that changed the one in force.
        public var configurationChanges = 0

        /// Nothing seen.
        public init() {}
    }

    /// How packets are taken.
    public let configuration: Configuration
    /// The StreamMuxConfig in force: the session description's, or the last one carried.
    public private(set) var streamMuxConfig: StreamMuxConfig?
    /// What has been seen so far.
    public var statistics: Statistics {
        var statistics = counts
        statistics.packets = jitterBuffer.statistics
        return statistics
    }

    private var counts = Statistics()
    private var jitterBuffer: RTPJitterBuffer
    private var gathering: (timestamp: UInt32, bytes: [UInt8], damaged: Bool)?
    private var lastTimestamp: UInt32?
    private var unfolded: Int64 = 0
    /// Whether the frames' duration follows the stream's configuration (the description has none).
    private let followsStreamFrameLength: Bool

    /// A depacketizer with `configuration` (its `config=`, when it does not parse, is left
    /// for the elements to carry).
    public init(configuration: Configuration) {
        self.configuration = configuration
        jitterBuffer = RTPJitterBuffer(reorderDepth: configuration.reorderDepth)
        streamMuxConfig = (try? configuration.format.streamMuxConfig()) ?? nil
        followsStreamFrameLength = streamMuxConfig == nil
    }

    /// The format of the frames, from the StreamMuxConfig in force (nil before one).
    public var formatDescription: AudioFormatDescription? {
        streamMuxConfig.flatMap { try? AudioFormatDescription(aac: $0.audioSpecificConfig) }
    }

    /// Packets held behind a missing one, waiting for it.
    public var heldPacketCount: Int { jitterBuffer.heldPacketCount }

    /// Takes one datagram; returns the frames it completes, in order.
    public mutating func receive(datagram: UnsafeRawBufferPointer) -> [AACDepacketizer.Frame] {
        do { return receive(try RTPPacket(parsing: datagram)) } catch {
            counts.packetsIgnored += 1
            return []
        }
    }

    /// Takes one packet; returns the frames it completes, in order.
    public mutating func receive(_ packet: RTPPacket) -> [AACDepacketizer.Frame] {
        guard packet.payloadType == configuration.format.payloadType else {
            counts.packetsIgnored += 1
            return []
        }
        return take(jitterBuffer.insert(packet))
    }

    /// Gives up waiting for the packets missing before the held ones.
    public mutating func skipMissing() -> [AACDepacketizer.Frame] { take(jitterBuffer.skipMissing()) }

    /// The end of the stream: every held packet is taken; an element still being gathered
    /// (its marker never came) is dropped.
    public mutating func finish() -> [AACDepacketizer.Frame] {
        let frames = take(jitterBuffer.drain())
        dropGathering()
        return frames
    }

    private mutating func take(_ events: [RTPJitterBuffer.Event]) -> [AACDepacketizer.Frame] {
        var frames: [AACDepacketizer.Frame] = []
        for event in events {
            switch event {
            case .packet(let packet): take(packet, into: &frames)
            case .loss: gathering?.damaged = true
            case .restart: dropGathering()
            }
        }
        return frames
    }

    private mutating func dropGathering() {
        if gathering != nil { counts.gatheringsDropped += 1 }
        gathering = nil
    }

    private mutating func take(_ packet: RTPPacket, into frames: inout [AACDepacketizer.Frame]) {
        if let current = gathering, current.timestamp != packet.timestamp { dropGathering() }  // its marker never came
        // After a loss a new gathering may lack its first packets (an element's pieces carry no
        // offset to tell); it is kept only if its elements' lengths account for every byte (a
        // cut element reads its length from the middle of a payload and runs past the end).
        var current = gathering ?? (packet.timestamp, [], false)
        if current.bytes.count + packet.payload.count > configuration.maximumElementSize {
            current.damaged = true
            current.bytes = []
        } else if !current.damaged {
            current.bytes += packet.payload
        }
        gathering = current
        guard packet.marker else { return }
        gathering = nil
        guard !current.damaged else {
            counts.gatheringsDropped += 1
            return
        }
        read(current.bytes, timestamp: current.timestamp, into: &frames)
    }

    /// The elements of one gathering, each padded to a byte, into frames.
    private mutating func read(_ bytes: [UInt8], timestamp: UInt32, into frames: inout [AACDepacketizer.Frame]) {
        var payloads: [[UInt8]] = []
        var offset = 0
        var config = streamMuxConfig
        var changes = 0
        while offset < bytes.count {
            let element: AudioMuxElement
            do {
                element = try bytes.withUnsafeBytes { raw throws(BitstreamError) in
                    try AudioMuxElement(bytes: UnsafeRawBufferPointer(rebasing: raw[offset...]), muxConfigPresent: configuration.format.muxConfigPresent,
                                        current: config)
                }
            } catch {
                counts.elementsInvalid += 1
                counts.gatheringsDropped += 1
                return
            }
            if let carried = element.streamMuxConfig, carried != config {
                if config != nil { changes += 1 }
                config = carried
            }
            payloads += element.payloads
            // (An element of no bits would never end the gathering.)
            offset += max(1, (element.bitLength + 7) / 8)
        }
        streamMuxConfig = config
        counts.configurationChanges += changes
        var step = configuration.frameDuration
        if followsStreamFrameLength, let format = formatDescription { step = Configuration.frameDuration(of: format, clockRate: configuration.format.clockRate) }
        var time = timestamp
        for payload in payloads {
            if let lastTimestamp {
                unfolded = min(max(unfolded + Int64(Int32(bitPattern: time &- lastTimestamp)), -(1 << 61)), 1 << 61)
            }
            lastTimestamp = time
            counts.framesComplete += 1
            frames.append(AACDepacketizer.Frame(timestamp: time, extendedTimestamp: unfolded, bytes: payload))
            time &+= step
        }
    }
}
