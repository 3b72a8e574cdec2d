public import H264Network
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
public import Logging
public import MediaCore
import NIOCore
import NIOSSL
public import SampleFlow
import SystemIO

/// A live HLS (and DASH) origin: samples in, an HTTP server out. The samples (a file paced as
/// if live, pictures encoded live, a camera's RTSP stream received) are cut into segments by a
/// `MediaSegmenter` as they come; each segment, once whole, goes into memory and into the
/// playlists at once, under one lock, so a playlist never names a segment that is not whole.
///
/// For the path `/live/index.m3u8` the origin serves the multivariant playlist there, and
/// beside it, for the rendition `video` (the default; see ``publish(_:paced:rendition:sound:)`` for
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
        /// When set, only requests whose path begins with a valid token of this key are
        /// answered (`URLSigningKey`); any other gets 403 and is counted
        /// (``Statistics/forbidden``). Hand out ``HLSOrigin/url(port:signedBy:expires:)``.
        public var accessKey: URLSigningKey?
        /// HTTP/1.1 in the clear (the default), TLS with HTTP/2 and HTTP/1.1 by ALPN, or
        /// cleartext HTTP/2 for a proxy in front.
        public var transport: HTTPTransport = .cleartext
        /// With TLS, a connection that has not finished its handshake this long after it
        /// opened is closed (and counted, ``Statistics/tlsHandshakesTimedOut``).
        public var tlsHandshakeTimeout: Duration = .seconds(10)

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
        /// Requests given up at once because as many as the origin holds were held already
        /// (H264Network's `HLSRequestHolding.limit`).
        public var heldRequestsRefused = 0
        /// Answered 400: a malformed `_HLS_` query, or a segment more than two ahead.
        public var badRequests = 0
        /// Answered 403: no token, or a malformed, wrong or expired one, when the origin has an
        /// access key.
        public var forbidden = 0
        /// TLS handshakes completed.
        public var tlsHandshakes = 0
        /// TLS handshakes that failed, or whose connection closed before the end (counted, not
        /// logged one by one).
        public var tlsHandshakesFailed = 0
        /// TLS connections closed for not finishing the handshake within
        /// ``Options/tlsHandshakeTimeout``.
        public var tlsHandshakesTimedOut = 0
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
    /// The TLS context, loaded and checked at init and at each reload (``HTTPTransport/tls(_:)``).
    private let tls: TLSContextStore?

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
        if case .tls(let files) = options.transport { tls = try TLSContextStore(files: files) } else { tls = nil }
        self.options = options
        self.logger = logger
        store = OriginStore(options: options)
    }

    /// What the origin has done so far.
    public var statistics: Statistics { store.statistics }

    /// The multivariant playlist's URL on `port`.
    public func url(port: Int) -> String { origin(port: port) + options.path }

    /// The multivariant playlist's URL on `port`, signed with `key` (the origin's
    /// ``Options/accessKey``) until `expires` (Unix time): it opens the playlist's folder, so
    /// every playlist, segment and part the player finds from it.
    public func url(port: Int, signedBy key: URLSigningKey, expires: Int) throws(StreamingError) -> String {
        do { return origin(port: port) + (try key.signedPath(options.path, expires: expires)) } catch { throw .network(error) }
    }

    /// The URL of the media playlist of `rendition` on `port` (`/live/index-video.m3u8` for
    /// the path `/live/index.m3u8`): `404` until the rendition's first segment is whole.
    public func mediaPlaylistURL(port: Int, rendition: String = "video") -> String {
        origin(port: port) + OriginStore.RenditionPaths(base: String(options.path.dropLast(".m3u8".count)), rendition: rendition).media
    }

    private func origin(port: Int) -> String { "\(options.transport.scheme)://\(options.host.contains(":") ? "[\(options.host)]" : options.host):\(port)" }

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
    /// ``Statistics/samplesLeftOut``. (``publish(_:paced:rendition:sounds:)`` takes several.)
    public func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool, rendition: String = "video", sound: TrackDescription? = nil) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        try await publish(samples, paced: paced, rendition: rendition, sounds: sound.map { [$0] } ?? [])
    }

    /// ``publish(_:paced:rendition:sound:)`` with several AAC tracks beside the picture (a
    /// file's languages): in fragmented MP4 each is a rendition of sound of its own
    /// (``soundRendition(of:index:)``: `audio`, `audio2`, …), all in the group `audio` (the
    /// first the default), as the packager lists them; transport stream segments carry one
    /// audio track (the authoring specification forbids two in a segment): the first, the
    /// others counted in ``Statistics/samplesLeftOut`` (say so to the user, as
    /// ``StreamedTracks`` does).
    public func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool, rendition: String = "video", sounds: [TrackDescription]) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        for sound in sounds where sound.format.audio?.isAAC != true {
            throw .invalidOption("track \(sound.id) (\(sound.format.codecName)): the sound beside a rendition is AAC")
        }
        guard sounds.count <= 16 else { throw .invalidOption("\(sounds.count) tracks of sound beside a rendition: at most 16") }
        try await publish(samples, paced: paced, rendition: rendition, sounds: sounds.map { ($0.id, $0.language) })
    }

    /// ``publish(_:paced:rendition:sounds:)`` with the sound named by its tracks (and
    /// languages): their formats come with their first frames (a live source's).
    func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool, rendition: String, sounds: [(id: TrackID, language: String?)]) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        try Self.checkName(rendition)
        guard store.beginPublishing(rendition) else { throw .invalidOption("rendition \(rendition) is being published, or has ended") }
        defer { store.endPublishing(rendition) }
        // (A sound's rendition is listed once its first frame comes: a camera that announces
        // no sound, or a track without frames, leaves the variant the picture's alone.)
        var publisher = try LiveRenditionPublisher(rendition: rendition, options: options.segmenter, lowLatency: options.lowLatency != nil,
                                                   sounds: sounds.enumerated().map { ($1.id, Self.soundRendition(of: rendition, index: $0), $1.language) })
        defer { for name in publisher.listedSoundRenditions { store.endPublishing(name) } }
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
            for name in publisher.listedSoundRenditions { store.end(name) }
        }
    }

    /// The name of the sound rendition published beside `rendition` in fragmented MP4:
    /// `audio` beside `video`, else the rendition's name and `audio` (`video2audio`).
    public static func soundRendition(of rendition: String) -> String {
        rendition == "video" ? "audio" : rendition + "audio"
    }

    /// The name of the sound rendition of the `index`th sound track (from 0) published beside
    /// `rendition`: ``soundRendition(of:)`` for the first, then with its number (`audio2`,
    /// `video2audio3`).
    public static func soundRendition(of rendition: String, index: Int) -> String {
        index == 0 ? soundRendition(of: rendition) : soundRendition(of: rendition) + String(index + 1)
    }

    /// A rendition's name: 1 to 32 of `a-z` and `0-9` (it goes in file names).
    private static func checkName(_ rendition: String) throws(StreamingError) {
        guard (1...32).contains(rendition.utf8.count), rendition.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }) else {
            throw .invalidOption("rendition \"\(rendition)\": 1 to 32 of a-z and 0-9")
        }
    }

    /// The server for ``Options/transport``: HTTP/1.1; TLS with HTTP/2 and HTTP/1.1 by ALPN (at
    /// most 100 concurrent streams a connection, NIOHTTP2's default, and its limits on resets,
    /// header lists and CONTINUATION frames); or cleartext HTTP/2. Each HTTP/2 stream takes the
    /// HTTP/1.1 decoder's header limits.
    private func serverBuilder(idle: TimeAmount, decoding: HTTP1Channel.Configuration.DecoderConfiguration) throws(StreamingError) -> HTTPServerBuilder {
        let http1 = HTTP1Channel.Configuration(idleTimeout: idle, httpDecoderConfiguration: decoding)
        let http2 = HTTP2ChannelConfiguration(idleTimeout: options.idleTimeout, gracefulCloseTimeout: .seconds(5), streamConfiguration: http1)
        switch options.transport {
        case .cleartext: return .http1(configuration: http1)
        case .cleartextHTTP2: return .plaintextHTTP2(configuration: http2)
        case .tls:
            guard let tls else { throw .invalidOption("TLS without a certificate") }
            let (store, timeout) = (store, TimeAmount(options.tlsHandshakeTimeout))
            return HTTPServerBuilder { responder in
                SecureHTTPChannel(contexts: tls, http1: HTTP1Channel(responder: responder, configuration: http1), http2: HTTP2Channel(responder: responder, configuration: http2),
                                  handshakeTimeout: timeout, onHandshake: { store.countHandshake($0) })
            }
        }
    }

    /// Reads the certificate and key files again (``HTTPTransport/tls(_:)``): connections made
    /// from now on get the new certificate, open ones keep theirs. On an error (a file half
    /// written, a key that does not match) the certificate in use stays and the error says why.
    public func reloadCertificate() throws(StreamingError) {
        guard let tls else { throw .invalidOption("the origin has no certificate to reload (not https://)") }
        try tls.reload()
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
        let idle = TimeAmount(options.idleTimeout)
        let host = options.host, port = options.port
        var frameworkLogger = logger
        if logger.logLevel > .debug { frameworkLogger.logLevel = .critical }
        let application = Application(
            router: router,
            server: try serverBuilder(idle: idle, decoding: decoding),
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
