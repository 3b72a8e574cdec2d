import H264Network
import MediaCore
import NIOCore
import Synchronization
import SystemIO

/// Where one client's packets go: RTP/AVP over UDP to its port pair (from the server's own
/// pair), or interleaved in its RTSP connection (RFC 2326 §10.12).
enum RTPSinkTransport: Sendable {
    case udp(rtp: any Channel, rtcp: any Channel, rtpAddress: SocketAddress, rtcpAddress: SocketAddress)
    case interleaved(connection: any Channel, rtpChannel: UInt8, rtcpChannel: UInt8)

    /// Whether the socket takes more without queueing beyond its high watermark.
    var isWritable: Bool {
        switch self {
        case .udp(let rtp, _, _, _): rtp.isWritable
        case .interleaved(let connection, _, _): connection.isWritable
        }
    }
}

/// An access unit packetized once for every client: packets whose sequence number, timestamp
/// and SSRC each client's copy rewrites.
struct PacketizedUnit: Sendable {
    var packets: [RTPPacket]
    var timestamp: UInt32
    var isSync: Bool
    /// Its decode time (seconds) and that time as an RTP timestamp: where the sender's RTP
    /// clock stands when it goes out (for sender reports).
    var decodeTime: Double? = nil
    var decodeTimestamp: UInt32 = 0
    /// Its presentation time (seconds), which `timestamp` stands for.
    var presentationTime: Double? = nil
}

/// The media time from which the streams of one session count their RTP timestamps: that of
/// the first unit sent to any of them. Each stream's first RTP timestamp (the `rtptime` its
/// `RTP-Info` announces) is then the one its clock has at that same instant, as RFC 2326
/// §12.33 asks, also for a medium that starts later (sound 3 s after the picture) or a client
/// that joins a live stream (the sound first, the picture at the next sync sample).
///
/// It holds the session's one mapping of media time onto the wall clock too, from which each
/// stream's sender report takes the RTP time of the same instant (two mappings, each dated by
/// its own stream's first units, would disagree by those units' delays, and a receiver lining
/// the media up by the reports would shift one), and the CNAME every report of the session
/// carries (RFC 3550 §6.5.1: what ties its streams together).
///
/// The mapping is fixed by the first unit sent and then stays: the streams' reports go out at
/// different moments (each with its own first unit, then every few seconds), and a mapping that
/// moved between them, as one converging on the least-delayed unit does, would shift one
/// medium against the other by the move at a receiver that lines them up by each stream's
/// first report (ffmpeg; seen under load: a relay's sound 42 ms off). Only units that depart
/// from it by more than ``WallClockMapping/resynchronizeAfter`` (a jump in the source's
/// timestamps, a pause, a stall), two in a row, set it again: one medium that keeps departing
/// from it while the other does not (two media a second apart) leaves it where it is. It need
/// not be exact, only one for every stream: the RTP timestamps themselves come from the samples.
final class SessionAnchor: Sendable {
    private let time = Locked<Double?>(nil)
    /// The wall-clock time (seconds since 1970) of media time zero, and the offset of the last
    /// unit when it departed from it (a reset waiting for a second unit to agree).
    private let origin = Locked<(offset: Double?, departed: Double?)>((nil, nil))
    /// The canonical name of the session's streams.
    let canonicalName: String

    init(canonicalName: String) {
        self.canonicalName = canonicalName
    }

    /// The anchor: `candidate` if none was set yet.
    func time(first candidate: Double) -> Double {
        time.withLock { time in
            if time == nil { time = candidate }
            return time!
        }
    }

    /// Notes a unit of media time `mediaTime` (seconds) going out at `date`.
    func sent(mediaTime: Double, at date: Double) {
        let offset = date - mediaTime
        guard offset.isFinite else { return }
        origin.withLock { origin in
            guard let known = origin.offset else {
                origin.offset = offset
                return
            }
            if abs(offset - known) <= WallClockMapping.resynchronizeAfter {
                origin.departed = nil
            } else if let departed = origin.departed, abs(offset - departed) <= WallClockMapping.resynchronizeAfter {
                origin = (offset, nil)
            } else {
                origin.departed = offset
            }
        }
    }

    /// The media time the session's clock puts at `date`; nil before any unit.
    func mediaTime(atDate date: Double) -> Double? {
        origin.withLock { $0.offset.map { date - $0 } }
    }
}

/// One playing client: its own SSRC, sequence numbers and timestamps (as its `SETUP` and
/// `RTP-Info` announced), a sender report every few seconds, and the back-pressure rule: an
/// access unit it cannot take now (its socket's queue is over the watermark) is dropped with
/// everything up to the next sync sample, counted, so a client that falls behind or stops
/// reading costs at most its queue and never holds up the others.
final class RTPSubscriber: Sendable {
    struct Counts: Sendable, Hashable {
        var packets = 0
        var octets = 0
        var accessUnits = 0
        /// Access units the client did not get because it fell behind: the one its socket
        /// could not take, and every one skipped after it up to the next sync sample.
        var droppedBehind = 0
        /// Times the client fell behind (each a skip to the next sync sample).
        var fellBehind = 0
        /// Access units skipped while joining (or playing again after a pause), before the
        /// first sync sample.
        var skippedToSync = 0
    }

    private struct State {
        var nextSequence: UInt16
        var timestampDelta: UInt32?
        var waitingForSync = true
        /// Waiting for a sync sample because the client fell behind (not because it joined).
        var behind = false
        var counts = Counts()
        var lastTimestamp: UInt32
        var nextReport: NIODeadline = .now()
        var finished = false
        /// The RTP clock against the wall clock, from when each unit went (its decode time),
        /// and the last unit's decode time with its RTP timestamp: what a sender report pairs.
        var clock = WallClockMapping()
        var lastDecode: (seconds: Double, timestamp: UInt32)?
    }

    let id: String
    let transport: RTPSinkTransport
    let ssrc: UInt32
    let payloadType: UInt8
    /// The medium it receives: the video, or the audio beside it.
    let medium: MediaType
    /// The RTP clock rate of its medium (sender reports count in it).
    let clockRate: Int
    /// The time the session's streams count from (nil: the first unit sent to this one).
    let anchor: SessionAnchor?
    private let initialTimestamp: UInt32
    private let state: Locked<State>
    private let lastActivity = Atomic<Int64>(NIODeadline.now().uptimeNanoseconds.asInt64)
    /// When the last RTP packets went to the socket (uptime nanoseconds; 0: none yet), written
    /// on the RTP channel's event loop.
    private let lastRTPWrite = Atomic<Int64>(0)
    static let reportInterval = TimeAmount.seconds(5)
    /// How long a UDP client's last RTP packets have on the wire before the BYE follows them.
    /// The two go to different sockets, and a receiver ends at the BYE, dropping what it has
    /// not read yet (ffmpeg; GStreamer's rtspsrc ends its RTP source at once): a receiver that
    /// lags, as on a loaded machine, needs the margin. As ``RTPSender/Options/goodbyeDelay``.
    static let goodbyeDelay = TimeAmount.milliseconds(500)

    init(id: String, transport: RTPSinkTransport, ssrc: UInt32, payloadType: UInt8, initialSequenceNumber: UInt16, initialTimestamp: UInt32,
         medium: MediaType = .video, clockRate: Int = Int(H264Packetizer.clockRate), anchor: SessionAnchor? = nil) {
        self.anchor = anchor
        self.id = id
        self.transport = transport
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.medium = medium
        self.clockRate = clockRate
        self.initialTimestamp = initialTimestamp
        state = Locked(State(nextSequence: initialSequenceNumber, lastTimestamp: initialTimestamp))
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// The client showed it is there (a request, an RTCP packet).
    func touch() { lastActivity.store(NIODeadline.now().uptimeNanoseconds.asInt64, ordering: .relaxed) }

    /// Nanoseconds since the client last showed it is there.
    var idleNanoseconds: Int64 { NIODeadline.now().uptimeNanoseconds.asInt64 - lastActivity.load(ordering: .relaxed) }

    /// Sends an access unit to the client, or drops it (see the type's rule).
    func deliver(_ unit: PacketizedUnit) {
        let writable = transport.isWritable
        let built: (rtp: [[UInt8]], report: [UInt8]?)? = state.withLock { state in
            guard !state.finished else { return nil }
            if state.waitingForSync, !unit.isSync {
                if state.behind { state.counts.droppedBehind += 1 } else { state.counts.skippedToSync += 1 }
                return nil
            }
            guard writable else {
                if !state.behind { state.counts.fellBehind += 1 }
                state.waitingForSync = true
                state.behind = true
                state.counts.droppedBehind += 1
                return nil
            }
            state.waitingForSync = false
            state.behind = false
            let delta: UInt32
            if let known = state.timestampDelta { delta = known } else {
                // The first unit: the timestamp this stream's clock has at the session's anchor
                // becomes the announced first timestamp.
                var base = unit.timestamp
                if let anchor, let time = unit.presentationTime {
                    let ticks = ((time - anchor.time(first: time)) * Double(clockRate)).rounded()
                    // (Times from a file are bounded; a crafted one's absurd ones are not converted.)
                    base = unit.timestamp &- (ticks.magnitude < 0x1p62 ? UInt32(truncatingIfNeeded: Int64(ticks)) : 0)
                }
                delta = initialTimestamp &- base
            }
            state.timestampDelta = delta
            let timestamp = unit.timestamp &+ delta
            var packets: [[UInt8]] = []
            packets.reserveCapacity(unit.packets.count)
            for var packet in unit.packets {
                packet.sequenceNumber = state.nextSequence
                packet.timestamp = timestamp
                packet.ssrc = ssrc
                state.nextSequence &+= 1
                state.counts.packets += 1
                state.counts.octets += packet.payload.count
                packets.append(packet.bytes)
            }
            state.counts.accessUnits += 1
            state.lastTimestamp = timestamp
            if let decodeTime = unit.decodeTime {
                if let anchor { anchor.sent(mediaTime: decodeTime, at: WallClock.seconds) } else {
                    state.clock.date(ofMediaTime: decodeTime, arrival: WallClock.seconds)
                }
                state.lastDecode = (decodeTime, unit.decodeTimestamp &+ delta)
            }
            var report: [UInt8]?
            let now = NIODeadline.now()
            if now >= state.nextReport {
                state.nextReport = now + Self.reportInterval
                report = RTCPPacket.serialize([.senderReport(senderReport(state))] + sourceDescription)
            }
            return (packets, report)
        }
        guard let built else { return }
        write(built.rtp, control: built.report)
    }

    /// Ends the stream for this client: a last sender report and a BYE. Nothing is sent after.
    ///
    /// Over UDP the BYE goes out on the RTP channel's event loop, behind the RTP packets still
    /// queued there, and at least ``goodbyeDelay`` after the last of them was written: when
    /// that loop is behind (busy with other channels), a BYE sent from elsewhere would overtake
    /// the end of the stream, and a receiver ending at the BYE would lose it (seen in CI:
    /// GStreamer's rtspsrc stopped 32 frames short, its last picture half decoded).
    func goodbye() {
        let bye: [UInt8]? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            return RTCPPacket.serialize([.senderReport(senderReport(state))] + sourceDescription + [.goodbye(.init(sources: [ssrc]))])
        }
        guard let bye else { return }
        switch transport {
        case .udp(let rtp, _, _, _):
            rtp.eventLoop.execute {
                let last = self.lastRTPWrite.load(ordering: .relaxed)
                let since = last == 0 ? Self.goodbyeDelay : .nanoseconds(NIODeadline.now().uptimeNanoseconds.asInt64 - last)
                if since >= Self.goodbyeDelay {
                    self.write([], control: bye)
                } else {
                    rtp.eventLoop.scheduleTask(in: Self.goodbyeDelay - since) { self.write([], control: bye) }
                }
            }
        case .interleaved:
            write([], control: bye)  // the same connection, behind the packets
        }
    }

    /// Waits for the next sync sample again (a paused client playing again).
    func rejoin() {
        state.withLock {
            $0.waitingForSync = true
            $0.behind = false
        }
    }

    /// Stops sending without a BYE (the client tore down or went away).
    func stop() {
        state.withLock { $0.finished = true }
    }

    /// A sender report for now: the wall clock and the RTP clock at that same instant (RFC 3550
    /// §6.4.1), from the decode times of the units sent (see ``RTPSender``'s report); before
    /// any, the last timestamp.
    private func senderReport(_ state: State) -> RTCPPacket.SenderReport {
        let now = WallClock.seconds
        var rtp = state.lastTimestamp
        if let media = anchor?.mediaTime(atDate: now) ?? state.clock.mediaTime(atDate: now), let last = state.lastDecode {
            rtp = last.timestamp &+ UInt32(truncatingIfNeeded: Int64(((media - last.seconds) * Double(clockRate)).rounded()))
        }
        return RTCPPacket.SenderReport(ssrc: ssrc, ntpTimestamp: NTPTime.time(secondsSince1970: now), rtpTimestamp: rtp,
                                       packetCount: UInt32(truncatingIfNeeded: state.counts.packets), octetCount: UInt32(truncatingIfNeeded: state.counts.octets))
    }

    private func write(_ packets: [[UInt8]], control: [UInt8]?) {
        switch transport {
        case .udp(let rtp, let rtcp, let rtpAddress, let rtcpAddress):
            if !packets.isEmpty {
                rtp.eventLoop.execute {
                    for packet in packets {
                        var buffer = rtp.allocator.buffer(capacity: packet.count)
                        buffer.writeBytes(packet)
                        rtp.write(AddressedEnvelope(remoteAddress: rtpAddress, data: buffer), promise: nil)
                    }
                    rtp.flush()
                    self.lastRTPWrite.store(NIODeadline.now().uptimeNanoseconds.asInt64, ordering: .relaxed)
                }
            }
            if let control {
                var buffer = rtcp.allocator.buffer(capacity: control.count)
                buffer.writeBytes(control)
                rtcp.writeAndFlush(AddressedEnvelope(remoteAddress: rtcpAddress, data: buffer), promise: nil)
            }
        case .interleaved(let connection, let rtpChannel, let rtcpChannel):
            var buffer = connection.allocator.buffer(capacity: packets.reduce(0) { $0 + $1.count + 4 } + (control.map { $0.count + 4 } ?? 0))
            for packet in packets { Self.frame(packet, channel: rtpChannel, into: &buffer) }
            if let control { Self.frame(control, channel: rtcpChannel, into: &buffer) }
            connection.writeAndFlush(buffer, promise: nil)
        }
    }

    /// The SDES with the session's CNAME that follows each report (none without a session).
    private var sourceDescription: [RTCPPacket] {
        anchor.map { [RTCPPacket.sourceDescription(ssrc: ssrc, canonicalName: $0.canonicalName)] } ?? []
    }

    /// `$`, the channel, the 16-bit length, the packet (RFC 2326 §10.12).
    static func frame(_ packet: [UInt8], channel: UInt8, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "$"))
        buffer.writeInteger(channel)
        buffer.writeInteger(UInt16(packet.count))
        buffer.writeBytes(packet)
    }
}

/// One stream going to any number of clients: each access unit is packetized once, then copied
/// to every subscriber with its own header fields. Subscribers join and leave at any time (a
/// new one starts at the next sync sample); a keyframe request (a client's PLI, a new client)
/// goes to whoever makes the stream. With an audio track, its samples are packetized once
/// too (AAC as RFC 3640, a frame a packet; G.711 as PCMU/PCMA, 20 ms a packet) and go to the
/// subscribers of the audio medium.
final class RTPFanOut: Sendable {
    /// The sound track sent as the audio medium, and how.
    struct Audio: Sendable {
        var track: TrackID
        var packetizer: AudioPacketizer

        /// The medium for `sound` (AAC or G.711, else an error naming it), with
        /// `configuration`'s packet size and payload type.
        init(sound: TrackDescription, configuration: AACPacketizer.Configuration) throws(StreamingError) {
            guard let format = sound.format.audio else {
                throw .invalidOption("track \(sound.id) (\(sound.format.codecName)): the sound medium carries AAC or G.711")
            }
            track = sound.id
            packetizer = try StreamingError.network { () throws(NetworkError) in try AudioPacketizer(format: format, configuration: configuration) }
        }

        /// The payload format the session description announces (`a=control:trackID=1`).
        var payloadFormat: AudioPayloadFormat { packetizer.payloadFormat(control: "trackID=1") }
    }

    private let packetizer: Locked<H264Packetizer>
    private let audio: (track: TrackID, packetizer: Locked<AudioPacketizer>)?
    /// The subscribers, and whether the stream has ended (one lock: a client that joins as the
    /// stream ends is either in the set `finish()` says goodbye to, or told goodbye itself).
    private let subscribers = Locked<(all: [String: RTPSubscriber], finished: Bool)>(([:], false))
    private let keyframeRequest: (@Sendable () -> Void)?

    init(configuration: H264Packetizer.Configuration, audio: Audio? = nil, onKeyframeRequest: (@Sendable () -> Void)? = nil) throws(StreamingError) {
        packetizer = Locked(try StreamingError.network { () throws(NetworkError) in try H264Packetizer(configuration: configuration) })
        self.audio = audio.map { ($0.track, Locked($0.packetizer)) }
        keyframeRequest = onKeyframeRequest
    }

    var subscriberCount: Int { subscribers.withLock { $0.all.count } }

    func add(_ subscriber: RTPSubscriber) {
        let ended = subscribers.withLock { state -> Bool in
            if !state.finished { state.all[subscriber.id] = subscriber }
            return state.finished
        }
        if ended { subscriber.goodbye() } else if subscriber.medium == .video { requestKeyframe() }
    }

    /// Removes a subscriber for good.
    func remove(_ id: String) {
        subscribers.withLock { $0.all.removeValue(forKey: id) }?.stop()
    }

    /// Removes a subscriber that may come back (a paused client).
    func detach(_ id: String) {
        subscribers.withLock { _ = $0.all.removeValue(forKey: id) }
    }

    func requestKeyframe() { keyframeRequest?() }

    /// Whether every subscriber's socket takes more now (none is over its watermark).
    var hasRoom: Bool { subscribers.withLock { $0.all.values.allSatisfy(\.transport.isWritable) } }

    /// Packetizes `sample` and hands it to every subscriber of its medium: the video, or the
    /// audio track's frames; a sample of any other track is left out.
    func deliver(_ sample: SampleBuffer) throws(StreamingError) {
        var units: [PacketizedUnit] = []
        let medium: MediaType
        if sample.videoFormatDescription != nil {
            let (packets, timestamp, decodeTimestamp) = try packetizer.withLock { (packetizer) throws(StreamingError) in
                (try StreamingError.network { () throws(NetworkError) in try packetizer.packets(for: sample) }, packetizer.timestamp(for: sample.presentationTime),
                 packetizer.timestamp(for: sample.decodeTime))
            }
            units = [PacketizedUnit(packets: packets, timestamp: timestamp, isSync: sample.isSync,
                                    decodeTime: sample.decodeTime.isNumeric ? sample.decodeTime.seconds : nil, decodeTimestamp: decodeTimestamp,
                                    presentationTime: sample.presentationTime.isNumeric ? sample.presentationTime.seconds : nil)]
            medium = .video
        } else if let audio, sample.trackID == audio.track {
            let (packets, timestamp, clockRate) = try audio.packetizer.withLock { (packetizer) throws(StreamingError) in
                (try StreamingError.network { () throws(NetworkError) in try packetizer.packets(for: sample) }, packetizer.timestamp(for: sample.presentationTime),
                 Double(packetizer.clockRate))
            }
            // A unit per timestamp: an AAC frame's fragments share one, a run of G.711 samples is
            // cut into packets that each have their own (a subscriber times a unit's packets alike).
            var start = packets.startIndex
            while start < packets.endIndex {
                let first = packets[start].timestamp
                let end = packets[start...].firstIndex { $0.timestamp != first } ?? packets.endIndex
                let after = Double(Int32(bitPattern: first &- timestamp)) / clockRate
                units.append(PacketizedUnit(packets: Array(packets[start..<end]), timestamp: first, isSync: true,
                                            decodeTime: sample.decodeTime.isNumeric ? sample.decodeTime.seconds + after : nil, decodeTimestamp: first,
                                            presentationTime: sample.presentationTime.isNumeric ? sample.presentationTime.seconds + after : nil))
                start = end
            }
            guard !units.isEmpty else { return }
            medium = .audio
        } else {
            return
        }
        for subscriber in subscribers.withLock({ Array($0.all.values) }) where subscriber.medium == medium {
            for unit in units { subscriber.deliver(unit) }
        }
    }

    /// The end of the stream: a BYE to every subscriber, and to any that joins later.
    func finish() {
        let all = subscribers.withLock { state -> [RTPSubscriber] in
            state.finished = true
            return Array(state.all.values)
        }
        for subscriber in all { subscriber.goodbye() }
    }
}

extension UInt64 {
    var asInt64: Int64 { Int64(truncatingIfNeeded: self) }
}
