/// When a receiver's stream ends, and what it does meanwhile, as one pure state machine that
/// the three receive loops share: ``RTPReceiver`` (plain RTP), ``RTSPClient`` (a server's
/// stream) and ``RTSPIngest`` (a publisher's). The loops are its shells: they own the sockets,
/// the clock and the sessions, tell it what happened (a datagram arrived, samples were handed
/// on, the session was torn down, the clock ticked) and do the ``Step`` it answers. No clock of
/// its own: every call takes the caller's time, in seconds.
///
/// The order of the ending rules on a tick, the same for every loop: a publisher's TEARDOWN
/// (once its last packets had ``Configuration/teardownSettle`` to come), the sender's BYE (once
/// its session says the stream is over), RTSP over UDP with nothing after
/// ``Configuration/udpTimeout`` (fall back to TCP), then ``Configuration/idleTimeout`` without a
/// datagram. ``Configuration/sampleLimit`` ends it when the samples handed on reach it.
public struct ReceivingPolicy: Sendable {
    /// The limits, in seconds and samples.
    public struct Configuration: Sendable, Hashable {
        /// Seconds without a datagram (RTP or RTCP, any medium) after which the stream ends.
        public var idleTimeout: Double
        /// Pictures to hand on at most (nil: no limit).
        public var sampleLimit: Int?
        /// RTSP over UDP: seconds from the start without an RTP packet after which the client
        /// falls back to TCP (nil: no fallback).
        public var udpTimeout: Double?
        /// Seconds a publisher's last packets have to come after its TEARDOWN (they come over
        /// UDP and may still wait in the socket when the TEARDOWN arrives over TCP).
        public var teardownSettle: Double
        /// Seconds between keep-alive requests (RTSP; nil: none).
        public var keepAliveInterval: Double?
        /// For a loop that ticks often (every 10-50 ms): a gap between two ticks longer than
        /// this is a stall of the receiving process (its tasks or its event loop not run: a
        /// machine with every core taken), not quiet from the sender, and is not counted toward
        /// the idle and UDP timeouts; the datagrams that came meanwhile are still waiting in the
        /// socket or the queue. nil: every second counts.
        public var stallThreshold: Double?

        /// Limits; the settle time is 250 ms unless given.
        public init(idleTimeout: Double, sampleLimit: Int? = nil, udpTimeout: Double? = nil, teardownSettle: Double = 0.25, keepAliveInterval: Double? = nil,
                    stallThreshold: Double? = nil) {
            self.idleTimeout = idleTimeout
            self.sampleLimit = sampleLimit
            self.udpTimeout = udpTimeout
            self.teardownSettle = teardownSettle
            self.keepAliveInterval = keepAliveInterval
            self.stallThreshold = stallThreshold
        }
    }

    /// What the loop does next.
    public enum Step: Sendable, Hashable {
        /// Receive on.
        case goOn
        /// Send a keep-alive request (RTSP `GET_PARAMETER` or `OPTIONS`), then receive on.
        case sendKeepAlive
        /// Give up on UDP: tear the session down and play it again over TCP.
        case fallBackToTCP
        /// The stream is over.
        case end(RTPReceiver.Ending)
    }

    /// The limits.
    public let configuration: Configuration
    /// Pictures handed on so far.
    public private(set) var delivered = 0
    /// Why the stream ended, once it has.
    public private(set) var ending: RTPReceiver.Ending?
    /// Whether an RTP packet (not only RTCP) has arrived.
    public private(set) var anyRTP = false
    /// Seconds of stalls not counted as quiet (``Configuration/stallThreshold``).
    public private(set) var stalledSeconds = 0.0
    private var started: Double
    private var lastTick: Double?
    private var lastArrival: Double
    private var lastKeepAlive: Double
    private var tornDownAt: Double?

    /// A stream starting at `now` (the idle time counts from it).
    public init(configuration: Configuration, now: Double) {
        self.configuration = configuration
        started = now
        lastArrival = now
        lastKeepAlive = now
    }

    /// A datagram arrived at `now`: an RTP packet when `isRTP`, else RTCP.
    public mutating func arrived(at now: Double, isRTP: Bool) {
        lastArrival = max(lastArrival, now)
        if isRTP { anyRTP = true }
    }

    /// Seconds since the last datagram at `now`.
    public func quiet(at now: Double) -> Double { max(0, now - lastArrival) }

    /// The publisher's session was torn down at `now` (its TEARDOWN, or its connection closed);
    /// the stream ends ``Configuration/teardownSettle`` later, on a tick.
    public mutating func tornDown(at now: Double) {
        if tornDownAt == nil { tornDownAt = now }
    }

    /// How many of `count` pictures may still be handed on under the sample limit.
    public func admitted(_ count: Int) -> Int {
        guard let limit = configuration.sampleLimit else { return count }
        return max(0, min(count, limit - delivered))
    }

    /// `count` pictures were handed on; the stream ends when they reach the sample limit.
    public mutating func handed(_ count: Int) -> Step {
        delivered += count
        if let limit = configuration.sampleLimit, delivered >= limit { return end(.sampleLimit) }
        return .goOn
    }

    /// The server's side closed the session or its connection.
    public mutating func closed() -> Step { end(.teardown) }

    /// The receiving task was cancelled: that is why it ended, whatever was decided before.
    public mutating func cancelled() -> Step {
        ending = .cancelled
        return .end(.cancelled)
    }

    /// The clock's tick at `now`. `isOver` is the sender's session's word on its BYE, given the
    /// seconds of quiet (`RTPReceivingSession/isOver(quiet:)`); `overUDP` says the stream comes
    /// over UDP (only then does ``Configuration/udpTimeout`` apply).
    public mutating func tick(now: Double, overUDP: Bool = false, isOver: (Double) -> Bool) -> Step {
        if let ending { return .end(ending) }
        if let threshold = configuration.stallThreshold, let lastTick, now - lastTick > threshold {
            let stall = now - lastTick
            lastArrival = min(now, lastArrival + stall)
            started += stall
            stalledSeconds += stall
        }
        lastTick = now
        if let tornDownAt, now - tornDownAt > configuration.teardownSettle { return end(.teardown) }
        let quiet = quiet(at: now)
        if isOver(quiet) { return end(.goodbye) }
        if overUDP, let udpTimeout = configuration.udpTimeout, !anyRTP, now - started > udpTimeout { return .fallBackToTCP }
        if quiet > configuration.idleTimeout { return end(.idleTimeout) }
        if let interval = configuration.keepAliveInterval, now - lastKeepAlive > interval {
            lastKeepAlive = now
            return .sendKeepAlive
        }
        return .goOn
    }

    private mutating func end(_ why: RTPReceiver.Ending) -> Step {
        if ending == nil { ending = why }
        return .end(ending ?? why)
    }
}
