public import MediaCore

/// The receiving half of an RTP session for sound (AAC as RFC 3640 `mpeg4-generic`, AAC-hbr, or
/// RFC 6416 `MP4A-LATM`; G.711 PCMU and PCMA) as a pure state machine, beside ``RTPReceivingSession`` for the picture: RTP and RTCP datagrams in;
/// sample buffers of AAC frames, and the receiver reports to send back, out. No sockets and no
/// clock: the caller passes arrival times.
///
/// RTP goes through ``RTPSourceValidation`` (RFC 3550 A.1), then the payload format's
/// depacketizer, ``AACDepacketizer``, ``LATMDepacketizer`` or ``G711Depacketizer`` (jitter
/// buffer, several frames a packet, frames over several packets, loss). Each frame (for G.711,
/// each packet's run of samples, as long as its samples) becomes a
/// sample buffer of ``formatDescription`` on track ``Configuration/trackID``, timed in the
/// sample rate's clock from the first frame's RTP timestamp (``firstTimestamp``), one frame's
/// duration long. The sender's reports give ``senderClock``, its RTP clock against its wall
/// clock: what places this medium beside another of the same sender (lip sync).
public struct RTPAudioReceivingSession: Sendable {
    /// How the session receives.
    public struct Configuration: Sendable, Hashable {
        /// The payload format from the session description (its `config=` describes the sound).
        public var format: AudioPayloadFormat
        /// The track the samples are on.
        public var trackID: TrackID
        /// The receiver's own SSRC (the sender of the reports).
        public var ssrc: UInt32
        /// Seconds between receiver reports.
        public var reportInterval: Double = 1
        /// Seconds a missing packet is waited for before it counts as lost.
        public var maximumReorderDelay: Double = 0.04
        /// Packets the jitter buffer holds behind a missing one.
        public var reorderDepth = 64
        /// Seconds of quiet after a BYE, once every packet the sender reported has come.
        public var goodbyeSettle: Double = 0.1
        /// Seconds of quiet after a BYE when packets the sender reported have not come.
        public var goodbyeLinger: Double = 1

        /// A configuration for `format`, its samples on track `trackID`.
        public init(format: AudioPayloadFormat, trackID: TrackID = TrackID(rawValue: 2), ssrc: UInt32 = .random(in: 1...UInt32.max)) {
            self.format = format
            self.trackID = trackID
            self.ssrc = ssrc
        }

        /// A configuration for RFC 3640 AAC-hbr, its samples on track `trackID`.
        public init(format: MPEG4GenericPayloadFormat, trackID: TrackID = TrackID(rawValue: 2), ssrc: UInt32 = .random(in: 1...UInt32.max)) {
            self.init(format: .mpeg4Generic(format), trackID: trackID, ssrc: ssrc)
        }
    }

    /// How the session receives.
    public let configuration: Configuration
    /// The sound's format: the payload format's configuration, or for LATM the StreamMuxConfig
    /// in force (the description's, or the last one the stream carried; nil until the first
    /// when the description gives none).
    public var formatDescription: AudioFormatDescription? {
        if case .latm(let latm) = depacketizer { return latm.formatDescription ?? describedFormat }
        return describedFormat
    }
    private let describedFormat: AudioFormatDescription?
    /// A payload format's depacketizer.
    public enum Depacketizer: Sendable {
        /// RFC 3640 AAC-hbr.
        case mpeg4Generic(AACDepacketizer)
        /// RFC 6416 LATM.
        case latm(LATMDepacketizer)
        /// G.711.
        case g711(G711Depacketizer)

        /// Packets held behind a missing one.
        public var heldPacketCount: Int {
            switch self {
            case .mpeg4Generic(let depacketizer): depacketizer.heldPacketCount
            case .latm(let depacketizer): depacketizer.heldPacketCount
            case .g711(let depacketizer): depacketizer.heldPacketCount
            }
        }

        /// The packets' order: received, lost, reordered, duplicated, late.
        public var packets: RTPJitterBuffer.Statistics {
            switch self {
            case .mpeg4Generic(let depacketizer): depacketizer.statistics.packets
            case .latm(let depacketizer): depacketizer.statistics.packets
            case .g711(let depacketizer): depacketizer.statistics.packets
            }
        }

        /// Frames dropped (damaged by loss, invalid, too large); for LATM, the gatherings.
        public var framesDropped: Int {
            switch self {
            case .mpeg4Generic(let depacketizer): depacketizer.statistics.framesDropped
            case .latm(let depacketizer): depacketizer.statistics.gatheringsDropped
            case .g711(let depacketizer): depacketizer.statistics.packetsEmpty
            }
        }

        mutating func receive(_ packet: RTPPacket) -> [AACDepacketizer.Frame] {
            switch self {
            case .mpeg4Generic(var depacketizer):
                defer { self = .mpeg4Generic(depacketizer) }
                return depacketizer.receive(packet)
            case .latm(var depacketizer):
                defer { self = .latm(depacketizer) }
                return depacketizer.receive(packet)
            case .g711(var depacketizer):
                defer { self = .g711(depacketizer) }
                return depacketizer.receive(packet)
            }
        }

        mutating func skipMissing() -> [AACDepacketizer.Frame] {
            switch self {
            case .mpeg4Generic(var depacketizer):
                defer { self = .mpeg4Generic(depacketizer) }
                return depacketizer.skipMissing()
            case .latm(var depacketizer):
                defer { self = .latm(depacketizer) }
                return depacketizer.skipMissing()
            case .g711(var depacketizer):
                defer { self = .g711(depacketizer) }
                return depacketizer.skipMissing()
            }
        }

        mutating func finish() -> [AACDepacketizer.Frame] {
            switch self {
            case .mpeg4Generic(var depacketizer):
                defer { self = .mpeg4Generic(depacketizer) }
                return depacketizer.finish()
            case .latm(var depacketizer):
                defer { self = .latm(depacketizer) }
                return depacketizer.finish()
            case .g711(var depacketizer):
                defer { self = .g711(depacketizer) }
                return depacketizer.finish()
            }
        }
    }

    /// The depacketizer (its statistics: packets, frames complete and dropped).
    public private(set) var depacketizer: Depacketizer
    /// Which packets were taken as the stream's.
    public private(set) var sourceValidation: RTPSourceValidation
    /// Loss and jitter of the sender's stream (RFC 3550 A.3, A.8).
    public private(set) var reception: RTPReceptionStatistics?
    /// RTCP packets received (compound packets count once).
    public private(set) var controlPackets = 0
    /// Receiver reports sent.
    public private(set) var receiverReports = 0
    /// Whether the sender said goodbye.
    public private(set) var senderSaidGoodbye = false
    /// The sender's clock from its last report (nil before one came).
    public private(set) var senderClock: RTPSenderClock?
    /// The first frame's RTP timestamp: sample times count from it.
    public private(set) var firstTimestamp: UInt32?
    /// When the first frame's packet arrived (the caller's clock).
    public private(set) var firstArrival: Double?
    /// Sample buffers made.
    public private(set) var samplesMade = 0
    private var reportedPacketCount: UInt32?
    private var lastSenderReport: (middle: UInt32, arrival: Double)?
    private var lastReport: Double?
    private var gapSince: Double?

    /// A session; an error when the payload format's configuration is given and does not read
    /// (LATM whose configuration comes in band is taken: its format is known with the first
    /// element).
    public init(configuration: Configuration) throws(NetworkError) {
        self.configuration = configuration
        describedFormat = try configuration.format.describedFormat()
        guard describedFormat != nil || configuration.format.carriesItsConfigurationInBand else {
            throw NetworkError(.invalidDescription, "\(configuration.format.encodingName): the session description gives no configuration of the sound")
        }
        let frameDuration = Int64(describedFormat?.framesPerPacket ?? 1024)
        switch configuration.format {
        case .mpeg4Generic(let format):
            depacketizer = .mpeg4Generic(AACDepacketizer(configuration: .init(format: format, frameDuration: UInt32(clamping: frameDuration),
                                                                              reorderDepth: configuration.reorderDepth)))
        case .latm(let format):
            depacketizer = .latm(LATMDepacketizer(configuration: .init(format: format, frameDuration: UInt32(clamping: frameDuration),
                                                                       reorderDepth: configuration.reorderDepth)))
        case .g711(let format):
            depacketizer = .g711(G711Depacketizer(configuration: .init(format: format, reorderDepth: configuration.reorderDepth)))
        }
        var validation = RTPSourceValidation.Configuration(payloadType: configuration.format.payloadType)
        validation.checksH264PayloadShape = false
        sourceValidation = RTPSourceValidation(configuration: validation)
    }

    /// Takes an RTP datagram that arrived at `arrival` seconds; returns the frames it completes.
    public mutating func receiveRTP(_ datagram: UnsafeRawBufferPointer, arrival: Double) -> [SampleBuffer] {
        var frames: [AACDepacketizer.Frame] = []
        switch sourceValidation.admit(datagram: datagram, arrival: arrival) {
        case .drop:
            break
        case .accept(let packets):
            for packet in packets { frames += take(packet, arrival: arrival) }
        case .restart(let packets):
            frames = depacketizer.finish()
            reception = nil
            for packet in packets { frames += take(packet, arrival: arrival) }
        }
        if firstArrival == nil, !frames.isEmpty { firstArrival = arrival }
        return samples(frames) + expire(now: arrival)
    }

    /// Takes an RTP datagram held in an array.
    public mutating func receiveRTP(_ datagram: [UInt8], arrival: Double) -> [SampleBuffer] {
        datagram.withUnsafeBytes { receiveRTP($0, arrival: arrival) }
    }

    private mutating func take(_ packet: RTPPacket, arrival: Double) -> [AACDepacketizer.Frame] {
        if reception == nil { reception = RTPReceptionStatistics(ssrc: packet.ssrc, clockRate: configuration.format.clockRate) }
        reception?.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, arrival: arrival)
        return depacketizer.receive(packet)
    }

    /// Gives up on a missing packet awaited longer than the reorder delay; call it on a timer.
    public mutating func expire(now: Double) -> [SampleBuffer] {
        guard depacketizer.heldPacketCount > 0 else {
            gapSince = nil
            return []
        }
        guard let since = gapSince else {
            gapSince = now
            return []
        }
        guard now - since >= configuration.maximumReorderDelay else { return [] }
        let made = samples(depacketizer.skipMissing())
        gapSince = depacketizer.heldPacketCount > 0 ? now : nil
        return made
    }

    /// Takes an RTCP datagram; returns what it said.
    public mutating func receiveRTCP(_ datagram: UnsafeRawBufferPointer, arrival: Double) -> RTPReceivingSession.ControlEvents {
        var events = RTPReceivingSession.ControlEvents()
        guard let packets = try? RTCPPacket.parse(compound: datagram) else {
            events.invalid = true
            return events
        }
        controlPackets += 1
        for packet in packets {
            switch packet {
            case .goodbye(let goodbye):
                guard reception.map({ goodbye.sources.contains($0.ssrc) }) ?? true else { continue }
                events.goodbye = true
                senderSaidGoodbye = true
            case .senderReport(let report):
                guard reception.map({ $0.ssrc == report.ssrc }) ?? true else { continue }
                events.senderReport = true
                lastSenderReport = (UInt32(truncatingIfNeeded: report.ntpTimestamp >> 16), arrival)
                reportedPacketCount = report.packetCount
                senderClock = RTPSenderClock(ntpTimestamp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp, clockRate: configuration.format.clockRate)
            default: break
            }
        }
        return events
    }

    /// Whether the stream is over, `quiet` seconds after the last datagram (as
    /// ``RTPReceivingSession/isOver(quiet:)``).
    public func isOver(quiet: Double) -> Bool {
        guard senderSaidGoodbye else { return false }
        var complete = true
        if let reported = reportedPacketCount, let reception {
            complete = Int32(bitPattern: reported &- UInt32(truncatingIfNeeded: reception.packetsExpected)) <= 0
        }
        let settle = configuration.goodbyeSettle
        return quiet > (complete ? settle : max(settle, configuration.goodbyeLinger))
    }

    /// The receiver report due at `now`, or nil.
    public mutating func feedback(now: Double) -> [UInt8]? {
        guard reception != nil, lastReport.map({ now - $0 >= configuration.reportInterval }) ?? true else { return nil }
        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let (middle, arrival) = lastSenderReport {
            lsr = middle
            dlsr = UInt32(clamping: Int64(max(0, now - arrival) * 65_536))
        }
        lastReport = now
        receiverReports += 1
        guard let block = reception?.report(lastSenderReport: lsr, delaySinceLastSenderReport: dlsr) else { return nil }
        return RTCPPacket.serialize([.receiverReport(.init(ssrc: configuration.ssrc, reports: [block]))])
    }

    /// The end of the stream: the frames still held.
    public mutating func finish() -> [SampleBuffer] {
        samples(depacketizer.finish())
    }

    private mutating func samples(_ frames: [AACDepacketizer.Frame]) -> [SampleBuffer] {
        guard !frames.isEmpty else { return [] }
        // (Never nil here: a LATM frame comes out only once a configuration is in force.)
        guard let formatDescription else { return [] }
        let timescale = Int32(clamping: configuration.format.clockRate)
        let format = FormatDescription.audio(formatDescription)
        let frameDuration = Int64(formatDescription.framesPerPacket)
        var made: [SampleBuffer] = []
        made.reserveCapacity(frames.count)
        for frame in frames {
            if firstTimestamp == nil { firstTimestamp = frame.timestamp &- UInt32(truncatingIfNeeded: frame.extendedTimestamp) }
            let time = MediaTime(value: frame.extendedTimestamp, timescale: timescale)
            // (G.711: a run of samples, a byte each per channel.)
            let duration = frameDuration == 1 ? Int64(frame.bytes.count / max(1, formatDescription.channelCount)) : frameDuration
            made.append(SampleBuffer(data: BlockBuffer(frame.bytes), formatDescription: format,
                                     timing: SampleTiming(presentationTime: time, decodeTime: time, duration: MediaTime(value: duration, timescale: timescale)),
                                     attachments: SampleAttachments(isSync: true), trackID: configuration.trackID))
        }
        samplesMade += made.count
        return made
    }
}

/// A sender's clock as its RTCP sender report gives it (RFC 3550 §6.4.1): the wall-clock
/// (NTP) time at which its RTP clock read ``rtpTimestamp``. Two media of one sender are placed
/// side by side through it.
public struct RTPSenderClock: Sendable, Hashable {
    /// The NTP timestamp (32.32 fixed point seconds since 1900).
    public var ntpTimestamp: UInt64
    /// The RTP timestamp of the same instant.
    public var rtpTimestamp: UInt32
    /// The RTP clock's rate.
    public var clockRate: Int

    /// A clock of these readings.
    public init(ntpTimestamp: UInt64, rtpTimestamp: UInt32, clockRate: Int) {
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.clockRate = clockRate
    }

    /// The wall-clock time, in seconds since 1900, of RTP timestamp `timestamp` (within 2^31
    /// ticks of the report's, either side).
    public func seconds(at timestamp: UInt32) -> Double {
        let wall = Double(ntpTimestamp >> 32) + Double(ntpTimestamp & 0xFFFF_FFFF) / 4_294_967_296
        return wall + Double(Int32(bitPattern: timestamp &- rtpTimestamp)) / Double(max(1, clockRate))
    }
}
