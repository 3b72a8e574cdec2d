public import H264Network
public import MediaCore
import NIOCore
import NIOPosix
import Synchronization

/// Receives H.264 over RTP/UDP (RFC 6184 on RFC 3550) and hands on whole sample buffers: what
/// `ffmpeg -i stream.sdp` does, as a library call.
///
/// RTP arrives on ``endpoint``'s port and RTCP on the next. Packets go through the
/// ``H264Depacketizer`` (jitter buffer, loss, duplicates, resuming at the next IDR) and the
/// ``RTPSampleBufferBuilder`` (AVCC sample buffers with decode and presentation times, the
/// format description from the session description or from parameter sets in band). Receiving
/// ends at an RTCP BYE, after ``Options/sampleLimit`` samples, after ``Options/idleTimeout``
/// without a packet, or when the task is cancelled; in every case the samples still held are
/// handed on before it returns. Datagrams that are not RTP of the expected payload type are
/// counted and ignored. Memory is bounded by the jitter buffer's depth and
/// ``H264Depacketizer/Configuration/maximumAccessUnitSize``.
public struct RTPReceiver: Sendable {
    /// How packets are received.
    public struct Options: Sendable, Hashable {
        /// The depacketizer's jitter buffer depth, payload type filter and size limit.
        public var depacketizer: H264Depacketizer.Configuration
        /// Stop after this long without a packet (RTP or RTCP).
        public var idleTimeout: Duration
        /// Stop after this many samples (nil: no limit).
        public var sampleLimit: Int?
        /// The socket receive buffer asked for (the kernel may grant less: `net.core.rmem_max`).
        public var receiveBufferSize: Int

        /// Options: a 64-packet jitter buffer, 5 seconds without a packet ends it.
        public init(depacketizer: H264Depacketizer.Configuration = .init(), idleTimeout: Duration = .seconds(5), sampleLimit: Int? = nil,
                    receiveBufferSize: Int = 4 << 20) {
            self.depacketizer = depacketizer
            self.idleTimeout = idleTimeout
            self.sampleLimit = sampleLimit
            self.receiveBufferSize = receiveBufferSize
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
        /// The interarrival jitter (RFC 3550 A.8) at the end, in seconds.
        public var jitter: Double
        /// RTCP packets received (compound packets count once).
        public var controlPackets: Int
        /// The sender's SSRC (of its first packet).
        public var ssrc: UInt32?
    }

    /// Where to listen: RTP on the port, RTCP on the next; an empty host listens on every
    /// IPv4 address.
    public let endpoint: RTPDestination
    /// The payload format from the session description, when there is one: its parameter sets
    /// describe the stream before any arrive in band, and its payload type filters packets.
    public let payloadFormat: H264PayloadFormat?
    /// How packets are received.
    public let options: Options

    /// A receiver on `endpoint`, with the stream described by `payloadFormat` when known.
    public init(endpoint: RTPDestination, payloadFormat: H264PayloadFormat? = nil, options: Options = Options()) {
        self.endpoint = endpoint
        self.payloadFormat = payloadFormat
        var options = options
        if options.depacketizer.payloadType == nil, let payloadFormat { options.depacketizer.payloadType = payloadFormat.payloadType }
        self.options = options
    }

    /// A receiver for the first H.264 video medium of a session description (what an `.sdp`
    /// file from ffmpeg, GStreamer or `h264kit sdp` describes): its port, its connection
    /// address when that is a loopback address (else every address), its payload format.
    public init(sessionDescription: SessionDescription, options: Options = Options()) throws(NetworkError) {
        guard let medium = sessionDescription.media.first(where: { $0.type == "video" }) else {
            throw NetworkError(.invalidDescription, "the session description has no video medium (m=video)")
        }
        let format = try H264PayloadFormat(medium: medium)
        let address = (medium.connection ?? sessionDescription.connection)?.split(separator: " ").last.map(String.init) ?? ""
        let host = address.hasPrefix("127.") || address == "::1" ? address : ""
        self.init(endpoint: RTPDestination(host: host, port: medium.port), payloadFormat: format, options: options)
    }

    /// Receives until the stream ends (see ``Ending``), handing each sample buffer to `handle`
    /// in decode order as it completes. An error `handle` throws ends receiving and is thrown
    /// as an ``NetworkError/Code/output`` error with its words.
    public func receive(_ handle: (SampleBuffer) throws -> Void) async throws(NetworkError) -> Report {
        do { return try await receiveUntyped(handle) } catch let error as NetworkError { throw error } catch let error as HandlerError {
            throw NetworkError(.output, "\(error.underlying)")
        } catch {
            throw NetworkError(.socket, "receiving on \(endpoint): \(error)")
        }
    }

    /// An error of the caller's handler, told apart from the sockets'.
    struct HandlerError: Error { var underlying: any Error }

    private func receiveUntyped(_ handle: (SampleBuffer) throws -> Void) async throws -> Report {
        let host = endpoint.host.isEmpty ? "0.0.0.0" : endpoint.host
        let rtp = try await RTPSender.datagramChannel(host: host, port: endpoint.port, receiveBufferSize: options.receiveBufferSize)
        let rtcp: NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
        do { rtcp = try await RTPSender.datagramChannel(host: host, port: endpoint.port + 1) } catch {
            try? await rtp.channel.close()
            throw error
        }
        var session = ReceivingSession(options: options, formatDescription: try payloadFormat?.formatDescription())
        let signals = ReceiverSignals()
        try await rtcp.executeThenClose { rtcpIn, _ in
            try await rtp.executeThenClose { rtpIn, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await envelope in rtcpIn {
                            signals.arrived()
                            let packets = envelope.data.withUnsafeReadableBytes { try? RTCPPacket.parse(compound: $0) } ?? []
                            signals.controlPackets.add(1, ordering: .relaxed)
                            if packets.contains(where: { if case .goodbye = $0 { true } else { false } }) {
                                signals.goodbye.store(true, ordering: .releasing)
                            }
                        }
                    }
                    group.addTask {
                        // The watchdog: ends the RTP loop by closing its channel once the sender
                        // said goodbye and its last packets are in, or nothing came for too long.
                        while true {
                            try await Task.sleep(for: .milliseconds(50))
                            let idle = signals.idle
                            if signals.goodbye.load(ordering: .acquiring), idle > .milliseconds(100) {
                                signals.end(.goodbye)
                            } else if idle > options.idleTimeout {
                                signals.end(.idleTimeout)
                            } else {
                                continue
                            }
                            rtp.channel.close(promise: nil)
                            return
                        }
                    }
                    do {
                        for try await envelope in rtpIn {
                            signals.arrived()
                            try envelope.data.withUnsafeReadableBytes { (datagram) throws in try session.receive(datagram, handle) }
                            if let limit = options.sampleLimit, session.samples >= limit {
                                signals.end(.sampleLimit)
                                break
                            }
                        }
                    } catch let error as ChannelError where error == .ioOnClosedChannel || error == .alreadyClosed {
                    } catch is CancellationError {}
                    group.cancelAll()
                }
            }
        }
        try session.finish(handle)
        let ending = signals.ending.withLock { $0 } ?? .cancelled
        return Report(ending: ending, samples: session.samples, depacketizer: session.depacketizer.statistics,
                      droppedBeforeParameterSets: session.builder.droppedBeforeParameterSets, refusedForParameterSets: session.refused, jitter: (session.reception?.jitter ?? 0) / 90_000,
                      controlPackets: signals.controlPackets.load(ordering: .relaxed), ssrc: session.reception?.ssrc)
    }
}

/// What the receiving tasks tell each other: the last arrival, the BYE, why it ended.
private final class ReceiverSignals: Sendable {
    let lastArrival = Atomic<Int64>(ReceiverSignals.nowNanoseconds())
    let goodbye = Atomic<Bool>(false)
    let controlPackets = Atomic<Int>(0)
    let ending = Mutex<RTPReceiver.Ending?>(nil)

    static func nowNanoseconds() -> Int64 { Int64(monotonicSeconds() * 1e9) }

    func arrived() { lastArrival.store(Self.nowNanoseconds(), ordering: .relaxed) }

    var idle: Duration { .nanoseconds(Self.nowNanoseconds() - lastArrival.load(ordering: .relaxed)) }

    func end(_ reason: RTPReceiver.Ending) { ending.withLock { $0 = $0 ?? reason } }
}

/// The receiving state: depacketizer, sample builder, reception statistics.
private struct ReceivingSession {
    var depacketizer: H264Depacketizer
    var builder: RTPSampleBufferBuilder
    var reception: RTPReceptionStatistics?
    var samples = 0
    var refused = 0
    let limit: Int?

    init(options: RTPReceiver.Options, formatDescription: VideoFormatDescription?) {
        depacketizer = H264Depacketizer(configuration: options.depacketizer)
        builder = RTPSampleBufferBuilder(formatDescription: formatDescription)
        limit = options.sampleLimit
    }

    mutating func receive(_ datagram: UnsafeRawBufferPointer, _ handle: (SampleBuffer) throws -> Void) throws {
        let units: [H264Depacketizer.AccessUnit]
        if let packet = try? RTPPacket(parsing: datagram) {
            if reception == nil { reception = RTPReceptionStatistics(ssrc: packet.ssrc) }
            if packet.ssrc == reception?.ssrc {
                reception?.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, arrival: monotonicSeconds())
            }
            units = depacketizer.receive(packet)
        } else {
            units = depacketizer.receive(datagram: datagram)  // counted as invalid
        }
        for unit in units { try build(unit, handle) }
    }

    /// An access unit into samples; one the builder refuses (bad parameter sets in band) is
    /// counted and the stream goes on.
    private mutating func build(_ unit: H264Depacketizer.AccessUnit, _ handle: (SampleBuffer) throws -> Void) throws {
        let built: [SampleBuffer]
        do { built = try builder.append(unit) } catch {
            refused += 1
            return
        }
        try hand(built, handle)
    }

    mutating func finish(_ handle: (SampleBuffer) throws -> Void) throws {
        for unit in depacketizer.finish() { try build(unit, handle) }
        try hand(builder.finish(), handle)
    }

    private mutating func hand(_ built: [SampleBuffer], _ handle: (SampleBuffer) throws -> Void) throws {
        for sample in built {
            if let limit, samples >= limit { return }
            do { try handle(sample) } catch { throw RTPReceiver.HandlerError(underlying: error) }
            samples += 1
        }
    }
}
