public import H264Network
public import MediaCore
import SampleFlow
import NIOCore
import NIOPosix
import SystemIO

/// Sends H.264 sample buffers as RTP over UDP (RFC 6184 on RFC 3550): seed 003's case study 4,
/// "compressing a sequence of images into an H.264 stream for the network", from the sample
/// buffers on; and AAC beside it (RFC 3640, AAC-hbr), as ffmpeg sends a file with sound.
///
/// Each access unit goes out in decode order as the `H264Packetizer` makes its packets, paced
/// by a `Timebase` so that a sample leaves when the timebase reaches its decode time (the
/// `ffmpeg -re` behaviour; ``Options/paced`` off sends as fast as the socket takes them). RTCP
/// goes to the next port: a sender report (NTP time against RTP time, packet and octet counts)
/// at the start and every ``Options/senderReportInterval``, and a sender report with a BYE at
/// the end, which is how ffmpeg's and GStreamer's receivers learn that the stream is over.
///
/// The samples of the first AAC or G.711 track among them (or of ``Options/audioTrack``) are a
/// second medium (AAC as RFC 3640 `mpeg4-generic`, G.711 as PCMU or PCMA), sent to the port ``Options/audioPortOffset`` above the video's (ffmpeg's layout: video on PORT, audio on
/// PORT+2, RTCP on the odd port after each), with its own SSRC and sender reports. Both
/// media's reports give the RTP clock each stands at for one same wall-clock instant, so a
/// receiver lines the sound up with the picture (RFC 3550 §6.4.1); `RTPDestination`'s
/// session description announces both. Samples of other tracks are left out and counted
/// (``Summary/samplesLeftOut``).
///
/// The socket work runs on SwiftNIO's event loops; the caller's task only packetizes and waits.
public struct RTPSender: Sendable {
    /// How the stream is sent.
    public struct Options: Sendable, Hashable {
        /// The packetizer's configuration: packetization mode, packet size (the MTU less the IP
        /// and UDP headers), payload type, SSRC and the random starting values.
        public var packetizer: H264Packetizer.Configuration
        /// The sound packetizer's configuration (payload type 97; its own SSRC; G.711 at 8 kHz
        /// mono takes its static payload type, 0 or 8, and 20 ms a packet).
        public var audioPacketizer: AACPacketizer.Configuration
        /// The audio medium's port above the destination's: 2 beside video (ffmpeg's layout),
        /// 0 when audio is all that is sent.
        public var audioPortOffset: Int
        /// The sound track sent as the audio medium (the one the session description announces;
        /// AAC or G.711, else an error); nil: the track of the first AAC or G.711 sample.
        public var audioTrack: TrackID?
        /// Wait for each sample's decode time (true), or send as fast as the socket allows.
        public var paced: Bool
        /// The pace, when paced: 1 is real time, 4 four times faster (ffmpeg's `-readrate`).
        public var rate: Double
        /// How often an RTCP sender report goes out (RFC 3550 §6.2 suggests 5 seconds).
        public var senderReportInterval: Duration
        /// Stop after this many video samples (pictures; nil: all of them).
        public var sampleLimit: Int?
        /// How long the last packets have, after the last frame's end, before the RTCP BYE goes
        /// out. ffmpeg's receiver ends at the BYE and drops RTP packets it has not read yet (the
        /// two arrive on different sockets): a receiver that lags, as on a loaded machine, needs
        /// this margin to read the end of the stream.
        public var goodbyeDelay: Duration

        /// Options; the defaults are mode 1, 1,200-byte packets, payload type 96, paced.
        public init(packetizer: H264Packetizer.Configuration = .init(), audioPacketizer: AACPacketizer.Configuration = .init(), audioPortOffset: Int = 2,
                    paced: Bool = true, rate: Double = 1, senderReportInterval: Duration = .seconds(5), sampleLimit: Int? = nil,
                    goodbyeDelay: Duration = .milliseconds(500)) {
            self.packetizer = packetizer
            self.audioPacketizer = audioPacketizer
            self.audioPortOffset = audioPortOffset
            audioTrack = nil
            self.paced = paced
            self.rate = rate
            self.senderReportInterval = senderReportInterval
            self.sampleLimit = sampleLimit
            self.goodbyeDelay = goodbyeDelay
        }
    }

    /// What was sent.
    public struct Summary: Sendable, Hashable, Codable {
        /// Video samples (access units) sent.
        public var samples: Int
        /// RTP packets of the video sent.
        public var packets: Int
        /// RTP payload bytes of the video sent (RTCP's sender octet count).
        public var octets: Int
        /// RTCP packets sent (compound packets count once).
        public var controlPackets: Int
        /// The synchronization source of the video.
        public var ssrc: UInt32
        /// What the receivers said over RTCP.
        public var receiverFeedback = ReceiverFeedback.Counts()
        /// The audio medium, when the samples had AAC.
        public var audio: Medium?
        /// Samples of tracks neither medium carries (a second audio track, another codec).
        public var samplesLeftOut = 0

        /// What went out of one medium.
        public struct Medium: Sendable, Hashable, Codable {
            /// The track the samples came from.
            public var trackID: UInt32
            /// Samples sent.
            public var samples: Int
            /// RTP packets sent.
            public var packets: Int
            /// RTP payload bytes sent.
            public var octets: Int
            /// The medium's synchronization source.
            public var ssrc: UInt32
        }
    }

    /// What receivers send back: reception reports and picture loss indications.
    public final class ReceiverFeedback: Sendable {
        /// The counts so far.
        public struct Counts: Sendable, Hashable, Codable {
            /// RTCP packets received from receivers (compound packets count once).
            public var controlPackets = 0
            /// Reception reports about this stream.
            public var receptionReports = 0
            /// Picture loss indications received.
            public var pictureLossIndications = 0
            /// The last reception report's fraction lost (0-255 of 256) and cumulative loss.
            public var lastFractionLost: UInt8?
            /// The last reception report's cumulative number of packets lost.
            public var lastCumulativeLost: Int32?
            /// The last reception report's interarrival jitter, in seconds.
            public var lastJitter: Double?
        }

        let state = Locked(Counts())

        /// The video stream's source: reports and PLIs about others (the audio medium's,
        /// which come back to the same socket) are not counted here.
        let ssrc: UInt32

        init(ssrc: UInt32) { self.ssrc = ssrc }

        /// Counts a compound packet; true when it asks for a picture (PLI).
        func take(_ packets: [RTCPPacket]) -> Bool {
            state.withLock { counts in
                counts.controlPackets += 1
                var pictureLoss = false
                for packet in packets {
                    switch packet {
                    case .receiverReport(let report):
                        for block in report.reports where block.ssrc == ssrc {
                            counts.receptionReports += 1
                            counts.lastFractionLost = block.fractionLost
                            counts.lastCumulativeLost = block.cumulativeLost
                            counts.lastJitter = Double(block.jitter) / 90_000
                        }
                    case .pictureLossIndication(_, let media) where media == ssrc:
                        counts.pictureLossIndications += 1
                        pictureLoss = true
                    default:
                        break
                    }
                }
                return pictureLoss
            }
        }
    }

    /// Where the packets go: RTP to `RTPDestination/port`, RTCP to the next port.
    public let destination: RTPDestination
    /// How the stream is sent.
    public let options: Options

    /// A sender to `destination` (which must name a host: `rtp://@:PORT` is for receiving).
    public init(destination: RTPDestination, options: Options = Options()) throws(StreamingError) {
        guard !destination.host.isEmpty else { throw .invalidOption("\(destination): a sender needs a host to send to (rtp://HOST:PORT)") }
        _ = try StreamingError.network { () throws(NetworkError) in try H264Packetizer(configuration: options.packetizer) }  // validates the configuration
        _ = try StreamingError.network { () throws(NetworkError) in try AACPacketizer(configuration: options.audioPacketizer, clockRate: 48_000) }
        guard options.audioPortOffset >= 0, options.audioPortOffset % 2 == 0, destination.port + options.audioPortOffset <= 65534 else {
            throw .invalidOption("an audio port offset of \(options.audioPortOffset) from \(destination.port): even, 0 or more, the port (and RTCP's after it) at most 65535")
        }
        guard options.rate > 0, options.rate.isFinite else { throw .invalidOption("a pace of \(options.rate) times real time: more than 0") }
        guard options.goodbyeDelay >= .zero else { throw .invalidOption("a goodbye delay of \(options.goodbyeDelay): 0 or more") }
        self.destination = destination
        self.options = options
    }

    /// Sends every sample of `samples`, in order, then the closing RTCP BYE; returns what was sent.
    /// Cancelling the task stops the stream (the BYE still goes out).
    ///
    /// RTCP from the receivers is read meanwhile: their reception reports are counted and the
    /// last one kept, and a picture loss indication (RFC 4585) calls `onPictureLoss`, where a
    /// live encoder makes its next picture an IDR (`LivePictureSamples/requestKeyframe()`).
    public func send<Samples: AsyncSequence>(_ samples: Samples, onPictureLoss: (@Sendable () -> Void)? = nil) async throws(StreamingError) -> Summary
    where Samples.Element == SampleBuffer {
        let rtpAddress: SocketAddress, rtcpAddress: SocketAddress, audioAddresses: (rtp: SocketAddress, rtcp: SocketAddress)
        do {
            rtpAddress = try SocketAddress.makeAddressResolvingHost(destination.host, port: destination.port)
            rtcpAddress = try SocketAddress.makeAddressResolvingHost(destination.host, port: destination.port + 1)
            audioAddresses = (try SocketAddress.makeAddressResolvingHost(destination.host, port: destination.port + options.audioPortOffset),
                              try SocketAddress.makeAddressResolvingHost(destination.host, port: destination.port + options.audioPortOffset + 1))
        } catch {
            throw .socket("\(destination): the host does not resolve", underlying: error)
        }
        let wildcard = rtpAddress.protocol == .inet6 ? "::" : "0.0.0.0"
        let rtp = try await Self.datagramChannel(host: wildcard)
        // RTCP on the RTP socket's event loop: their writes go out in the order they were made,
        // so the BYE never overtakes the last packets however far behind that loop runs.
        let rtcp: NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
        do { rtcp = try await Self.datagramChannel(host: wildcard, on: rtp.channel.eventLoop) } catch {
            try? await rtp.channel.close()
            throw error
        }
        var session = try SendingSession(options: options, audioAddresses: audioAddresses)
        let feedback = ReceiverFeedback(ssrc: options.packetizer.ssrc)
        do {
            try await rtcp.executeThenClose { rtcpIn, rtcpOut in
                try await rtp.executeThenClose { _, rtpOut in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await envelope in rtcpIn {
                                let packets = envelope.data.withUnsafeReadableBytes { try? RTCPPacket.parse(compound: $0) } ?? []
                                if feedback.take(packets) { onPictureLoss?() }
                            }
                        }
                        try await session.run(samples, rtp: rtpOut, to: rtpAddress, rtcp: rtcpOut, to: rtcpAddress)
                        group.cancelAll()
                    }
                }
            }
        } catch let error as StreamingError {
            throw error
        } catch let error as NetworkError {
            throw .network(error)
        } catch let error as SampleFlowError {
            throw .source(error)
        } catch {
            throw .socket("sending to \(destination)", underlying: error)
        }
        var summary = session.summary
        feedback.state.withLock { summary.receiverFeedback = $0 }
        return summary
    }

    /// A UDP channel bound to an ephemeral port of `host`, on one of `group`'s event loops.
    static func datagramChannel(host: String, port: Int = 0, receiveBufferSize: Int? = nil,
                                on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws(StreamingError)
        -> NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
    {
        do {
            // Every datagram whole (NIO's default read buffer for UDP is 2,048 bytes); a sender
            // reads only RTCP.
            // No SO_REUSEADDR on an ephemeral port: with it, Linux may hand out a port that
            // another such socket (a receiver's, in the same process) holds, and steal its packets.
            var bootstrap = DatagramBootstrap(group: group)
                .readingWholeDatagrams(1)
            if let receiveBufferSize { bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: .init(receiveBufferSize)) }
            return try await bootstrap.bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(wrappingChannelSynchronously: channel)
                }
            }
        } catch {
            throw .socket("binding UDP \(host.contains(":") ? "[\(host)]" : host):\(port)", underlying: error)
        }
    }
}

/// The state of one send: the packetizers, the pacing timebase, the counts.
private struct SendingSession {
    typealias Writer = NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>
    let options: RTPSender.Options
    var packetizer: H264Packetizer
    /// The audio medium, from the first AAC sample on.
    var audio: AudioMedium?
    let audioAddresses: (rtp: SocketAddress, rtcp: SocketAddress)
    /// The video track (the first video sample's).
    var videoTrack: TrackID?
    var samples = 0
    var samplesLeftOut = 0
    var controlPackets = 0
    var lastRTPTimestamp: UInt32
    let timebase = Timebase()
    /// Whether the timebase was started (at the first sample's decode time, whatever its track).
    var started = false
    var nextReport: ContinuousClock.Instant?
    var lastSampleEnd: MediaTime?
    /// The RTP clock against the wall clock, from when each sample went (its decode time):
    /// what a sender report pairs when the samples are not paced (paced, the timebase is it).
    var clock = WallClockMapping()

    /// The sound medium: its packetizer (AAC or G.711) and counts.
    struct AudioMedium {
        var packetizer: AudioPacketizer
        let trackID: TrackID
        var samples = 0
        var lastRTPTimestamp: UInt32
    }

    init(options: RTPSender.Options, audioAddresses: (rtp: SocketAddress, rtcp: SocketAddress)) throws(StreamingError) {
        self.options = options
        self.audioAddresses = audioAddresses
        packetizer = try StreamingError.network { () throws(NetworkError) in try H264Packetizer(configuration: options.packetizer) }
        lastRTPTimestamp = options.packetizer.timestampOffset
    }

    var summary: RTPSender.Summary {
        var summary = RTPSender.Summary(samples: samples, packets: packetizer.packetCount, octets: packetizer.octetCount, controlPackets: controlPackets,
                                        ssrc: packetizer.configuration.ssrc)
        summary.audio = audio.map { .init(trackID: $0.trackID.rawValue, samples: $0.samples, packets: $0.packetizer.packetCount,
                                          octets: $0.packetizer.octetCount, ssrc: $0.packetizer.ssrc) }
        summary.samplesLeftOut = samplesLeftOut
        return summary
    }

    /// Where a sample goes: the video medium, the audio medium, or nowhere (left out).
    enum Route { case video, audio, leftOut }

    mutating func route(_ sample: SampleBuffer) throws(StreamingError) -> Route {
        if sample.videoFormatDescription != nil {
            if videoTrack == nil { videoTrack = sample.trackID }
            return videoTrack == sample.trackID ? .video : .leftOut
        }
        if let format = sample.audioFormatDescription, options.audioTrack.map({ $0 == sample.trackID }) ?? AudioPacketizer.sends(format) {
            if audio == nil {
                let packetizer = try StreamingError.network { () throws(NetworkError) in
                    try AudioPacketizer(format: format, configuration: options.audioPacketizer)
                }
                audio = AudioMedium(packetizer: packetizer, trackID: sample.trackID, lastRTPTimestamp: options.audioPacketizer.timestampOffset)
            }
            return audio?.trackID == sample.trackID ? .audio : .leftOut
        }
        return .leftOut
    }

    mutating func run<Samples: AsyncSequence>(_ input: Samples, rtp: Writer, to rtpAddress: SocketAddress, rtcp: Writer, to rtcpAddress: SocketAddress) async throws
    where Samples.Element == SampleBuffer {
        var iterator = input.makeAsyncIterator()
        defer { _ = iterator }
        var failure: (any Error)?
        do {
            while options.sampleLimit.map({ samples < $0 }) ?? true, let sample = try await iterator.next() {
                try Task.checkCancellation()
                let route = try route(sample)
                if route == .leftOut {
                    samplesLeftOut += 1
                    continue
                }
                if options.paced {
                    if !started { timebase.setRate(options.rate, time: sample.decodeTime) }
                    _ = try await timebase.sleep(until: sample.decodeTime)
                }
                started = true
                // When it went: its due time, not after the write (whose time varies).
                let went = WallClock.seconds
                if sample.decodeTime.isNumeric { clock.date(ofMediaTime: sample.decodeTime.seconds, arrival: went) }
                // Reports go before each medium's first packet (a receiver then times even that
                // one from them: ffmpeg's otherwise starts each medium at 0, out of sync until
                // the first report), and every interval.
                let firstOfMedium = route == .video ? samples == 0 : audio?.samples == 0
                let now = ContinuousClock.now
                if firstOfMedium || nextReport.map({ now >= $0 }) ?? true {
                    try await sendReports(rtcp: rtcp, to: rtcpAddress, goodbye: false)
                    nextReport = now + options.senderReportInterval
                }
                switch route {
                case .video:
                    let timestamp = packetizer.timestamp(for: sample.presentationTime)
                    let packets = try packetizer.packets(for: sample)
                    try await rtp.write(contentsOf: packets.map { AddressedEnvelope(remoteAddress: rtpAddress, data: ByteBuffer(bytes: $0.bytes)) })
                    samples += 1
                    lastRTPTimestamp = timestamp
                case .audio:
                    let timestamp = audio!.packetizer.timestamp(for: sample.presentationTime)
                    let packets = try audio!.packetizer.packets(for: sample)
                    try await rtp.write(contentsOf: packets.map { AddressedEnvelope(remoteAddress: audioAddresses.rtp, data: ByteBuffer(bytes: $0.bytes)) })
                    audio!.samples += 1
                    audio!.lastRTPTimestamp = timestamp
                case .leftOut:
                    break
                }
                let end = sample.decodeTime + sample.duration
                if lastSampleEnd.map({ end > $0 }) ?? true { lastSampleEnd = end }
            }
            if let pending = audio?.packetizer.flush(), !pending.isEmpty {
                try await rtp.write(contentsOf: pending.map { AddressedEnvelope(remoteAddress: audioAddresses.rtp, data: ByteBuffer(bytes: $0.bytes)) })
            }
            // The stream lasts until its last frame's end: a receiver that reads the BYE before
            // the last packets (they come on another port) would lose them.
            if options.paced, let end = lastSampleEnd { _ = try await timebase.sleep(until: end) }
            try await Task.sleep(for: options.goodbyeDelay)
        } catch is CancellationError {
        } catch {
            failure = error
        }
        // The BYE goes out however the stream ended, so that receivers stop waiting.
        // (From a task of its own: the writer refuses a cancelled task's writes.)
        let session = self
        try await Task { try await session.writeReports(rtcp: rtcp, to: rtcpAddress, goodbye: true) }.value
        controlPackets += reportCount
        if let failure { throw failure }
    }

    /// A sender report of each medium (with a BYE at the end), to each medium's RTCP port.
    mutating func sendReports(rtcp: Writer, to rtcpAddress: SocketAddress, goodbye: Bool) async throws {
        try await writeReports(rtcp: rtcp, to: rtcpAddress, goodbye: goodbye)
        controlPackets += reportCount
    }

    func writeReports(rtcp: Writer, to rtcpAddress: SocketAddress, goodbye: Bool) async throws {
        let now = WallClock.seconds
        var envelopes: [AddressedEnvelope<ByteBuffer>] = []
        // (No video report while no picture went beside the sound: an audio-only send.)
        // Each report with the sender's CNAME (one for both media: what ties them together).
        let name = "h264kit-\(String(packetizer.configuration.ssrc, radix: 16))"
        if samples > 0 || audio == nil {
            var video: [RTCPPacket] = [.senderReport(senderReport(at: now)), RTCPPacket.sourceDescription(ssrc: packetizer.configuration.ssrc, canonicalName: name)]
            if goodbye { video.append(.goodbye(.init(sources: [packetizer.configuration.ssrc]))) }
            envelopes.append(AddressedEnvelope(remoteAddress: rtcpAddress, data: ByteBuffer(bytes: RTCPPacket.serialize(video))))
        }
        if let audio {
            var packets: [RTCPPacket] = [.senderReport(audioSenderReport(audio, at: now)),
                                         RTCPPacket.sourceDescription(ssrc: audio.packetizer.ssrc, canonicalName: name)]
            if goodbye { packets.append(.goodbye(.init(sources: [audio.packetizer.ssrc]))) }
            envelopes.append(AddressedEnvelope(remoteAddress: audioAddresses.rtcp, data: ByteBuffer(bytes: RTCPPacket.serialize(packets))))
        }
        try await rtcp.write(contentsOf: envelopes)
    }

    /// The compound RTCP packets ``writeReports(rtcp:to:goodbye:)`` sends now.
    var reportCount: Int { (samples > 0 || audio == nil ? 1 : 0) + (audio == nil ? 0 : 1) }

    /// The media time the wall clock stands at `now`: paced, the pacing timebase's (exact, at
    /// any rate); unpaced, the one the samples' sending times put there (``WallClockMapping``);
    /// nil before any sample.
    func mediaTime(at now: Double) -> Double? {
        if options.paced, started, timebase.time.isNumeric { return timebase.time.seconds }
        return clock.mediaTime(atDate: now)
    }

    /// A sender report for `now`: the wall clock in NTP format and the RTP clock at that same
    /// instant (RFC 3550 §6.4.1), the media time the samples sent so far put there, in the
    /// stream's timestamps (presentation times, so a receiver places a frame at the moment it
    /// is to be shown, and lines up another medium's samples with it). Not the last packet's
    /// timestamp: that is a presentation time, ahead of the decode time it was sent at by the
    /// frame's reordering delay (up to a few frames with B-frames), and would move the report
    /// by that much from one report to the next. Before any sample, the first timestamp.
    func senderReport(at now: Double) -> RTCPPacket.SenderReport {
        let media = mediaTime(at: now).map { MediaTime(seconds: $0, preferredTimescale: H264Packetizer.clockRate) }
        let rtp = media.map { packetizer.timestamp(for: $0) } ?? lastRTPTimestamp
        return RTCPPacket.SenderReport(ssrc: packetizer.configuration.ssrc, ntpTimestamp: NTPTime.time(secondsSince1970: now), rtpTimestamp: rtp,
                                       packetCount: UInt32(truncatingIfNeeded: packetizer.packetCount), octetCount: UInt32(truncatingIfNeeded: packetizer.octetCount))
    }

    /// The audio medium's report for the same instant, in its clock (the sample rate).
    func audioSenderReport(_ audio: AudioMedium, at now: Double) -> RTCPPacket.SenderReport {
        let media = mediaTime(at: now).map { MediaTime(seconds: $0, preferredTimescale: audio.packetizer.clockRate) }
        let rtp = media.map { audio.packetizer.timestamp(for: $0) } ?? audio.lastRTPTimestamp
        return RTCPPacket.SenderReport(ssrc: audio.packetizer.ssrc, ntpTimestamp: NTPTime.time(secondsSince1970: now), rtpTimestamp: rtp,
                                       packetCount: UInt32(truncatingIfNeeded: audio.packetizer.packetCount),
                                       octetCount: UInt32(truncatingIfNeeded: audio.packetizer.octetCount))
    }
}
