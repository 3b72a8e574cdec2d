public import H264Network
public import MediaCore
import NIOCore
import NIOPosix
import Synchronization

/// Receives H.264 over RTP/UDP (RFC 6184 on RFC 3550) and hands on whole sample buffers: what
/// `ffmpeg -i stream.sdp` does, as a library call.
///
/// RTP arrives on ``endpoint``'s port and RTCP on the next. Packets go through the
/// `H264Depacketizer` (jitter buffer, loss, duplicates, resuming at the next IDR) and the
/// `RTPSampleBufferBuilder` (AVCC sample buffers with decode and presentation times, the
/// format description from the session description or from parameter sets in band). Receiving
/// ends at an RTCP BYE, after ``Options/sampleLimit`` samples, after ``Options/idleTimeout``
/// without a packet, or when the task is cancelled; in every case the samples still held are
/// handed on before it returns. Datagrams that are not RTP of the expected payload type are
/// counted and ignored. A session description's sound (its first AAC or G.711 medium,
/// ``audio``) is received beside the picture on its own ports, as by the RTSP client: placed
/// on the picture's timeline by the sender reports of both (`RTPLipSync`), the report's
/// ``Report/sound`` saying how. Memory is bounded by the jitter buffer's depth,
/// `H264Depacketizer/Configuration/maximumAccessUnitSize` and ``Options/maximumQueuedBytes``.
public struct RTPReceiver: Sendable {
    /// How packets are received.
    public struct Options: Sendable, Hashable {
        /// The depacketizer's jitter buffer depth, payload type filter and size limit, and the
        /// receiver's reports and picture loss indications.
        public var session: RTPReceivingSession.Configuration
        /// The depacketizer's configuration (part of ``session``).
        public var depacketizer: H264Depacketizer.Configuration {
            get { session.depacketizer }
            set { session.depacketizer = newValue }
        }
        /// Hand each sample on as soon as it is complete when the stream reorders no frame
        /// (`RTPSampleBufferBuilder/Options/isLowLatency`): no frame of latency, an estimated
        /// duration.
        public var isLowLatency: Bool {
            get { session.sampleBuilder.isLowLatency }
            set { session.sampleBuilder.isLowLatency = newValue }
        }
        /// Stop after this long without a packet (RTP or RTCP).
        public var idleTimeout: Duration
        /// Stop after this many samples (nil: no limit).
        public var sampleLimit: Int?
        /// The socket receive buffer asked for (the kernel may grant less: `net.core.rmem_max`).
        public var receiveBufferSize: Int
        /// The most bytes of packets read from the sockets and not yet taken by the receiving
        /// loop (a handler slower than the sender): past it packets are dropped, as a full
        /// socket buffer drops them, and counted as lost; over RTSP's TCP connection reading
        /// waits instead.
        public var maximumQueuedBytes: Int

        /// Options: a 64-packet jitter buffer, 5 seconds without a packet ends it, 64 MiB of
        /// packets waiting at most.
        public init(depacketizer: H264Depacketizer.Configuration = .init(), idleTimeout: Duration = .seconds(5), sampleLimit: Int? = nil,
                    receiveBufferSize: Int = 4 << 20, maximumQueuedBytes: Int = 64 << 20) {
            self.session = RTPReceivingSession.Configuration(depacketizer: depacketizer)
            self.idleTimeout = idleTimeout
            self.sampleLimit = sampleLimit
            self.receiveBufferSize = receiveBufferSize
            self.maximumQueuedBytes = maximumQueuedBytes
        }
    }

    /// Why receiving ended.
    public enum Ending: String, Sendable, Hashable, Codable {
        /// The sender said goodbye (RTCP BYE).
        case goodbye
        /// ``Options/sampleLimit`` samples were received.
        case sampleLimit
        /// Nothing arrived for ``Options/idleTimeout``.
        case idleTimeout
        /// The task was cancelled (SIGINT in the command-line tool).
        case cancelled
        /// The RTSP session ended: the publisher's or the server's `TEARDOWN`, or its connection closed.
        case teardown
    }

    /// What was received.
    public struct Report: Sendable, Hashable, Codable {
        /// Why it ended.
        public var ending: Ending
        /// Sample buffers handed on.
        public var samples: Int
        /// The depacketizer's counts: packets received, lost, reordered, duplicated, late,
        /// invalid; access units complete, dropped, skipped.
        public var depacketizer: H264Depacketizer.Statistics
        /// Access units dropped because no parameter sets had been seen yet.
        public var droppedBeforeParameterSets: Int
        /// Access units refused because their parameter sets in band do not parse.
        public var refusedForParameterSets: Int
        /// Access units dropped because frames lost before them left no decoding time for them
        /// (`RTPSampleBufferBuilder/droppedOutOfOrder`).
        public var droppedOutOfOrder = 0
        /// The interarrival jitter (RFC 3550 A.8) at the end, in seconds.
        public var jitter: Double
        /// RTCP packets received (compound packets count once).
        public var controlPackets: Int
        /// The SSRC of the source taken as the stream (RFC 3550 A.1).
        public var ssrc: UInt32?
        /// RTCP receiver reports sent back to the sender.
        public var receiverReports: Int
        /// RTCP picture loss indications sent (asking the sender for an IDR picture).
        public var pictureLossIndications: Int
        /// Samples the consumer was too slow to take, dropped so that memory stays bounded.
        public var samplesDroppedForSlowConsumer = 0
        /// Which packets were the stream's (RFC 3550 A.1): packets of other sources, not RTP,
        /// malformed or far out of sequence, counted apart and dropped before they changed
        /// anything. (Nil in a report written before these were counted.)
        public var sourceValidation: RTPSourceValidation.Statistics? {
            get { sourceValidationStorage?.value }
            set { sourceValidationStorage = newValue.map(StatisticsBox.init) }
        }
        // Held by reference: a report grown by these 72 bytes crashed Swift 6.3's task
        // allocator when it was a task's result (`Task { try await receiver.record(to:) }`;
        // swiftlang/swift#87481, async results over about 280 bytes).
        private var sourceValidationStorage: StatisticsBox?

        /// The media the stream's description offered beside the one received, not received
        /// (`SessionDescription.Media.summary`: "audio MPEG4-GENERIC/48000/2"): the receiver
        /// records the H.264 video, and a camera's sound is named here rather than lost without
        /// a word.
        public var mediaNotReceived: [String] {
            get { mediaNotReceivedStorage?.value ?? [] }
            set { mediaNotReceivedStorage = newValue.isEmpty ? nil : NamesBox(newValue) }
        }
        private var mediaNotReceivedStorage: NamesBox?  // (by reference, as above)
        /// The sound received beside the picture, when it was.
        public var sound: SoundReport? {
            get { soundStorage?.value }
            set { soundStorage = newValue.map(SoundBox.init) }
        }
        private var soundStorage: SoundBox?  // (by reference, as above)

        private enum CodingKeys: String, CodingKey {
            case ending, samples, depacketizer, droppedBeforeParameterSets, refusedForParameterSets, droppedOutOfOrder, jitter, controlPackets,
                 ssrc, receiverReports, pictureLossIndications, samplesDroppedForSlowConsumer
            case sourceValidationStorage = "sourceValidation"
            case mediaNotReceivedStorage = "mediaNotReceived"
            case soundStorage = "sound"
        }
    }

    /// What became of the sound received beside the picture.
    public struct SoundReport: Sendable, Hashable, Codable {
        /// Its format ("mp4a.40.2 48000 Hz, 2 channels, 1024 frames per packet").
        public var format: String
        /// Sample buffers handed on: AAC frames, or G.711 packets' runs of samples.
        public var samples: Int
        /// RTP packets received.
        public var packetsReceived: Int
        /// RTP packets lost (RFC 3550 A.3).
        public var packetsLost: Int64
        /// Frames dropped (cut by a loss, or refused).
        public var framesDropped: Int
        /// What placed the sound beside the picture: the sender reports, or (none in time) the
        /// first packets' arrival.
        public var lipSync: RTPLipSync.Basis?
        /// Seconds from the picture's first sample to the sound's, as placed.
        public var offset: Double?

        /// A report of these counts.
        public init(format: String, samples: Int, packetsReceived: Int, packetsLost: Int64, framesDropped: Int, lipSync: RTPLipSync.Basis?, offset: Double?) {
            self.format = format
            self.samples = samples
            self.packetsReceived = packetsReceived
            self.packetsLost = packetsLost
            self.framesDropped = framesDropped
            self.lipSync = lipSync
            self.offset = offset
        }

        /// The report of the sound received beside the picture.
        public init(_ sound: RTPAudioBesidePicture) { self.init(session: sound.session, lipSync: sound.lipSync) }

        /// The report of `session`, placed by `lipSync`.
        public init(session: RTPAudioReceivingSession, lipSync: RTPLipSync) {
            self.init(format: session.formatDescription?.description ?? "\(session.configuration.format.encodingName), its configuration never received", samples: session.samplesMade, packetsReceived: session.reception?.packetsReceived ?? 0,
                      packetsLost: max(0, session.reception?.cumulativeLost ?? 0), framesDropped: session.depacketizer.framesDropped,
                      lipSync: lipSync.basis, offset: lipSync.offset)
        }
    }

    /// A sound report kept by reference in a report, compared and coded by value.
    final class SoundBox: Sendable, Hashable, Codable {
        let value: SoundReport
        init(_ value: SoundReport) { self.value = value }
        init(from decoder: any Decoder) throws { value = try SoundReport(from: decoder) }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        static func == (a: SoundBox, b: SoundBox) -> Bool { a.value == b.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    /// Counts kept by reference in a report, compared and coded by value.
    final class StatisticsBox: Sendable, Hashable, Codable {
        let value: RTPSourceValidation.Statistics
        init(_ value: RTPSourceValidation.Statistics) { self.value = value }
        init(from decoder: any Decoder) throws { value = try RTPSourceValidation.Statistics(from: decoder) }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        static func == (a: StatisticsBox, b: StatisticsBox) -> Bool { a.value == b.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    /// Names kept by reference in a report, compared and coded by value.
    final class NamesBox: Sendable, Hashable, Codable {
        let value: [String]
        init(_ value: [String]) { self.value = value }
        init(from decoder: any Decoder) throws { value = try [String](from: decoder) }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        static func == (a: NamesBox, b: NamesBox) -> Bool { a.value == b.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    /// Where to listen: RTP on the port, RTCP on the next; an empty host listens on every
    /// IPv4 address.
    public let endpoint: RTPDestination
    /// The payload format from the session description, when there is one: its parameter sets
    /// describe the stream before any arrive in band, and its payload type filters packets.
    public let payloadFormat: H264PayloadFormat?
    /// How packets are received.
    public let options: Options
    /// The media of the session description beside the video received (its sound), not
    /// received: named in the report (``Report/mediaNotReceived``).
    public private(set) var mediaNotReceived: [String] = []
    /// The sound received beside the picture, if any.
    public private(set) var audio: AudioMedium?

    /// A sound medium: its payload format, and where it arrives (RTP on the port, RTCP on the
    /// next).
    public struct AudioMedium: Sendable, Hashable {
        /// The payload format (AAC or G.711).
        public var format: AudioPayloadFormat
        /// Where it arrives.
        public var endpoint: RTPDestination

        /// A medium of `format` arriving at `endpoint`.
        public init(format: AudioPayloadFormat, endpoint: RTPDestination) {
            self.format = format
            self.endpoint = endpoint
        }
    }

    /// A receiver on `endpoint`, with the stream described by `payloadFormat` when known, and
    /// `audio` beside it.
    public init(endpoint: RTPDestination, payloadFormat: H264PayloadFormat? = nil, options: Options = Options(), audio: AudioMedium? = nil) {
        self.endpoint = endpoint
        self.payloadFormat = payloadFormat
        var options = options
        if options.depacketizer.payloadType == nil, let payloadFormat { options.depacketizer.payloadType = payloadFormat.payloadType }
        self.options = options
        self.audio = audio
    }

    /// The same receiver (its media, its sound) with other options.
    public func with(options: Options) -> RTPReceiver {
        var copy = RTPReceiver(endpoint: endpoint, payloadFormat: payloadFormat, options: options, audio: audio)
        copy.mediaNotReceived = mediaNotReceived
        return copy
    }

    /// A receiver for the first H.264 video medium of a session description (what an `.sdp`
    /// file from ffmpeg, GStreamer or `h264kit sdp` describes): its port, its connection
    /// address when that is a loopback address (else every address), its payload format; with
    /// `receivesAudio`, the first AAC or G.711 medium beside it on its own port. The other
    /// media are named in ``mediaNotReceived``.
    public init(sessionDescription: SessionDescription, options: Options = Options(), receivesAudio: Bool = true) throws(StreamingError) {
        guard let medium = sessionDescription.media.first(where: { $0.type == "video" }) else {
            throw .network(NetworkError(.invalidDescription, "the session description has no video medium (m=video)"))
        }
        let format: H264PayloadFormat
        do { format = try H264PayloadFormat(medium: medium) } catch { throw .network(error) }
        let address = (medium.connection ?? sessionDescription.connection)?.split(separator: " ").last.map(String.init) ?? ""
        let host = address.hasPrefix("127.") || address == "::1" ? address : ""
        self.init(endpoint: RTPDestination(host: host, port: medium.port), payloadFormat: format, options: options)
        var seenVideo = false
        for other in sessionDescription.media {
            if other == medium && !seenVideo {
                seenVideo = true
            } else if receivesAudio, audio == nil, let sound = AudioPayloadFormat(medium: other), sound.isReceivable, (2...65_534).contains(other.port),
                      other.port != medium.port, other.port != medium.port + 1, other.port + 1 != medium.port {
                audio = AudioMedium(format: sound, endpoint: RTPDestination(host: host, port: other.port))
            } else {
                mediaNotReceived.append(other.summary)
            }
        }
    }

    /// Receives until the stream ends (see ``Ending``), handing each sample buffer to `handle`
    /// in decode order as it completes. An error `handle` throws ends receiving and is thrown
    /// as `StreamingError.handler(_:)`, itself.
    /// `soundRefusal` says why the caller cannot take sound of a format (nil: it can): such
    /// sound is not received, and the report names it.
    public func receive(soundRefusal: (AudioFormatDescription) -> String? = { _ in nil },
                        _ handle: (SampleBuffer) throws -> Void) async throws(StreamingError) -> Report {
        do { return try await receiveUntyped(soundRefusal: soundRefusal, handle) } catch let error as StreamingError { throw error } catch let error as HandlerError {
            throw .handler(error.underlying)
        } catch {
            throw .socket("receiving on \(endpoint)", underlying: error)
        }
    }

    /// An error of the caller's handler, told apart from the sockets'.
    struct HandlerError: Error { var underlying: any Error }

    /// What reaches the receiving loop: datagrams from either port (of either medium), and the
    /// clock.
    private enum Input: Sendable {
        case rtp([[UInt8]])
        case rtcp([UInt8], from: SocketAddress)
        case audioRTP([[UInt8]])
        case audioRTCP([UInt8], from: SocketAddress)
        case tick
    }

    private func receiveUntyped(soundRefusal: (AudioFormatDescription) -> String?, _ handle: (SampleBuffer) throws -> Void) async throws -> Report {
        let host = endpoint.host.isEmpty ? "0.0.0.0" : endpoint.host
        let (inputs, input) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingOldest(16_384))
        let budget = ByteBudget(limit: max(1, options.maximumQueuedBytes))
        let rtp = try await Self.bind(host: host, port: endpoint.port, receiveBufferSize: options.receiveBufferSize) { datagrams in
            let kept = datagrams.map(\.bytes).filter { budget.take($0.count) }
            if !kept.isEmpty, case .dropped = input.yield(.rtp(kept)) { budget.give(kept.reduce(0) { $0 + $1.count }) }
        }
        let rtcp: any Channel
        do {
            // RTCP read on the RTP socket's event loop: a BYE is not read while that loop is
            // too busy to read the packets sent before it.
            rtcp = try await Self.bind(host: host, port: endpoint.port + 1, receiveBufferSize: 1 << 20, on: rtp.eventLoop) {
                for datagram in $0 where budget.take(datagram.bytes.count) {
                    if case .dropped = input.yield(.rtcp(datagram.bytes, from: datagram.remoteAddress)) { budget.give(datagram.bytes.count) }
                }
            }
        } catch {
            try? await rtp.close()
            throw error
        }
        defer {
            rtp.close(promise: nil)
            rtcp.close(promise: nil)
        }
        // The sound, on its own port pair, when the caller takes it.
        var mediaNotReceived = self.mediaNotReceived
        var sound: RTPAudioBesidePicture?
        var audioChannels: [any Channel] = []
        defer { for channel in audioChannels { channel.close(promise: nil) } }
        if let audio {
            let name = "audio \(audio.format.encodingName)/\(audio.format.clockRate)"
            if let format = try? audio.format.formatDescription(), let refusal = soundRefusal(format) {
                mediaNotReceived.append("\(name) (\(refusal))")
            } else {
                do { sound = try RTPAudioBesidePicture(format: audio.format) } catch { mediaNotReceived.append("\(name) (\(error))") }
            }
            if sound != nil {
                let soundHost = audio.endpoint.host.isEmpty ? "0.0.0.0" : audio.endpoint.host
                audioChannels.append(try await Self.bind(host: soundHost, port: audio.endpoint.port, receiveBufferSize: options.receiveBufferSize, on: rtp.eventLoop) { datagrams in
                    let kept = datagrams.map(\.bytes).filter { budget.take($0.count) }
                    if !kept.isEmpty, case .dropped = input.yield(.audioRTP(kept)) { budget.give(kept.reduce(0) { $0 + $1.count }) }
                })
                audioChannels.append(try await Self.bind(host: soundHost, port: audio.endpoint.port + 1, receiveBufferSize: 1 << 20, on: rtp.eventLoop) {
                    for datagram in $0 where budget.take(datagram.bytes.count) {
                        if case .dropped = input.yield(.audioRTCP(datagram.bytes, from: datagram.remoteAddress)) { budget.give(datagram.bytes.count) }
                    }
                })
            }
        }
        var audioControl: SocketAddress?
        // The clock ticks on the sockets' event loop: when that loop is held up (every core
        // taken), the ticks wait with the datagrams, which come first when it runs again; and a
        // stall of the loop or of this task is not counted as quiet (the policy's threshold).
        let ticker = rtp.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(10), delay: .milliseconds(10)) { _ in input.yield(.tick) }
        defer { ticker.cancel() }

        var session = RTPReceivingSession(configuration: options.session, formatDescription: try payloadFormat?.formatDescription())
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: options.idleTimeout.inSeconds, sampleLimit: options.sampleLimit, stallThreshold: 0.5),
                                     now: monotonicSeconds())
        var senderControl: SocketAddress?
        receiving: for await event in inputs {
            let now = monotonicSeconds()
            var samples: [SampleBuffer] = []
            var placed: [SampleBuffer] = []
            switch event {
            case .audioRTP(let datagrams):
                budget.give(datagrams.reduce(0) { $0 + $1.count })
                policy.arrived(at: now, isRTP: true)
                for bytes in datagrams { placed += sound?.receiveRTP(bytes, arrival: now, picture: .init(session)) ?? [] }
            case .audioRTCP(let bytes, let from):
                budget.give(bytes.count)
                policy.arrived(at: now, isRTP: false)
                if sound?.receiveRTCP(bytes, arrival: now).senderReport == true { audioControl = from }
            case .rtp(let datagrams):
                budget.give(datagrams.reduce(0) { $0 + $1.count })
                policy.arrived(at: now, isRTP: true)
                // (Arrays, not a closure over the session: a closure capturing this async
                // function's large `session` for mutation broke the task allocator's order.)
                for bytes in datagrams { samples += session.receiveRTP(bytes, arrival: now) }
            case .rtcp(let bytes, let from):
                budget.give(bytes.count)
                policy.arrived(at: now, isRTP: false)
                let events = bytes.withUnsafeBytes { session.receiveRTCP($0, arrival: now) }
                // Reports go back to where the sender's reports come from.
                if events.senderReport { senderControl = from }
            case .tick:
                samples = session.expire(now: now)
                placed = sound?.expire(now: now, picture: .init(session)) ?? []
                if case .end = policy.tick(now: now, isOver: { session.isOver(quiet: $0) }) { break receiving }
            }
            if let senderControl, let feedback = session.feedback(now: now) {
                rtcp.writeAndFlush(AddressedEnvelope(remoteAddress: senderControl, data: ByteBuffer(bytes: feedback)), promise: nil)
            }
            if let audioControl, audioChannels.count == 2, let feedback = sound?.feedback(now: now) {
                audioChannels[1].writeAndFlush(AddressedEnvelope(remoteAddress: audioControl, data: ByteBuffer(bytes: feedback)), promise: nil)
            }
            let step = try Self.hand(samples, policy: &policy, handle)
            try Self.handSound(placed, handle)
            if case .end = step { break receiving }
        }
        if Task.isCancelled { _ = policy.cancelled() }
        _ = try Self.hand(session.finish(), policy: &policy, handle)
        var report = Report(session: session, ending: policy.ending ?? .cancelled, samples: policy.delivered)
        if var last = sound {
            try Self.handSound(last.finish(picture: .init(session), now: monotonicSeconds()), handle)
            report.sound = SoundReport(last)
        }
        report.mediaNotReceived = mediaNotReceived
        return report
    }

    /// A UDP channel on `host:port` handing each datagram to `forward`.
    static func bind(host: String, port: Int, receiveBufferSize: Int, on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                     _ forward: @escaping @Sendable ([ReceivedDatagram]) -> Void) async throws(StreamingError) -> any Channel {
        do {
            // No SO_REUSEADDR (ffmpeg sets it for multicast only): with it, a second receiver on
            // the port binds too and one of the two silently gets nothing; without it, the
            // second fails with "address in use".
            return try await DatagramBootstrap(group: group)
                .readingWholeDatagrams(16)
                .channelOption(.maxMessagesPerRead, value: 8)
                .channelOption(.socketOption(.so_rcvbuf), value: .init(receiveBufferSize))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramForwarder(forward)) }
                }
                .bind(host: host, port: port).get()
        } catch {
            throw .socket("binding UDP \(host.contains(":") ? "[\(host)]" : host):\(port)", underlying: error)
        }
    }

    /// Hands `samples` on, up to `limit` in all; returns the new count.
    /// Hands on sound samples (not counted against the sample limit, which counts pictures).
    static func handSound(_ samples: [SampleBuffer], _ handle: (SampleBuffer) throws -> Void) throws {
        for sample in samples {
            do { try handle(sample) } catch { throw HandlerError(underlying: error) }
        }
    }

    /// Hands on the pictures `policy` admits under its sample limit; its step after them.
    static func hand(_ samples: [SampleBuffer], policy: inout ReceivingPolicy, _ handle: (SampleBuffer) throws -> Void) throws -> ReceivingPolicy.Step {
        let admitted = policy.admitted(samples.count)
        for sample in samples.prefix(admitted) {
            do { try handle(sample) } catch { throw HandlerError(underlying: error) }
        }
        return policy.handed(admitted)
    }
}

extension RTPReceiver.Report {
    /// The report of a receiving session that ended for `ending` after `samples` samples.
    init(session: RTPReceivingSession, ending: RTPReceiver.Ending, samples: Int) {
        self.init(ending: ending, samples: samples, depacketizer: session.depacketizer.statistics,
                  droppedBeforeParameterSets: session.builder.droppedBeforeParameterSets, refusedForParameterSets: session.refusedForParameterSets,
                  jitter: (session.reception?.jitter ?? 0) / 90_000, controlPackets: session.controlPackets, ssrc: session.reception?.ssrc,
                  receiverReports: session.receiverReports, pictureLossIndications: session.pictureLossIndications)
        droppedOutOfOrder = session.builder.droppedOutOfOrder
        sourceValidation = session.sourceValidation.statistics
    }
}
