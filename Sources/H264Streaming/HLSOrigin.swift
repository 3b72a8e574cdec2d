import H264Network
import H264Bitstream
import ISOBMFF
import MPEGTS
import HTTPTypes
import CompressNIO
import Hummingbird
import HummingbirdCore
public import Logging
public import MediaCore
import NIOCore
public import SampleFlow
import SystemIO

/// A live HLS (and DASH) origin: samples in, an HTTP server out. The samples (a file paced as
/// if live, pictures encoded live, a camera's RTSP stream received) are cut into segments by a
/// `MediaSegmenter` as they come; each segment, once whole, goes into memory and into the
/// playlists at once, under one lock, so a playlist never names a segment that is not whole.
///
/// For the path `/live/index.m3u8` the origin serves the multivariant playlist there, and
/// beside it, for the rendition `video` (the default; see ``publish(_:paced:rendition:)`` for
/// several), `index-video.m3u8` (the live media playlist: a window of ``Options/windowSize``
/// segments, `EXT-X-PROGRAM-DATE-TIME` on each, the media sequence rising), its I-frame
/// playlist, `index-video-init.mp4` and the segments, and `index.mpd` (a dynamic DASH MPD of the
/// same CMAF segments). Memory is bounded by the window: a segment that leaves the playlist is
/// kept two target durations more (a player that loaded the playlist just before may still
/// fetch it), then dropped.
///
/// A playlist exists once it names something: until a rendition's first segment (or, in
/// low latency, its first part) is whole, the multivariant playlist and that rendition's media
/// playlist answer `404`, as nginx answers for a file not written yet; a player retries.
/// ``mediaPlaylistURL(port:rendition:)`` gives a media playlist's URL.
///
/// HTTP: GET and HEAD, byte ranges (`206`, `416`), `Content-Type` per file, `Cache-Control`
/// short for playlists and long for segments (they never change), CORS for players on other
/// origins (`OPTIONS` preflights answered). Anything but a published name is `404`, a bad
/// method `405`, a malformed range `416`, each counted; an idle connection is closed after
/// ``Options/idleTimeout``; headers are capped at 16 KiB. Playlists are sent gzip-compressed
/// to a client that accepts it (one compression per playlist version, shared).
///
/// **Low-latency HLS** (``Options/lowLatency``, RFC 8216bis): each segment is also published
/// as parts (fMP4 fragments of at most ``LowLatency/partDuration``) as their samples arrive,
/// listed with `EXT-X-PART` and a preload hint for the next; `EXT-X-SERVER-CONTROL` declares
/// blocking reloads (`_HLS_msn`, `_HLS_part`: held until that part is in the playlist, answered
/// at once then, `400` for a segment more than two ahead, `503` after three target durations)
/// and delta updates (`_HLS_skip=YES`: `EXT-X-SKIP` for segments older than six target
/// durations). A request for the hinted part is held until the part is whole. A held request
/// costs a continuation, no thread; every client gets the same rendering of a playlist
/// version and the same bytes of a part (no copy per client).
public final class HLSOrigin: Sendable {
    /// Low-latency HLS: parts and blocking reloads.
    public struct LowLatency: Sendable, Hashable {
        /// The longest part (`PART-TARGET`): 0.5 s by default. Parts end before a sample that
        /// would make them longer, so a part is at most this and, at a steady frame rate, at
        /// least this less one frame (a segment's last may be shorter).
        public var partDuration: MediaTime

        /// Parts of at most `partDuration` (at least 0.1 s; Apple advises 0.2 s or more).
        public init(partDuration: MediaTime = MediaTime(value: 1, timescale: 2)) {
            self.partDuration = partDuration
        }
    }

    /// Where and how to serve.
    public struct Options: Sendable {
        /// The address to listen on.
        public var host: String
        /// The port (0: one the system picks, told to `onListening`).
        public var port: Int
        /// The multivariant playlist's path; the other files' names are made from it.
        public var path: String
        /// How segments are cut: 2 s by default for live, fMP4.
        public var segmenter: MediaSegmenter.Options
        /// Segments listed in the live playlist (at least 3).
        public var windowSize: Int
        /// Serve a dynamic DASH MPD of the same segments (fMP4 only).
        public var servesDASH: Bool
        /// An idle connection is closed after this long.
        public var idleTimeout: Duration
        /// Low-latency HLS, when set (fMP4 segments only). The window is then made long
        /// enough that a delta update has segments to skip (past `CAN-SKIP-UNTIL`).
        public var lowLatency: LowLatency?

        /// Options for `path` on `host:port`: 2 s fMP4 segments, a window of 6, DASH beside.
        public init(host: String = "127.0.0.1", port: Int = 8080, path: String = "/live/index.m3u8",
                    segmenter: MediaSegmenter.Options = .init(segmentDuration: MediaTime(value: 2, timescale: 1)), windowSize: Int = 6,
                    servesDASH: Bool = true, idleTimeout: Duration = .seconds(30), lowLatency: LowLatency? = nil) {
            self.host = host
            self.port = port
            self.path = path
            self.segmenter = segmenter
            self.windowSize = windowSize
            self.servesDASH = servesDASH
            self.idleTimeout = idleTimeout
            self.lowLatency = lowLatency
        }

        /// `EXT-X-TARGETDURATION`: the segment duration rounded up.
        var targetDuration: Int { max(1, Int(segmenter.segmentDuration.seconds.rounded(.up))) }

        /// The server control a low-latency origin declares: blocking reloads, delta updates
        /// past six target durations, hold-backs of three targets and three parts.
        var serverControl: HLSServerControl? {
            guard let lowLatency else { return nil }
            let target = Double(targetDuration)
            return HLSServerControl(canBlockReload: true, canSkipUntil: 6 * target, holdBack: 3 * target, partHoldBack: 3 * lowLatency.partDuration.seconds)
        }

        /// The window: for low latency, long enough to skip segments in a delta update.
        var effectiveWindowSize: Int {
            guard let skip = serverControl?.canSkipUntil else { return windowSize }
            return max(windowSize, Int((skip / segmenter.segmentDuration.seconds).rounded(.up)) + 3)
        }
    }

    /// What the origin has done.
    public struct Statistics: Sendable, Hashable {
        /// Requests answered.
        public var requests = 0
        /// Answered 200 or 206 with a file.
        public var served = 0
        /// Bytes of files sent.
        public var bytesServed = 0
        /// Answered 404: a name not published (or gone), traversal and junk included.
        public var notFound = 0
        /// Answered 405: a method other than GET, HEAD and OPTIONS.
        public var badMethods = 0
        /// Answered 416: a byte range that is malformed or past the end.
        public var badRanges = 0
        /// Segments published.
        public var segmentsPublished = 0
        /// Segments dropped from memory after leaving the playlist.
        public var segmentsDropped = 0
        /// Segments whose duration rounded past the target duration.
        public var segmentsOverTarget = 0
        /// Parts published (low-latency HLS).
        public var partsPublished = 0
        /// Requests held (blocking reloads, the hinted part) before they were answered.
        public var requestsHeld = 0
        /// Held requests given up after three target durations (`503`, or `404` for a part).
        public var heldRequestsTimedOut = 0
        /// Answered 400: a malformed `_HLS_` query, or a segment more than two ahead.
        public var badRequests = 0
        /// Playlists sent gzip-compressed.
        public var compressedPlaylists = 0
        /// Samples the publishers were given and did not publish: tracks other than a
        /// rendition's picture and its sound, sound decoded before the picture's start.
        public var samplesLeftOut = 0
    }

    /// Where and how to serve.
    public let options: Options
    private let store: OriginStore
    private let logger: Logger

    /// An origin with `options`; throws when they are out of range.
    public init(options: Options = Options(), logger: Logger = Logger(label: "h264kit.origin")) throws(StreamingError) {
        guard (0...65535).contains(options.port) else { throw .invalidOption("port \(options.port): 0-65535") }
        guard options.path.hasPrefix("/"), options.path.lowercased().hasSuffix(".m3u8"), !options.path.contains("/../"), !options.path.contains("?") else {
            throw .invalidOption("\(options.path): the path of the multivariant playlist, /NAME.m3u8")
        }
        guard options.windowSize >= 3, options.windowSize <= 10_000 else { throw .invalidOption("a window of \(options.windowSize) segments: 3 to 10000") }
        if options.servesDASH && options.segmenter.format != .fragmentedMP4 {
            throw .invalidOption("a DASH manifest needs fragmented MP4 segments")
        }
        var options = options
        if let lowLatency = options.lowLatency {
            guard options.segmenter.format == .fragmentedMP4 else { throw .invalidOption("low-latency HLS needs fragmented MP4 segments (parts are fragments)") }
            let part = lowLatency.partDuration
            guard part.isNumeric, part.seconds >= 0.1, part <= options.segmenter.segmentDuration else {
                throw .invalidOption("a part duration of \(part.seconds) s: 0.1 s up to the segment duration (\(options.segmenter.segmentDuration.seconds) s)")
            }
            options.segmenter.partDuration = part
        }
        do { _ = try MediaSegmenter(options: options.segmenter) } catch { throw .output(error) }
        self.options = options
        self.logger = logger
        store = OriginStore(options: options)
    }

    /// What the origin has done so far.
    public var statistics: Statistics { store.statistics }

    /// The multivariant playlist's URL on `port`.
    public func url(port: Int) -> String { origin(port: port) + options.path }

    /// The URL of the media playlist of `rendition` on `port` (`/live/index-video.m3u8` for
    /// the path `/live/index.m3u8`): `404` until the rendition's first segment is whole.
    public func mediaPlaylistURL(port: Int, rendition: String = "video") -> String {
        origin(port: port) + OriginStore.RenditionPaths(base: String(options.path.dropLast(".m3u8".count)), rendition: rendition).media
    }

    private func origin(port: Int) -> String { "http://\(options.host.contains(":") ? "[\(options.host)]" : options.host):\(port)" }

    /// Publishes `samples` (in decoding order) as the live stream until they end (the playlist
    /// then gets `EXT-X-ENDLIST`) or the task is cancelled; `paced`: each sample waits for its
    /// decoding time on the wall clock, as a live source would bring it (a file).
    ///
    /// `rendition` names the rendition (1 to 32 of `a-z` and `0-9`): its files are
    /// `NAME-RENDITION.m3u8` and so on beside the multivariant playlist, which lists every
    /// rendition published (the first is the one a player starts with). Several renditions are
    /// published by calling this once for each, at the same time (a camera's main and sub
    /// streams, encoders of a ladder); each low-latency media playlist then reports where the
    /// others stand (`EXT-X-RENDITION-REPORT`). The DASH MPD describes the first rendition only
    /// (other renditions' segments need not be aligned with it). A rendition is published by
    /// one call at a time, and once: after its end (`EXT-X-ENDLIST`) its name is not taken
    /// again (its media sequence would go back).
    ///
    /// `sound`, an AAC track of `samples`, goes with the picture: in transport stream segments
    /// muxed beside it (the variant's CODECS name both); in fragmented MP4 as a rendition of its
    /// own, ``soundRendition(of:)`` (`index-audio.m3u8`, its parts in low latency, each
    /// independent), listed as an alternative rendition (`EXT-X-MEDIA:TYPE=AUDIO`, group
    /// `audio`, NAME and LANGUAGE from the track's language) that every variant plays (`AUDIO=`,
    /// its codec in CODECS and its bit rate in BANDWIDTH), and in the MPD as an audio
    /// adaptation set. Its segments end within half a frame of the picture's; the multivariant
    /// playlist appears once both have a segment. Samples of other tracks are counted in
    /// ``Statistics/samplesLeftOut``.
    public func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool, rendition: String = "video", sound: TrackDescription? = nil) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        if let sound, sound.format.audio?.isAAC != true {
            throw .invalidOption("track \(sound.id) (\(sound.format.codecName)): the sound beside a rendition is AAC")
        }
        try await publish(samples, paced: paced, rendition: rendition, sound: sound.map { ($0.id, $0.language) })
    }

    /// ``publish(_:paced:rendition:sound:)`` with the sound named by its track (and language):
    /// its format comes with its first frame (a live source's).
    func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool, rendition: String, sound: (id: TrackID, language: String?)?) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        try Self.checkName(rendition)
        let soundName = sound != nil && options.segmenter.format == .fragmentedMP4 ? Self.soundRendition(of: rendition) : nil
        guard store.beginPublishing(rendition) else { throw .invalidOption("rendition \(rendition) is being published, or has ended") }
        defer { store.endPublishing(rendition) }
        if let soundName, let sound {
            guard store.beginPublishing(soundName, sound: sound) else { throw .invalidOption("rendition \(soundName) (the sound of \(rendition)) is being published, or has ended") }
        }
        defer { if let soundName { store.endPublishing(soundName) } }
        var publisher = try LiveRenditionPublisher(rendition: rendition, options: options.segmenter, lowLatency: options.lowLatency != nil, sound: sound?.id,
                                                   soundRendition: soundName)
        var start: (wall: Double, decode: MediaTime)?
        do {
            for try await sample in samples {
                if Task.isCancelled { break }
                if paced, sample.decodeTime.isNumeric {
                    if let start {
                        let due = start.wall + (sample.decodeTime - start.decode).seconds
                        let wait = due - WallClock.seconds
                        if wait > 0 { try await Task.sleep(for: .microseconds(Int(wait * 1_000_000))) }
                    } else {
                        start = (WallClock.seconds, sample.decodeTime)
                    }
                }
                try publisher.append(sample, entered: WallClock.seconds, store: store)
            }
        } catch is CancellationError {
        } catch let error as StreamingError {
            throw error
        } catch {
            throw .sending(error)
        }
        try publisher.finish(store: store)
        store.countLeftOut(publisher.samplesLeftOut)
        if !Task.isCancelled {
            store.end(rendition)
            if let soundName { store.end(soundName) }
        }
    }

    /// The name of the sound rendition published beside `rendition` in fragmented MP4:
    /// `audio` beside `video`, else the rendition's name and `audio` (`video2audio`).
    public static func soundRendition(of rendition: String) -> String {
        rendition == "video" ? "audio" : rendition + "audio"
    }

    /// A rendition's name: 1 to 32 of `a-z` and `0-9` (it goes in file names).
    private static func checkName(_ rendition: String) throws(StreamingError) {
        guard (1...32).contains(rendition.utf8.count), rendition.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }) else {
            throw .invalidOption("rendition \"\(rendition)\": 1 to 32 of a-z and 0-9")
        }
    }

    /// Serves until the task is cancelled; `onListening` gets the multivariant playlist's URL
    /// once the server listens (with the port the system chose for port 0).
    public func run(onListening: @escaping @Sendable (String) -> Void = { _ in }) async throws(StreamingError) {
        raiseDescriptorLimit()
        let router = Router(context: BasicRequestContext.self)
        let store = self.store
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in await store.respond(to: request) }
        router.on("**", method: .get, use: handler)
        router.on("**", method: .head, use: handler)
        router.on("**", method: .options, use: handler)
        router.on("**", method: .post, use: handler)
        router.on("**", method: .put, use: handler)
        router.on("**", method: .delete, use: handler)
        var decoding = HTTP1Channel.Configuration.DecoderConfiguration()
        decoding.maxHeaderFieldSize = 16 << 10
        decoding.maxHeaderListSize = 16 << 10
        decoding.maxHeaderFieldCount = 100
        let idle = TimeAmount.nanoseconds(Int64(options.idleTimeout.components.seconds) * 1_000_000_000 + options.idleTimeout.components.attoseconds / 1_000_000_000)
        let host = options.host, port = options.port
        var frameworkLogger = logger
        if logger.logLevel > .debug { frameworkLogger.logLevel = .critical }
        let application = Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: idle, httpDecoderConfiguration: decoding)),
            configuration: .init(address: .hostname(host, port: port), serverName: "H264Kit"),
            onServerRunning: { [self] channel in onListening(url(port: channel.localAddress?.port ?? port)) },
            logger: frameworkLogger
        )
        // Held requests past their time are answered by a sweep ten times a second.
        let sweeper = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                store.expireHeldRequests(now: WallClock.seconds)
            }
        }
        defer { sweeper.cancel() }
        do {
            try await application.run()
        } catch is CancellationError {
        } catch {
            throw .socket("HLS origin on \(host):\(port)", underlying: error)
        }
    }
}

/// The publisher's side: the chunks a segmenter hands out gathered into parts (low latency)
/// and segments, each published to the store as it is whole.
struct SegmentGathering {
    let lowLatency: Bool
    let rendition: String
    /// The bytes of the segment being made that are in no part yet.
    private var pending = ByteBuffer()
    /// The parts of the segment being made (low latency).
    private var parts: [ByteBuffer] = []
    /// When the segment being made started: its first sample's date on the program clock.
    private var segmentStart: Double?
    /// Dates segments from the media timeline (``WallClockMapping``).
    private var clock = WallClockMapping()

    init(lowLatency: Bool, rendition: String) {
        self.lowLatency = lowLatency
        self.rendition = rendition
    }

    /// Publishes what the segmenter made of the sample that entered at `sampleEntered` (with
    /// `decodeTime`; nil when the segmenter was finished). `date`, when given, dates it instead
    /// (a sound dated on its picture's mapping, ``date(ofMediaTime:)``).
    mutating func take(_ made: MediaSegmenter.Output, from segmenter: MediaSegmenter, sampleEntered: Double, decodeTime: MediaTime?, date given: Double? = nil,
                       into store: OriginStore) {
        let date = given ?? decodeTime.flatMap { $0.isNumeric ? clock.date(ofMediaTime: $0.seconds, arrival: sampleEntered) : nil } ?? sampleEntered
        if segmentStart == nil, !made.chunks.isEmpty { segmentStart = date }
        var chunks = made.chunks[...]
        // The chunks of each completed segment, then its report; then the next segment's.
        for report in made.completed {
            while let chunk = chunks.first, chunk.segment == report.index {
                add(chunk, segmenter: segmenter, store: store)
                chunks.removeFirst()
            }
            var bytes: ByteBuffer
            if lowLatency {
                bytes = ByteBuffer()
                bytes.reserveCapacity(parts.map(\.readableBytes).reduce(0, +) + pending.readableBytes)
                for part in parts { bytes.writeImmutableBuffer(part) }
                bytes.writeBuffer(&pending)
                parts = []
            } else {
                // An exact-size copy: the gathering buffer grew by doubling, and a window of such
                // buffers would keep up to twice the segments' bytes (measured: an origin of a
                // 40 Mbit/s stream drifting from 110 to 190 MB over ten minutes).
                bytes = ByteBuffer()
                bytes.reserveCapacity(pending.readableBytes)
                bytes.writeBuffer(&pending)
            }
            let size = bytes.readableBytes
            pending = ByteBuffer()
            if !lowLatency { pending.reserveCapacity(size + size / 4) }
            store.publish(bytes, rendition: rendition, report: report, initialization: segmenter.initializationSegment, format: Self.format(of: segmenter),
                          timescale: segmenter.timescale, startedAt: segmentStart ?? date)
            segmentStart = date
        }
        for chunk in chunks { add(chunk, segmenter: segmenter, store: store) }
    }

    /// The date of `mediaTime` (seconds) on this rendition's mapping, without noting anything;
    /// nil before its first sample.
    func date(ofMediaTime mediaTime: Double) -> Double? {
        clock.date(ofMediaTime: mediaTime)
    }

    /// What the segmenter cuts: its picture's format, or its sound's.
    static func format(of segmenter: MediaSegmenter) -> FormatDescription? {
        segmenter.formatDescription.map { .video($0) } ?? segmenter.audioFormatDescription.map { .audio($0) }
    }

    private mutating func add(_ chunk: MediaSegmenter.Chunk, segmenter: MediaSegmenter, store: OriginStore) {
        chunk.data.forEachSegment { pending.writeBytes($0) }
        guard lowLatency, let fragment = chunk.completedFragment else { return }
        let part = pending
        pending = ByteBuffer()
        parts.append(part)
        store.publishPart(part, rendition: rendition, segment: chunk.segment, report: fragment, initialization: segmenter.initializationSegment, format: Self.format(of: segmenter),
                          timescale: segmenter.timescale, startedAt: segmentStart ?? WallClock.seconds)
    }
}

/// The origin's files and playlists, shared by the publishers and every request: one lock,
/// updated once per part or segment; a request copies out a reference to the bytes, never the
/// bytes. Requests held for a part wait on continuations, resumed by the publish that brings
/// it or by the sweep that gives up on them.
final class OriginStore: Sendable {
    struct File {
        var bytes: ByteBuffer
        var contentType: String
        var cacheControl: String
        /// The bytes gzip-compressed (playlists), sent to a client that accepts it.
        var gzipped: ByteBuffer?
    }

    /// What a held request waits for.
    enum Condition {
        /// A blocking playlist reload: segment `mediaSequence` (part `part`) in the rendition's
        /// playlist.
        case playlist(rendition: String, mediaSequence: Int, part: Int?)
        /// The hinted part of a rendition, published.
        case file(rendition: String, path: String)
    }

    struct Waiter {
        var condition: Condition
        var deadline: Double
        var continuation: CheckedContinuation<Bool, Never>
    }

    /// The paths of a rendition's files.
    struct RenditionPaths {
        var media: String
        var iFrames: String
        var initialization: String
        /// Segments and parts: this, then `-00012.m4s` or `-part00034.m4s`.
        var prefix: String

        init(base: String, rendition: String) {
            prefix = base + "-" + rendition
            media = prefix + ".m3u8"
            iFrames = prefix + "-iframes.m3u8"
            initialization = prefix + "-init.mp4"
        }
    }

    /// A rendition's window and what goes with it.
    struct Rendition {
        var paths: RenditionPaths
        var window: HLSLiveWindow
        /// The media playlist's delta update (low latency).
        var delta: File?
        /// The parts' paths of each segment in memory, by media sequence number.
        var partPaths: [Int: [String]] = [:]
        /// Parts published so far: the next part's number.
        var partCount = 0
        var streamStart: Double?
        var format: FormatDescription?
        var timescale: Int32?
        var publishing = false
        /// For a rendition of sound (fragmented MP4): its track and language, listed as an
        /// alternative rendition in the group every variant plays.
        var sound: (id: TrackID, language: String?)?
        /// For a rendition of a picture whose transport stream segments carry sound muxed
        /// beside it: that sound (its codec in the variant's CODECS).
        var muxedSound: AudioFormatDescription?
    }

    struct State {
        var files: [String: File] = [:]
        /// The renditions, in the order they were first published.
        var renditions: [String: Rendition] = [:]
        var order: [String] = []
        /// Media playlist paths to renditions.
        var mediaPaths: [String: String] = [:]
        /// Segments (and their parts) gone from a playlist, with when to drop them (seconds on
        /// the wall clock).
        var leaving: [(paths: [String], at: Double)] = []
        var statistics = HLSOrigin.Statistics()
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    let options: HLSOrigin.Options
    let paths: (multivariant: String, base: String, dash: String)
    /// The directory the files are in, with its trailing slash.
    let directory: String
    private let state: Locked<State>

    init(options: HLSOrigin.Options) {
        self.options = options
        let base = String(options.path.dropLast(".m3u8".count))
        paths = (options.path, base, base + ".mpd")
        directory = String(options.path[...(options.path.lastIndex(of: "/") ?? options.path.startIndex)])
        state = Locked(State())
    }

    /// The last path component.
    static func name(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    var statistics: HLSOrigin.Statistics { state.withLock { $0.statistics } }

    static func padded(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// The path of a segment of the rendition.
    func segmentPath(_ rendition: Rendition, _ index: Int, _ format: MediaSegmenter.Format) -> String {
        rendition.paths.prefix + "-" + Self.padded(index) + "." + format.fileExtension
    }

    /// The path of part `number` of the rendition (counted over the stream, so the next one's
    /// name is known before it is known which segment it starts or continues).
    func partPath(_ rendition: Rendition, _ number: Int) -> String {
        rendition.paths.prefix + "-part" + Self.padded(number) + ".m4s"
    }

    /// A rendition starts publishing (false: it is already); `sound` for a rendition of sound,
    /// `muxedSound` for a picture with sound in its segments.
    func beginPublishing(_ name: String, sound: (id: TrackID, language: String?)? = nil) -> Bool {
        state.withLock { state in
            if state.renditions[name] == nil {
                let renditionPaths = RenditionPaths(base: paths.base, rendition: name)
                var window = HLSLiveWindow(size: options.effectiveWindowSize, targetDuration: options.targetDuration,
                                           map: options.segmenter.format == .fragmentedMP4 ? Self.name(renditionPaths.initialization) : nil)
                window.partTarget = options.lowLatency?.partDuration.seconds
                window.serverControl = options.serverControl
                var rendition = Rendition(paths: renditionPaths, window: window)
                if options.lowLatency != nil { rendition.window.preloadHint = Self.name(partPath(rendition, 0)) }
                state.renditions[name] = rendition
                state.order.append(name)
                state.mediaPaths[renditionPaths.media] = name
            }
            guard let rendition = state.renditions[name], !rendition.publishing, !rendition.window.ended else { return false }
            state.renditions[name]?.publishing = true
            state.renditions[name]?.sound = sound
            return true
        }
    }

    /// The sound muxed in a rendition's transport stream segments (its codec goes in CODECS).
    func noteMuxedSound(_ name: String, format: AudioFormatDescription) {
        state.withLock { $0.renditions[name]?.muxedSound = format }
    }

    /// Counts samples a publisher was given and did not publish.
    func countLeftOut(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.statistics.samplesLeftOut += count }
    }

    /// A rendition's publisher is done.
    func endPublishing(_ name: String) {
        state.withLock { $0.renditions[name]?.publishing = false }
    }

    /// Takes what the first part or segment tells of the stream.
    private func noteStream(_ state: inout State, _ name: String, initialization: [UInt8]?, format: FormatDescription?, timescale: Int32?, startedAt: Double) {
        guard var rendition = state.renditions[name] else { return }
        if rendition.streamStart == nil { rendition.streamStart = startedAt }
        if rendition.format == nil { rendition.format = format }
        if rendition.timescale == nil { rendition.timescale = timescale }
        if let initialization, state.files[rendition.paths.initialization] == nil {
            state.files[rendition.paths.initialization] = File(bytes: ByteBuffer(bytes: initialization), contentType: "video/mp4", cacheControl: "public, max-age=86400")
        }
        state.renditions[name] = rendition
    }

    /// Puts a whole part in memory and in the playlist, at once (low latency).
    func publishPart(_ bytes: ByteBuffer, rendition name: String, segment: Int, report: MediaSegmenter.FragmentReport, initialization: [UInt8]?,
                     format: FormatDescription?, timescale: Int32?, startedAt: Double) {
        let now = WallClock.seconds
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            noteStream(&state, name, initialization: initialization, format: format, timescale: timescale, startedAt: startedAt)
            guard var rendition = state.renditions[name] else { return [] }
            let path = partPath(rendition, rendition.partCount)
            rendition.partCount += 1
            state.files[path] = File(bytes: bytes, contentType: MediaSegmenter.Format.fragmentedMP4.contentType, cacheControl: "public, max-age=86400, immutable")
            rendition.partPaths[segment, default: []].append(path)
            rendition.window.appendPart(HLSPartialSegment(uri: Self.name(path), duration: report.duration.seconds, independent: report.startsWithSyncSample),
                                        programDateTime: startedAt)
            rendition.window.preloadHint = Self.name(partPath(rendition, rendition.partCount))
            state.renditions[name] = rendition
            state.statistics.partsPublished += 1
            render(&state, changed: name, now: now)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Puts a whole segment in memory and in the playlists, at once.
    func publish(_ bytes: ByteBuffer, rendition name: String, report: MediaSegmenter.SegmentReport, initialization: [UInt8]?, format: FormatDescription?,
                 timescale: Int32?, startedAt: Double) {
        let now = WallClock.seconds
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            noteStream(&state, name, initialization: initialization, format: format, timescale: timescale, startedAt: startedAt)
            guard var rendition = state.renditions[name] else { return [] }
            let path = segmentPath(rendition, report.index, report.format)
            let entry = HLSLiveWindow.Entry(
                sequence: report.index, uri: Self.name(path), duration: report.duration.seconds, programDateTime: startedAt, independent: report.isIndependent,
                byteCount: report.byteCount,
                iFrames: rendition.sound != nil ? [] : report.syncSamples.map { .init(duration: $0.duration.seconds, byteRange: $0.byteRange) },
                timeline: timescale.map { (report.earliestPresentationTime.converted(toTimescale: $0).value, report.duration.converted(toTimescale: $0).value) })
            state.files[path] = File(bytes: bytes, contentType: report.format.contentType, cacheControl: "public, max-age=86400, immutable")
            state.statistics.segmentsPublished += 1
            let removed = rendition.window.append(entry)
            let grace = Double(2 * rendition.window.targetDuration)
            for gone in removed {
                state.leaving.append(([directory + gone.uri] + (rendition.partPaths.removeValue(forKey: gone.sequence) ?? []), now + grace))
            }
            state.renditions[name] = rendition
            state.statistics.segmentsOverTarget = state.renditions.values.map(\.window.segmentsOverTarget).reduce(0, +)
            while let first = state.leaving.first, first.at <= now {
                for path in first.paths { state.files[path] = nil }
                state.leaving.removeFirst()
                state.statistics.segmentsDropped += 1
            }
            render(&state, changed: name, now: now)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// A rendition's stream ended: its playlists say so, and every request held for it is
    /// answered.
    func end(_ name: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.renditions[name]?.window.end()
            render(&state, changed: name, now: WallClock.seconds)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// The held requests whose condition now holds, taken out.
    private func takeReady(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        guard !state.waiters.isEmpty else { return [] }
        var ready: [CheckedContinuation<Bool, Never>] = []
        for (id, waiter) in state.waiters where Self.holds(waiter.condition, in: state) {
            ready.append(waiter.continuation)
            state.waiters[id] = nil
        }
        return ready
    }

    private static func holds(_ condition: Condition, in state: State) -> Bool {
        switch condition {
        case .playlist(let name, let sequence, let part):
            return state.renditions[name]?.window.contains(mediaSequence: sequence, part: part) ?? true
        case .file(let name, let path):
            return state.files[path] != nil || (state.renditions[name]?.window.ended ?? true)
        }
    }

    /// Answers the held requests past their deadline (false: given up).
    func expireHeldRequests(now: Double) {
        let expired = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.waiters.isEmpty else { return [] }
            var expired: [CheckedContinuation<Bool, Never>] = []
            for (id, waiter) in state.waiters where waiter.deadline <= now {
                expired.append(waiter.continuation)
                state.waiters[id] = nil
            }
            state.statistics.heldRequestsTimedOut += expired.count
            return expired
        }
        for continuation in expired { continuation.resume(returning: false) }
    }

    /// Waits until `condition` holds (true) or three target durations pass (false).
    private func wait(for condition: Condition) async -> Bool {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if Self.holds(condition, in: state) { return true }
                let id = state.nextWaiter
                state.nextWaiter += 1
                let name: String
                switch condition {
                case .playlist(let rendition, _, _), .file(let rendition, _): name = rendition
                }
                let target = state.renditions[name]?.window.targetDuration ?? options.targetDuration
                state.waiters[id] = Waiter(condition: condition, deadline: WallClock.seconds + 3 * Double(target), continuation: continuation)
                state.statistics.requestsHeld += 1
                return false
            }
            if ready { continuation.resume(returning: true) }
        }
    }

    /// A playlist file: its text, and the text gzip-compressed.
    private static func playlistFile(_ text: String, contentType: String = "application/vnd.apple.mpegurl", cacheControl: String) -> File {
        var bytes = ByteBuffer(string: text)
        var copy = bytes
        let gzipped = try? copy.compress(with: .gzip())
        bytes.moveReaderIndex(to: 0)
        return File(bytes: bytes, contentType: contentType, cacheControl: cacheControl, gzipped: gzipped)
    }

    /// Renders the playlists of the rendition that changed (and, for low latency, the others'
    /// media playlists, whose rendition reports name it), the multivariant playlist and the MPD.
    private func render(_ state: inout State, changed: String, now: Double) {
        // A playlist changes with each part (low latency) or segment: a cache keeps it a second
        // at most; a blocking reload's answer is the playlist once that part is there, which a
        // later version only extends (it is sent with a longer life, in respond).
        let playlist = "public, max-age=1"
        let lowLatency = options.lowLatency != nil
        for name in state.order where name == changed || (lowLatency && state.order.count > 1) {
            guard var rendition = state.renditions[name] else { continue }
            let reports: [HLSRenditionReport] = lowLatency ? state.order.filter { $0 != name }.compactMap { other in
                guard let last = state.renditions[other]?.window.lastPart, let paths = state.renditions[other]?.paths else { return nil }
                return HLSRenditionReport(uri: Self.name(paths.media), lastMediaSequence: last.mediaSequence, lastPart: last.part)
            } : []
            var media = rendition.window.mediaPlaylist
            media.renditionReports = reports
            state.files[rendition.paths.media] = Self.playlistFile(media.rendered, cacheControl: playlist)
            if lowLatency {
                var delta = rendition.window.deltaPlaylist
                delta.renditionReports = reports
                rendition.delta = Self.playlistFile(delta.rendered, cacheControl: playlist)
            }
            if name == changed, rendition.sound == nil {
                state.files[rendition.paths.iFrames] = Self.playlistFile(rendition.window.iFramePlaylist.rendered, cacheControl: playlist)
            }
            state.renditions[name] = rendition
        }
        // The sound renditions (fragmented MP4), each an alternative in the group `audio` that
        // every variant plays; the multivariant playlist waits until each has a segment (a
        // player reads it once: a group listed later would never be heard).
        var alternatives: [HLSMultivariantPlaylist.AlternativeRendition] = []
        var soundCodecs: [String] = []
        var soundRates = (peak: 0, average: 0)
        for name in state.order {
            guard let rendition = state.renditions[name], let track = rendition.sound else { continue }
            guard let format = rendition.format?.audio, !rendition.window.entries.isEmpty else { return }
            alternatives.append(.init(soundOf: track.id, language: track.language, format: format, uri: Self.name(rendition.paths.media), isDefault: alternatives.isEmpty))
            if !soundCodecs.contains(format.codecString) { soundCodecs.append(format.codecString) }
            let rates = rendition.window.bitRates
            soundRates = (max(soundRates.peak, rates.peak), max(soundRates.average, rates.average))
        }
        var variants: [HLSMultivariantPlaylist.Variant] = []
        var iFrameVariants: [HLSMultivariantPlaylist.Variant] = []
        var independent = true
        for name in state.order {
            guard let rendition = state.renditions[name], let format = rendition.format?.video, !rendition.window.entries.isEmpty else { continue }
            let rates = rendition.window.bitRates
            let size = (width: format.width, height: format.height)
            var variant = HLSMultivariantPlaylist.Variant(uri: Self.name(rendition.paths.media), bandwidth: rates.peak + soundRates.peak,
                                                          averageBandwidth: rates.average + soundRates.average,
                                                          codecs: [format.codecString] + (rendition.muxedSound.map { [$0.codecString] } ?? []) + soundCodecs,
                                                          resolution: size, frameRate: format.sps.frameRate?.framesPerSecond)
            if !alternatives.isEmpty { variant.audioGroup = alternatives[0].groupID }
            variants.append(variant)
            // Low latency: no I-frame variant (its playlist has no parts and no server control,
            // which every media playlist beside low-latency ones must have, RFC 8216bis §6.2.4).
            if !lowLatency {
                let iFrameRate = rendition.window.entries.flatMap { entry in entry.iFrames.map { Int(Double($0.byteRange.count * 8) / max($0.duration, 0.001)) } }.max() ?? 1
                iFrameVariants.append(.init(uri: Self.name(rendition.paths.iFrames), bandwidth: max(1, iFrameRate), codecs: [format.codecString], resolution: size))
            }
            independent = independent && rendition.window.allIndependent
        }
        guard !variants.isEmpty else { return }
        let text = HLSMultivariantPlaylist(variants: variants, iFrameVariants: iFrameVariants, independentSegments: independent, alternativeRenditions: alternatives).rendered
        if state.files[paths.multivariant].map({ String(buffer: $0.bytes) }) != text {
            state.files[paths.multivariant] = Self.playlistFile(text, cacheControl: playlist)
        }
        // The MPD: the first picture's rendition (the others' segments need not align with it)
        // and the first sound's.
        guard options.servesDASH, let first = state.order.first(where: { state.renditions[$0]?.sound == nil }), let rendition = state.renditions[first],
              let format = rendition.format?.video, let timescale = rendition.timescale, let start = rendition.streamStart, !rendition.window.entries.isEmpty else { return }
        let rate = format.sps.frameRate
        let representation = DASHManifest.Representation(
            id: first, codecs: format.codecString, width: format.width, height: format.height, frameRate: rate.map { "\($0.numerator)/\($0.denominator)" },
            bandwidth: rendition.window.bitRates.peak, timescale: Int(timescale), initialization: Self.name(rendition.paths.initialization),
            media: Self.name(rendition.paths.prefix) + "-$Number%05d$." + options.segmenter.format.fileExtension,
            startNumber: rendition.window.mediaSequence, segments: rendition.window.entries.compactMap(\.timeline))
        var sounds: [DASHManifest.AudioRepresentation] = []
        if let name = state.order.first(where: { state.renditions[$0]?.sound != nil }), let sound = state.renditions[name], let track = sound.sound,
           let audio = sound.format?.audio, let soundScale = sound.timescale {
            sounds.append(DASHManifest.AudioRepresentation(
                id: name, codecs: audio.codecString, language: LanguageTag(track.language)?.tag, sampleRate: audio.sampleRate, channelCount: audio.channelCount,
                bandwidth: sound.window.bitRates.peak, timescale: Int(soundScale), initialization: Self.name(sound.paths.initialization),
                media: Self.name(sound.paths.prefix) + "-$Number%05d$.m4s", startNumber: sound.window.mediaSequence, segments: sound.window.entries.compactMap(\.timeline)))
        }
        let segmentSeconds = options.segmenter.segmentDuration.seconds
        let seconds = rendition.window.entries.map(\.duration).reduce(0, +)
        let kind: DASHManifest.Kind = rendition.window.ended
            ? .static(duration: seconds)
            : .dynamic(availabilityStartTime: start, minimumUpdatePeriod: segmentSeconds, timeShiftBufferDepth: seconds, publishTime: now)
        state.files[paths.dash] = Self.playlistFile(DASHManifest(kind: kind, minimumBufferTime: segmentSeconds, representations: [representation],
                                                                 audioRepresentations: sounds).rendered,
                                                    contentType: "application/dash+xml", cacheControl: playlist)
    }

    // MARK: HTTP

    private static let cors: HTTPFields = [.accessControlAllowOrigin: "*", .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges"]

    /// The answer to a request: a published file (whole or a range), a held request's answer
    /// once it can be given, or a 4xx/5xx, counted.
    func respond(to request: Request) async -> Response {
        let method = request.method
        var headers = Self.cors
        switch method {
        case .options:
            headers[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
            headers[.accessControlAllowHeaders] = "Range"
            headers[.accessControlMaxAge] = "86400"
            state.withLock { $0.statistics.requests += 1 }
            return Response(status: .noContent, headers: headers)
        case .get, .head:
            break
        default:
            state.withLock { $0.statistics.requests += 1; $0.statistics.badMethods += 1 }
            headers[.allow] = "GET, HEAD, OPTIONS"
            return Response(status: .methodNotAllowed, headers: headers)
        }
        let path = request.uri.path
        state.withLock { $0.statistics.requests += 1 }
        var directives: HLSDeliveryDirectives?
        var blocking = false
        let mediaOf = options.lowLatency == nil ? nil : state.withLock { $0.mediaPaths[path] }
        if let rendition = mediaOf, let query = request.uri.query, !query.isEmpty {
            guard let parsed = HLSDeliveryDirectives(query: Substring(query)) else { return badRequest(headers) }
            directives = parsed
            if let sequence = parsed.mediaSequence {
                if state.withLock({ $0.renditions[rendition]?.window.isTooFarAhead(mediaSequence: sequence, part: parsed.part) ?? true }) { return badRequest(headers) }
                blocking = true
                guard await wait(for: .playlist(rendition: rendition, mediaSequence: sequence, part: parsed.part)) else {
                    return Response(status: .serviceUnavailable, headers: headers)
                }
            }
        } else if options.lowLatency != nil, path.hasSuffix(".m4s"), path.contains("-part") {
            // A rendition's hinted part: held until it is whole.
            let hinted = state.withLock { state -> String? in
                guard state.files[path] == nil else { return nil }
                return state.order.first { name in state.renditions[name]?.window.preloadHint.map { directory + $0 } == path }
            }
            if let hinted, await !wait(for: .file(rendition: hinted, path: path)) {
                state.withLock { $0.statistics.notFound += 1 }
                return Response(status: .notFound, headers: headers)
            }
        }
        let accepting = request.headers[.acceptEncoding].map { $0.lowercased().contains("gzip") } ?? false
        let file = state.withLock { state -> File? in
            if directives?.skip == true, let rendition = mediaOf { return state.renditions[rendition]?.delta }
            return state.files[path]
        }
        guard var file else {
            state.withLock { $0.statistics.notFound += 1 }
            return Response(status: .notFound, headers: headers)
        }
        if blocking, let part = options.lowLatency?.partDuration.seconds {
            file.cacheControl = "public, max-age=\(max(1, Int(6 * part)))"
        }
        headers[.contentType] = file.contentType
        headers[.cacheControl] = file.cacheControl
        headers[.acceptRanges] = "bytes"
        var stored = file.bytes
        if let gzipped = file.gzipped {
            headers[.vary] = "Accept-Encoding"
            if accepting {
                stored = gzipped
                headers[.contentEncoding] = "gzip"
                state.withLock { $0.statistics.compressedPlaylists += 1 }
            }
        }
        var body = stored
        var status = HTTPResponse.Status.ok
        if let range = request.headers[.range] {
            guard let (start, end) = Self.byteRange(range, size: stored.readableBytes) else {
                state.withLock { $0.statistics.badRanges += 1 }
                headers[.contentRange] = "bytes */\(stored.readableBytes)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            body = stored.getSlice(at: stored.readerIndex + start, length: end - start + 1) ?? ByteBuffer()
            headers[.contentRange] = "bytes \(start)-\(end)/\(stored.readableBytes)"
            status = .partialContent
        }
        headers[.contentLength] = String(body.readableBytes)
        let count = body.readableBytes
        state.withLock { $0.statistics.served += 1; $0.statistics.bytesServed += method == .head ? 0 : count }
        return Response(status: status, headers: headers, body: method == .head ? .init() : .init(byteBuffer: body))
    }

    private func badRequest(_ headers: HTTPFields) -> Response {
        state.withLock { $0.statistics.badRequests += 1 }
        return Response(status: .badRequest, headers: headers)
    }

    /// The first and last byte of a `Range: bytes=…` header (one range: `a-b`, `a-`, `-n`) in a
    /// file of `size` bytes; nil when malformed or past the end.
    static func byteRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        guard first.count <= 18, last.count <= 18 else { return nil }
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return (max(0, size - suffix), size - 1)
        }
        guard let start = Int(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return (start, size - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return (start, min(end, size - 1))
    }
}
