/// What a live origin's requests see of it: its renditions' media playlists and windows, the
/// files it has published, and the parts its playlists hint. ``HLSRequestHolding`` decides with
/// it; the origin gives it (under its lock, so a decision and the state it read are one).
public protocol HLSRequestContext {
    /// The rendition whose media playlist is at `path`, if any.
    func rendition(mediaPlaylist path: String) -> String?
    /// A rendition's window (nil for a rendition the origin does not have).
    func window(_ rendition: String) -> HLSLiveWindow?
    /// Whether a file is published at `path`.
    func hasFile(_ path: String) -> Bool
    /// The rendition whose preload hint is at `path`, if any.
    func rendition(hinting path: String) -> String?
}

/// The request logic of a live (Low-Latency) HLS origin as a state machine: which request is
/// answered at once, which is held, for what and until when, and which held requests a change
/// of the windows or the clock releases. No clock, no socket, no continuation: the origin is
/// the HTTP shell that asks ``decide(path:query:lowLatency:in:)``, holds what it is told to
/// with ``hold(_:now:targetDuration:)`` (an ID it keys its waiting request by), and after each
/// publish takes ``release(in:)``, on a timer ``expire(now:)``.
///
/// The rules (RFC 8216bis §6.2.5.2, §6.3.8 and Apple's LL-HLS notes):
/// - a media playlist with `_HLS_msn` (and `_HLS_part`) is held until that segment (part) is in
///   the playlist; `_HLS_part` without `_HLS_msn`, or directives that do not parse, are 400; a
///   request more than one segment (or three target durations of parts) ahead is 400 at once;
///   `_HLS_skip=YES` asks for the delta update;
/// - a request for the part a playlist hints (`EXT-X-PRELOAD-HINT`) is held until it is whole;
/// - a held request waits at most three target durations, then is answered as given up (503
///   for a playlist, 404 for a part); a rendition that ends releases everything held on it;
/// - at most ``limit`` requests are held at once: the next is given up at once (a client cannot
///   hold unbounded memory).
public struct HLSRequestHolding: Sendable {
    /// What a held request waits for.
    public enum Condition: Sendable, Hashable {
        /// A blocking playlist reload: segment `mediaSequence` (part `part`) in the rendition's
        /// playlist.
        case playlist(rendition: String, mediaSequence: Int, part: Int?)
        /// A rendition's hinted part, at `path`, published.
        case part(rendition: String, path: String)

        /// The rendition it waits on.
        public var rendition: String {
            switch self {
            case .playlist(let rendition, _, _), .part(let rendition, _): rendition
            }
        }
    }

    /// What to do with a request.
    public enum Decision: Sendable, Hashable {
        /// Answer now with the file at the path (`delta`: the rendition's delta update;
        /// `blocking`: a blocking playlist reload, whose answer is cacheable for a few parts).
        case answer(delta: Bool, blocking: Bool)
        /// Hold it until `condition` holds, then answer as above.
        case hold(Condition, delta: Bool, blocking: Bool)
        /// 400: delivery directives that do not parse, or that ask too far ahead.
        case badRequest
    }

    /// A held request's key.
    public typealias ID = Int

    /// What the holding has done.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Requests held.
        public var held = 0
        /// Held requests released because what they waited for came (or the rendition ended).
        public var released = 0
        /// Held requests given up at their deadline.
        public var timedOut = 0
        /// Requests not held because ``HLSRequestHolding/limit`` were held already.
        public var refused = 0

        /// Nothing done.
        public init() {}
    }

    /// The most requests held at once.
    public let limit: Int
    /// What has been done.
    public private(set) var statistics = Statistics()
    /// The requests held now.
    public var heldCount: Int { held.count }

    private var held: [ID: (condition: Condition, deadline: Double)] = [:]
    private var nextID: ID = 0

    /// A holding of at most `limit` requests at once.
    public init(limit: Int = 16_384) {
        self.limit = max(0, limit)
    }

    /// What to do with a GET or HEAD of `path` with `query` (nil or empty: none). `lowLatency`:
    /// the origin serves Low-Latency HLS (without it nothing is held and directives are
    /// ignored, as a plain origin ignores a query).
    public static func decide(path: String, query: String?, lowLatency: Bool, in context: some HLSRequestContext) -> Decision {
        guard lowLatency else { return .answer(delta: false, blocking: false) }
        if let rendition = context.rendition(mediaPlaylist: path), let query, !query.isEmpty {
            guard let directives = HLSDeliveryDirectives(query: Substring(query)) else { return .badRequest }
            let delta = directives.skip
            guard let sequence = directives.mediaSequence else { return .answer(delta: delta, blocking: false) }
            guard let window = context.window(rendition), !window.isTooFarAhead(mediaSequence: sequence, part: directives.part) else { return .badRequest }
            let condition = Condition.playlist(rendition: rendition, mediaSequence: sequence, part: directives.part)
            return holds(condition, in: context) ? .answer(delta: delta, blocking: true) : .hold(condition, delta: delta, blocking: true)
        }
        if !context.hasFile(path), let rendition = context.rendition(hinting: path) {
            return .hold(.part(rendition: rendition, path: path), delta: false, blocking: false)
        }
        return .answer(delta: false, blocking: false)
    }

    /// Whether `condition` holds now (a rendition the origin no longer has, or one that has
    /// ended, holds every condition: nothing more will come).
    public static func holds(_ condition: Condition, in context: some HLSRequestContext) -> Bool {
        guard let window = context.window(condition.rendition) else { return true }
        switch condition {
        case .playlist(_, let sequence, let part):
            return window.contains(mediaSequence: sequence, part: part)
        case .part(_, let path):
            return context.hasFile(path) || window.ended
        }
    }

    /// Holds a request for `condition` until three target durations from `now`; its ID, or nil
    /// when ``limit`` requests are held already (answer it as given up).
    public mutating func hold(_ condition: Condition, now: Double, targetDuration: Int) -> ID? {
        guard held.count < limit else {
            statistics.refused += 1
            return nil
        }
        let id = nextID
        nextID &+= 1
        held[id] = (condition, now + 3 * Double(max(1, targetDuration)))
        statistics.held += 1
        return id
    }

    /// The held requests whose condition holds now, taken out (call it after every change of
    /// the windows or the files).
    public mutating func release(in context: some HLSRequestContext) -> [ID] {
        guard !held.isEmpty else { return [] }
        var ready: [ID] = []
        for (id, request) in held where Self.holds(request.condition, in: context) { ready.append(id) }
        for id in ready { held[id] = nil }
        statistics.released += ready.count
        return ready
    }

    /// The held requests past their deadline at `now`, taken out: to be answered as given up.
    public mutating func expire(now: Double) -> [ID] {
        guard !held.isEmpty else { return [] }
        var expired: [ID] = []
        for (id, request) in held where request.deadline <= now { expired.append(id) }
        for id in expired { held[id] = nil }
        statistics.timedOut += expired.count
        return expired
    }
}
