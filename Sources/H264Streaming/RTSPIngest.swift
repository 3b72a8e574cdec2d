public import SampleFlow
public import H264Network
public import MediaCore
import NIOCore
import SystemIO

/// Receives what a publisher pushes to an RTSP path: the server side of
/// `ffmpeg -f rtsp rtsp://HOST:PORT/PATH`, as OBS and ffmpeg publish to a media server
/// (`ANNOUNCE` with the session description, `SETUP` with `mode=record` over UDP or TCP
/// interleaved, `RECORD`, then RTP).
///
/// One ``RTSPServer`` listens at the URL's host and port and takes the first publisher of its
/// path; the samples are handed on in decode order as they complete, as ``RTPReceiver`` does.
/// The publisher's H.264 video is received (track 1), and its first AAC medium (RFC 3640,
/// track 2) placed beside it by the sender reports (`RTPLipSync`; ``RTPReceiver/Report/sound``);
/// its other media are set up, so that it can publish, but not recorded:
/// ``RTPReceiver/Report/mediaNotReceived`` names them.
/// Receiving ends at the publisher's `TEARDOWN` (or its connection closing), an RTCP BYE,
/// ``RTPReceiver/Options/sampleLimit`` samples, ``RTPReceiver/Options/idleTimeout`` without a
/// packet once the publisher has started, or cancellation; the samples still held are handed
/// on in every case.
public struct RTSPIngest: Sendable {
    /// Where to listen: the host, port and path publishers push to.
    public let url: RTSPURL
    /// How the server runs (credentials publishers must give, session timeout: a publisher's
    /// session lives while its packets or requests come, and ends that long after both stop).
    public var serverOptions: RTSPServer.Options
    /// How packets are received (jitter buffer, idle timeout, sample limit).
    public var options: RTPReceiver.Options
    /// Whether the publisher's first AAC medium is recorded beside its picture (else it is
    /// named in ``RTPReceiver/Report/mediaNotReceived``).
    public let recordsAudio: Bool

    /// A receiver of what is published to `url`; with `credentials`, publishers must
    /// authenticate; with `recordsAudio` (the default) the publisher's sound is received too.
    public init(url: RTSPURL, credentials: RTSPCredentials? = nil, options: RTPReceiver.Options = .init(), recordsAudio: Bool = true) {
        self.url = url
        var serverOptions = RTSPServer.Options(host: url.host, port: url.port, credentials: credentials)
        serverOptions.sessionTimeout = 60
        self.serverOptions = serverOptions
        self.options = options
        self.recordsAudio = recordsAudio
    }

    /// Listens, and hands each sample of the first publisher's stream to `handle`, in decode
    /// order, until the stream ends (see the type's discussion). `onListening` gets the port
    /// once the server listens. An error `handle` throws ends receiving as
    /// `StreamingError.handler(_:)`. `soundRefusal` says why the caller cannot take sound of
    /// a format (nil: it can): such sound is not recorded, and the report names it.
    public func receive(onListening: @escaping @Sendable (Int) -> Void = { _ in }, soundRefusal: @escaping @Sendable (AudioFormatDescription) -> String? = { _ in nil },
                        _ handle: (SampleBuffer) throws -> Void) async throws(StreamingError) -> RTPReceiver.Report {
        let server = try RTSPServer(options: serverOptions)
        let sink = Sink(configuration: options.session, maximumQueuedBytes: options.maximumQueuedBytes, recordsAudio: recordsAudio, soundRefusal: soundRefusal,
                        idleTimeout: options.idleTimeout)
        try server.serve(.ingest(sink), at: url.path)
        let serving = Task {
            do throws(StreamingError) { try await server.run(onListening: onListening) } catch { sink.abort(error) }
        }
        defer { serving.cancel() }
        // The sample limit (the sink's own policy decides the ends in time).
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: .infinity, sampleLimit: options.sampleLimit), now: 0)
        var ending = RTPReceiver.Ending.cancelled
        let watchdog = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(50))
                sink.tick()
            }
        }
        defer { watchdog.cancel() }
        do {
            events: for await event in sink.events {
                switch event {
                case .samples(let samples):
                    if case .end(let why) = try Self.hand(samples, policy: &policy, handle) {
                        ending = why
                        break events
                    }
                case .ended(let why):
                    ending = why
                    break events
                }
            }
            // (The end event is dropped when the consumer's buffer is full; the reason is kept.)
            if case .cancelled = ending, let why = sink.ending { ending = why }
            _ = try Self.hand(sink.finish(), policy: &policy, handle)
        } catch let error as RTPReceiver.HandlerError {
            throw .handler(error.underlying)
        } catch {
            throw .socket("receiving at \(url)", underlying: error)
        }
        if let error = sink.failure { throw error }  // the server could not listen
        return sink.report(ending: ending, samples: policy.delivered)
    }

    /// Hands on samples: the pictures counted against the limit, the sound beside them not
    /// (and none once the limit is reached); the policy's step after them.
    private static func hand(_ samples: [SampleBuffer], policy: inout ReceivingPolicy, _ handle: (SampleBuffer) throws -> Void) throws -> ReceivingPolicy.Step {
        var step = ReceivingPolicy.Step.goOn
        for sample in samples {
            if sample.mediaType == .video {
                step = try RTPReceiver.hand([sample], policy: &policy, handle)
            } else if policy.admitted(1) == 1 {
                do { try handle(sample) } catch { throw RTPReceiver.HandlerError(underlying: error) }
            }
        }
        return step
    }

    /// Receives into a file as ``RTPReceiver/record(to:)`` does.
    public func record(to output: SampleOutput, onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws(StreamingError) -> RTPReceiver.Report {
        try await RTPReceiver.record(to: output, from: "a publisher at \(url)") { (handle) async throws(StreamingError) in
            try await receive(onListening: onListening, soundRefusal: { output.refusal(of: $0) }, handle)
        }
    }

    /// A path that takes one publisher's stream: what ``RTSPServer/Media/ingest(_:)`` serves.
    /// The server's event loops give it packets; its ``events`` hand on samples and the end.
    public final class Sink: Sendable {
        /// What comes out.
        public enum Event: Sendable {
            /// Sample buffers completed, in decode order.
            case samples([SampleBuffer])
            /// The stream ended.
            case ended(RTPReceiver.Ending)
        }

        private struct State {
            var sessionID: String?
            var receiving: RTPReceivingSession?
            /// The publisher's sound, when it announced AAC, placed beside the picture.
            var audio: RTPAudioBesidePicture?
            /// The picture's clock, for placing the sound.
            var picture: RTPLipSync.MediumClock { receiving.map(RTPLipSync.MediumClock.init) ?? .unknown }
            /// When the stream ends (from the session's start on).
            var policy: ReceivingPolicy?
            var ended = false
            /// Why it ended, kept beside the event (which a full buffer drops).
            var ending: RTPReceiver.Ending?
            var droppedForSlowConsumer = 0
            /// Samples were dropped: the next ones wait for a sync sample.
            var skippingToSync = false
            var failure: StreamingError?
            /// The publisher's media beside the video, not recorded.
            var mediaNotRecorded: [String] = []
        }

        /// Samples and the end, as they happen: at most `maximumQueuedBytes` of samples wait
        /// for the consumer; past it samples are dropped and counted
        /// (``RTPReceiver/Report/samplesDroppedForSlowConsumer``).
        public let events: Events
        private let continuation: AsyncStream<Event>.Continuation
        private let configuration: RTPReceivingSession.Configuration
        private let recordsAudio: Bool
        private let soundRefusal: @Sendable (AudioFormatDescription) -> String?
        private let idleTimeout: Duration
        private let budget: ByteBudget
        private let state = Locked(State())

        /// A sink receiving with `configuration`, holding at most `maximumQueuedBytes` of
        /// samples its consumer has not taken; with `recordsAudio`, the publisher's sound too
        /// unless `soundRefusal` says why not (then it is named in the report); the stream ends
        /// `idleTimeout` after the publisher's last packet.
        public init(configuration: RTPReceivingSession.Configuration = .init(), maximumQueuedBytes: Int = 64 << 20, recordsAudio: Bool = true,
                    soundRefusal: @escaping @Sendable (AudioFormatDescription) -> String? = { _ in nil }, idleTimeout: Duration = .seconds(5)) {
            self.configuration = configuration
            self.idleTimeout = idleTimeout
            self.recordsAudio = recordsAudio
            self.soundRefusal = soundRefusal
            budget = ByteBudget(limit: max(1, maximumQueuedBytes))
            let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingOldest(4096))
            self.continuation = continuation
            events = Events(stream: stream, budget: budget)
        }

        /// The sink's events, each let go from its byte count as it is taken.
        public struct Events: AsyncSequence, Sendable {
            let stream: AsyncStream<Event>
            let budget: ByteBudget

            /// Iterates the events.
            public struct AsyncIterator: AsyncIteratorProtocol {
                var base: AsyncStream<Event>.AsyncIterator
                let budget: ByteBudget
                /// The next event, or nil when the sink has finished.
                public mutating func next() async -> Event? {
                    let event = await base.next()
                    if case .samples(let samples)? = event { budget.give(Sink.bytes(of: samples)) }
                    return event
                }

                /// The next event, or nil when the sink has finished (on the caller's actor).
                public mutating func next(isolation actor: isolated (any Actor)?) async -> Event? {
                    let event = await base.next(isolation: actor)
                    if case .samples(let samples)? = event { budget.give(Sink.bytes(of: samples)) }
                    return event
                }
            }

            /// An iterator over the events.
            public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), budget: budget) }
        }

        static func bytes(of samples: [SampleBuffer]) -> Int { samples.reduce(0) { $0 + $1.data.count } }

        /// A publisher's session started recording; the first one is taken, others ignored.
        /// `mediaNotRecorded` names its media beside the video (its sound), for the report.
        func begin(session id: String, format: H264PayloadFormat, audio: AudioPayloadFormat? = nil, mediaNotRecorded: [String] = []) {
            state.withLock { state in
                guard state.sessionID == nil, !state.ended else { return }
                state.sessionID = id
                state.mediaNotRecorded = mediaNotRecorded
                if let audio {
                    let name = "audio \(audio.encodingName)/\(audio.clockRate)"
                    if !recordsAudio {
                        state.mediaNotRecorded.insert(name, at: 0)
                    } else if let sound = try? audio.formatDescription(), let refusal = soundRefusal(sound) {
                        state.mediaNotRecorded.insert("\(name) (\(refusal))", at: 0)
                    } else {
                        do { state.audio = try RTPAudioBesidePicture(format: audio) } catch { state.mediaNotRecorded.append("\(name) (\(error))") }
                    }
                }
                state.receiving = RTPReceivingSession(configuration: configuration, formatDescription: try? format.formatDescription())
                state.policy = ReceivingPolicy(configuration: .init(idleTimeout: idleTimeout.inSeconds, stallThreshold: 0.5), now: monotonicSeconds())
            }
        }

        func receiveRTP(_ bytes: [UInt8], session id: String, isAudio: Bool = false) {
            let samples: [SampleBuffer] = state.withLock { state in
                guard state.sessionID == id, !state.ended else { return [] }
                let now = monotonicSeconds()
                state.policy?.arrived(at: now, isRTP: true)
                guard isAudio else { return bytes.withUnsafeBytes { state.receiving?.receiveRTP($0, arrival: now) ?? [] } }
                let picture = state.picture
                return state.audio?.receiveRTP(bytes, arrival: now, picture: picture) ?? []
            }
            if !samples.isEmpty { yield(.samples(samples)) }
        }

        func receiveRTCP(_ bytes: [UInt8], session id: String, isAudio: Bool = false) {
            state.withLock { state in
                guard state.sessionID == id, !state.ended else { return }
                state.policy?.arrived(at: monotonicSeconds(), isRTP: false)
                if isAudio {
                    _ = state.audio?.receiveRTCP(bytes, arrival: monotonicSeconds())
                } else {
                    _ = bytes.withUnsafeBytes { state.receiving?.receiveRTCP($0, arrival: monotonicSeconds()) }
                }
            }
        }

        /// Seconds since a packet of the recorded session `id` came (nil for another session,
        /// or before its first): the session timeout counts from it.
        func secondsSinceArrival(session id: String) -> Double? {
            state.withLock { state in
                guard state.sessionID == id, let policy = state.policy else { return nil }
                return policy.quiet(at: monotonicSeconds())
            }
        }

        /// The publisher's session ended (TEARDOWN, its connection closed). Its last RTP
        /// packets come over UDP, and may still wait in the socket after the TEARDOWN came over
        /// TCP: the stream ends 250 ms later (``tick()``), taking them meanwhile.
        func end(session id: String) {
            state.withLock { state in
                guard state.sessionID == id, !state.ended else { return }
                state.policy?.tornDown(at: monotonicSeconds())
            }
        }

        /// The clock's tick: ends on the TEARDOWN (once its last packets had time), a BYE (once
        /// its last packets came, `RTPReceivingSession.isOver(quiet:)`) or `idleTimeout` without
        /// a packet, as ``ReceivingPolicy`` rules.
        func tick() {
            let now = monotonicSeconds()
            let (why, samples): (RTPReceiver.Ending?, [SampleBuffer]) = state.withLock { state in
                guard !state.ended, var policy = state.policy else { return (nil, []) }
                var samples = state.receiving?.expire(now: now) ?? []
                let picture = state.picture
                samples += state.audio?.expire(now: now, picture: picture) ?? []
                let receiving = state.receiving
                let step = policy.tick(now: now) { receiving?.isOver(quiet: $0) == true }
                state.policy = policy
                guard case .end(let why) = step else { return (nil, samples) }
                state.ended = true
                return (why, samples)
            }
            if !samples.isEmpty { yield(.samples(samples)) }
            if let why {
                state.withLock { $0.ending = why }
                yield(.ended(why))
                continuation.finish()
            }
        }

        /// The server failed (it could not listen): receiving ends with `error`.
        func abort(_ error: StreamingError) {
            state.withLock {
                $0.ended = true
                $0.failure = error
            }
            continuation.finish()
        }

        var failure: StreamingError? { state.withLock { $0.failure } }
        /// Why the stream ended, once it has.
        var ending: RTPReceiver.Ending? { state.withLock { $0.ending } }

        /// The samples still held.
        func finish() -> [SampleBuffer] {
            state.withLock { state in
                let pictures = state.receiving?.finish() ?? []
                let picture = state.picture
                return pictures + (state.audio?.finish(picture: picture, now: monotonicSeconds()) ?? [])
            }
        }

        func report(ending: RTPReceiver.Ending, samples: Int) -> RTPReceiver.Report {
            state.withLock { state in
                var report = state.receiving.map { RTPReceiver.Report(session: $0, ending: ending, samples: samples) }
                    ?? RTPReceiver.Report(session: RTPReceivingSession(), ending: ending, samples: samples)
                report.samplesDroppedForSlowConsumer = state.droppedForSlowConsumer
                report.mediaNotReceived = state.mediaNotRecorded
                report.sound = state.audio.map(RTPReceiver.SoundReport.init)
                return report
            }
        }

        /// Hands on samples, or drops them past the byte bound; after a drop the samples up to
        /// the next sync sample are dropped too (they refer to what was dropped), all counted.
        private func yield(_ event: Event) {
            guard case .samples(let all) = event else {
                continuation.yield(event)
                return
            }
            let samples = state.withLock { state -> [SampleBuffer] in
                guard state.skippingToSync else { return all }
                guard let sync = all.firstIndex(where: \.isSync) else {
                    state.droppedForSlowConsumer += all.count
                    return []
                }
                state.droppedForSlowConsumer += sync
                state.skippingToSync = false
                return Array(all[sync...])
            }
            guard !samples.isEmpty else { return }
            let bytes = Self.bytes(of: samples)
            if budget.take(bytes) {
                guard case .dropped = continuation.yield(.samples(samples)) else { return }
                budget.give(bytes)
            }
            state.withLock {
                $0.droppedForSlowConsumer += samples.count
                $0.skippingToSync = true
            }
        }
    }
}
