public import MediaCore

/// The receiving half of an RTP session for H.264 as a pure state machine: RTP and RTCP
/// datagrams in; whole sample buffers, and the RTCP feedback to send back, out. No sockets and
/// no clock: the caller passes arrival times and decides where the feedback goes (the sender's
/// RTCP address, an interleaved channel).
///
/// RTP goes first through ``RTPSourceValidation`` (RFC 3550 A.1: which source is the stream;
/// packets of other sources, malformed payloads and wild sequence jumps are counted and
/// dropped before they change any state), then the ``H264Depacketizer`` (jitter buffer, loss,
/// duplicates, resuming at the next IDR) and the ``RTPSampleBufferBuilder``. The feedback is a compound RTCP packet (RFC
/// 3550 §6.1): a receiver report with a reception report block for the sender (loss, extended
/// highest sequence number, jitter, the last sender report and the delay since it), plus a
/// picture loss indication (RFC 4585 §6.3.1) while access units are being skipped for want of
/// an IDR picture, at most one per ``Configuration/pictureLossInterval``.
public struct RTPReceivingSession: Sendable {
    /// How the session receives.
    public struct Configuration: Sendable, Hashable {
        /// The depacketizer's jitter buffer, payload type filter and size limit.
        public var depacketizer: H264Depacketizer.Configuration
        /// The receiver's own SSRC (the sender of the reports).
        public var ssrc: UInt32
        /// Seconds between receiver reports.
        public var reportInterval: Double
        /// Seconds between two picture loss indications for the same loss.
        public var pictureLossInterval: Double
        /// Whether to ask for an IDR picture when pictures are lost.
        public var sendsPictureLossIndications: Bool
        /// Seconds a missing packet is waited for (packets behind it held) before it counts as
        /// lost: the jitter buffer's latency (its depth in packets is the depacketizer's).
        public var maximumReorderDelay: Double
        /// How access units become sample buffers (``RTPSampleBufferBuilder/Options/isLowLatency``
        /// hands each on at once when the stream reorders no frame).
        public var sampleBuilder: RTPSampleBufferBuilder.Options = .init()
        /// Which packets are the stream's (RFC 3550 A.1); its payload type is the
        /// depacketizer's when it names none.
        public var sourceValidation: RTPSourceValidation.Configuration = .init()
        /// Seconds of quiet after a BYE, once every packet the sender reported has come, before
        /// the stream is over (late packets still in flight).
        public var goodbyeSettle: Double = 0.1
        /// Seconds of quiet after a BYE before the stream is over when packets the sender
        /// reported have not come (they may wait behind the BYE in the other socket; a late
        /// joiner or a lost tail never gets them).
        public var goodbyeLinger: Double = 1

        /// A configuration: a report a second, a PLI at most every 200 ms, 20 ms for a late packet.
        public init(depacketizer: H264Depacketizer.Configuration = .init(), ssrc: UInt32 = .random(in: 1...UInt32.max), reportInterval: Double = 1,
                    pictureLossInterval: Double = 0.2, sendsPictureLossIndications: Bool = true, maximumReorderDelay: Double = 0.02) {
            self.depacketizer = depacketizer
            self.ssrc = ssrc
            self.reportInterval = reportInterval
            self.pictureLossInterval = pictureLossInterval
            self.sendsPictureLossIndications = sendsPictureLossIndications
            self.maximumReorderDelay = maximumReorderDelay
        }
    }

    /// What an RTCP datagram said.
    public struct ControlEvents: Sendable, Hashable {
        /// The sender said goodbye (RTCP BYE).
        public var goodbye = false
        /// A sender report arrived.
        public var senderReport = false
        /// The datagram was not RTCP.
        public var invalid = false
    }

    /// How the session receives.
    public let configuration: Configuration
    /// The depacketizer (its statistics are the packet and access unit counts).
    public private(set) var depacketizer: H264Depacketizer
    /// The sample buffer builder (the format description, access units dropped for want of
    /// parameter sets).
    public private(set) var builder: RTPSampleBufferBuilder
    /// Loss and jitter of the sender's stream (RFC 3550 A.3, A.8), from its first packet
    /// taken as the stream's (after a restart, from the restart).
    public private(set) var reception: RTPReceptionStatistics?
    /// Which packets were taken as the stream's, and what was dropped before: other sources,
    /// malformed payloads, wild sequence jumps.
    public private(set) var sourceValidation: RTPSourceValidation
    /// Access units refused because their parameter sets in band do not parse.
    public private(set) var refusedForParameterSets = 0
    /// RTCP packets received (compound packets count once).
    public private(set) var controlPackets = 0
    /// Picture loss indications sent.
    public private(set) var pictureLossIndications = 0
    /// Receiver reports sent.
    public private(set) var receiverReports = 0
    /// Whether the stream's sender said goodbye (an RTCP BYE naming its source, or any BYE
    /// before a source is known).
    public private(set) var senderSaidGoodbye = false
    /// The sender's packet count in its last sender report (RFC 3550 §6.4.1).
    public private(set) var reportedPacketCount: UInt32?
    /// The sender's clock from its last report (nil before one came): what places this medium
    /// beside another of the same sender (lip sync).
    public private(set) var senderClock: RTPSenderClock?
    /// The first access unit's RTP timestamp: sample times count from it.
    public private(set) var firstTimestamp: UInt32?
    /// When the first access unit's last packet arrived (the caller's clock).
    public private(set) var firstArrival: Double?
    private var lastSenderReport: (middle: UInt32, arrival: Double)?
    private var lastReport: Double?
    private var lastPictureLoss: Double?
    private var gapSince: Double?

    /// A session; `formatDescription` comes from the session description when there is one.
    public init(configuration: Configuration = Configuration(), formatDescription: VideoFormatDescription? = nil) {
        self.configuration = configuration
        depacketizer = H264Depacketizer(configuration: configuration.depacketizer)
        var validation = configuration.sourceValidation
        if validation.payloadType == nil { validation.payloadType = configuration.depacketizer.payloadType }
        sourceValidation = RTPSourceValidation(configuration: validation)
        builder = RTPSampleBufferBuilder(formatDescription: formatDescription, options: configuration.sampleBuilder)
    }

    /// Takes an RTP datagram that arrived at `arrival` seconds (any monotonic origin); returns
    /// the sample buffers it completes, in decode order. A datagram that is not the stream's
    /// (not RTP, another source, a malformed payload) is counted in ``sourceValidation`` and
    /// changes nothing else.
    public mutating func receiveRTP(_ datagram: UnsafeRawBufferPointer, arrival: Double) -> [SampleBuffer] {
        var units: [H264Depacketizer.AccessUnit] = []
        switch sourceValidation.admit(datagram: datagram, arrival: arrival) {
        case .drop:
            break
        case .accept(let packets):
            for packet in packets { units += take(packet, arrival: arrival) }
        case .restart(let packets):
            // A new numbering or a new source: what the old one left is ended, and the
            // reception counts start again for the new one.
            units = depacketizer.restart()
            reception = nil
            for packet in packets { units += take(packet, arrival: arrival) }
        }
        if firstArrival == nil, !units.isEmpty { firstArrival = arrival }
        return build(units) + expire(now: arrival)
    }

    /// Takes an RTP datagram held in an array (see ``receiveRTP(_:arrival:)-(UnsafeRawBufferPointer,_)``).
    public mutating func receiveRTP(_ datagram: [UInt8], arrival: Double) -> [SampleBuffer] {
        datagram.withUnsafeBytes { receiveRTP($0, arrival: arrival) }
    }

    private mutating func take(_ packet: RTPPacket, arrival: Double) -> [H264Depacketizer.AccessUnit] {
        if reception == nil { reception = RTPReceptionStatistics(ssrc: packet.ssrc) }
        reception?.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, arrival: arrival)
        return depacketizer.receive(packet)
    }

    /// Gives up on a missing packet awaited longer than ``Configuration/maximumReorderDelay``
    /// at `now`; returns the samples that completes. Call it on a timer too, so that a loss
    /// is noticed when no packet follows.
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
        let samples = build(depacketizer.skipMissing())
        gapSince = depacketizer.heldPacketCount > 0 ? now : nil
        return samples
    }

    /// Takes an RTCP datagram that arrived at `arrival` seconds; returns what it said.
    public mutating func receiveRTCP(_ datagram: UnsafeRawBufferPointer, arrival: Double) -> ControlEvents {
        var events = ControlEvents()
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
                senderClock = RTPSenderClock(ntpTimestamp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp, clockRate: 90_000)
            default: break
            }
        }
        return events
    }

    /// Whether every packet the sender's last report counted has arrived or been counted lost
    /// (true when no report came or no packet did).
    public var hasEveryReportedPacket: Bool {
        guard let reported = reportedPacketCount, let reception else { return true }
        // The report's count is 32 bits and wraps: the difference, read signed.
        return Int32(bitPattern: reported &- UInt32(truncatingIfNeeded: reception.packetsExpected)) <= 0
    }

    /// Whether the stream is over, `quiet` seconds after the last datagram arrived: the sender
    /// said goodbye, and every packet its last report counted came (or was counted lost) with
    /// ``Configuration/goodbyeSettle`` seconds of quiet since; or, when some did not,
    /// ``Configuration/goodbyeLinger`` seconds of quiet. RTP and RTCP come on two sockets, and
    /// the last packets may still wait in the RTP one when the BYE is read; a receiver that
    /// joined late, or whose tail was lost on the way, never accounts for them all and ends
    /// after the linger.
    public func isOver(quiet: Double) -> Bool {
        guard senderSaidGoodbye else { return false }
        let settle = configuration.goodbyeSettle
        return quiet > (hasEveryReportedPacket ? settle : max(settle, configuration.goodbyeLinger))
    }

    /// The RTCP to send at `now` (seconds, the clock of the arrivals), or nil when nothing is
    /// due: a receiver report every ``Configuration/reportInterval``, with a PLI while
    /// pictures are being skipped after a loss (sent at once, not waiting for the interval).
    public mutating func feedback(now: Double) -> [UInt8]? {
        guard let sender = reception?.ssrc else { return nil }
        let wantsPicture = configuration.sendsPictureLossIndications && depacketizer.isWaitingForSyncSample
            && (depacketizer.statistics.accessUnitsDropped + depacketizer.statistics.accessUnitsSkipped > 0)
            && lastPictureLoss.map { now - $0 >= configuration.pictureLossInterval } ?? true
        let reportDue = lastReport.map { now - $0 >= configuration.reportInterval } ?? true
        guard wantsPicture || reportDue else { return nil }
        var packets: [RTCPPacket] = [.receiverReport(.init(ssrc: configuration.ssrc, reports: receptionReport(now: now).map { [$0] } ?? []))]
        lastReport = now
        receiverReports += 1
        if wantsPicture {
            packets.append(.pictureLossIndication(senderSSRC: configuration.ssrc, mediaSSRC: sender))
            lastPictureLoss = now
            pictureLossIndications += 1
        }
        return RTCPPacket.serialize(packets)
    }

    /// The end of the stream: the samples still held, in order.
    public mutating func finish() -> [SampleBuffer] {
        build(depacketizer.finish()) + builder.finish()
    }

    private mutating func receptionReport(now: Double) -> RTCPPacket.ReceptionReport? {
        guard reception != nil else { return nil }
        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let (middle, arrival) = lastSenderReport {
            lsr = middle
            dlsr = UInt32(clamping: Int64(max(0, now - arrival) * 65_536))  // 1/65536 s units
        }
        return reception!.report(lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    private mutating func build(_ units: [H264Depacketizer.AccessUnit]) -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        if firstTimestamp == nil, let unit = units.first { firstTimestamp = unit.timestamp &- UInt32(truncatingIfNeeded: unit.extendedTimestamp) }
        for unit in units {
            do { samples += try builder.append(unit) } catch { refusedForParameterSets += 1 }
        }
        return samples
    }
}
