import H264Network
import H264Bitstream
import H264Container
import HTTPTypes
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
/// beside it `index-video.m3u8` (the live media playlist: a window of ``Options/windowSize``
/// segments, `EXT-X-PROGRAM-DATE-TIME` on each, the media sequence rising), its I-frame
/// playlist, `index-video-init.mp4` and the segments, and `index.mpd` (a dynamic DASH MPD of the
/// same CMAF segments). Memory is bounded by the window: a segment that leaves the playlist is
/// kept two target durations more (a player that loaded the playlist just before may still
/// fetch it), then dropped.
///
/// HTTP: GET and HEAD, byte ranges (`206`, `416`), `Content-Type` per file, `Cache-Control`
/// short for playlists and long for segments (they never change), CORS for players on other
/// origins (`OPTIONS` preflights answered). Anything but a published name is `404`, a bad
/// method `405`, a malformed range `416`, each counted; an idle connection is closed after
/// ``Options/idleTimeout``; headers are capped at 16 KiB.
public final class HLSOrigin: Sendable {
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

        /// Options for `path` on `host:port`: 2 s fMP4 segments, a window of 6, DASH beside.
        public init(host: String = "127.0.0.1", port: Int = 8080, path: String = "/live/index.m3u8",
                    segmenter: MediaSegmenter.Options = .init(segmentDuration: MediaTime(value: 2, timescale: 1)), windowSize: Int = 6,
                    servesDASH: Bool = true, idleTimeout: Duration = .seconds(30)) {
            self.host = host
            self.port = port
            self.path = path
            self.segmenter = segmenter
            self.windowSize = windowSize
            self.servesDASH = servesDASH
            self.idleTimeout = idleTimeout
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
        do { _ = try MediaSegmenter(options: options.segmenter) } catch { throw .output(error) }
        self.options = options
        self.logger = logger
        store = OriginStore(options: options)
    }

    /// What the origin has done so far.
    public var statistics: Statistics { store.statistics }

    /// The multivariant playlist's URL on `port`.
    public func url(port: Int) -> String { "http://\(options.host.contains(":") ? "[\(options.host)]" : options.host):\(port)\(options.path)" }

    /// Publishes `samples` (in decoding order) as the live stream until they end (the playlist
    /// then gets `EXT-X-ENDLIST`) or the task is cancelled; `paced`: each sample waits for its
    /// decoding time on the wall clock, as a live source would bring it (a file).
    public func publish<Samples: AsyncSequence>(_ samples: Samples, paced: Bool) async throws(StreamingError) where Samples.Element == SampleBuffer {
        var segmenter: MediaSegmenter
        do { segmenter = try MediaSegmenter(options: options.segmenter) } catch { throw .output(error) }
        var start: (wall: Double, decode: MediaTime)?
        var segmentStart: Double?
        var gathering = ByteBuffer()
        // A segment's chunks gathered; published whole with its report.
        func take(_ made: MediaSegmenter.Output, _ segmenter: inout MediaSegmenter, _ gathering: inout ByteBuffer, _ segmentStart: inout Double?) {
            for chunk in made.chunks { chunk.data.forEachSegment { gathering.writeBytes($0) } }
            for report in made.completed {
                let bytes = gathering.readSlice(length: report.byteCount) ?? ByteBuffer()
                store.publish(bytes, report: report, initialization: segmenter.initializationSegment, format: segmenter.formatDescription,
                              timescale: segmenter.timescale, startedAt: segmentStart ?? WallClock.seconds)
                gathering.discardReadBytes()
                segmentStart = WallClock.seconds
            }
        }
        do {
            for try await sample in samples {
                if Task.isCancelled { break }
                let now = WallClock.seconds
                if paced, sample.decodeTime.isNumeric {
                    if let start {
                        let due = start.wall + (sample.decodeTime - start.decode).seconds
                        if due > WallClock.seconds { try await Task.sleep(for: .milliseconds(Int((due - WallClock.seconds) * 1000))) }
                    } else {
                        start = (now, sample.decodeTime)
                    }
                }
                let made: MediaSegmenter.Output
                do { made = try segmenter.append(sample) } catch { throw StreamingError.output(error) }
                if segmentStart == nil { segmentStart = now }
                take(made, &segmenter, &gathering, &segmentStart)
            }
        } catch is CancellationError {
        } catch let error as StreamingError {
            throw error
        } catch {
            throw .sending(error)
        }
        let last: MediaSegmenter.Output
        do { last = try segmenter.finish() } catch { throw .output(error) }
        take(last, &segmenter, &gathering, &segmentStart)
        if !Task.isCancelled { store.end() }
    }

    /// Serves until the task is cancelled; `onListening` gets the multivariant playlist's URL
    /// once the server listens (with the port the system chose for port 0).
    public func run(onListening: @escaping @Sendable (String) -> Void = { _ in }) async throws(StreamingError) {
        raiseDescriptorLimit()
        let router = Router(context: BasicRequestContext.self)
        let store = self.store
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in store.respond(to: request) }
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
        do {
            try await application.run()
        } catch is CancellationError {
        } catch {
            throw .socket("HLS origin on \(host):\(port)", underlying: error)
        }
    }
}

/// The origin's files and playlists, shared by the publisher and every request: one lock,
/// updated once per segment; a request copies out a reference to the bytes, never the bytes.
final class OriginStore: Sendable {
    struct File {
        var bytes: ByteBuffer
        var contentType: String
        var cacheControl: String
    }

    struct State {
        var files: [String: File] = [:]
        var window: HLSLiveWindow
        /// Segments gone from the playlist, with when to drop them (seconds on the wall clock).
        var leaving: [(path: String, at: Double)] = []
        var statistics = HLSOrigin.Statistics()
        var streamStart: Double?
        var format: VideoFormatDescription?
        var timescale: Int32?
    }

    let options: HLSOrigin.Options
    let paths: (multivariant: String, media: String, iFrames: String, initialization: String, dash: String)
    private let state: Locked<State>

    init(options: HLSOrigin.Options) {
        self.options = options
        let base = String(options.path.dropLast(".m3u8".count))
        paths = (options.path, base + "-video.m3u8", base + "-video-iframes.m3u8", base + "-video-init.mp4", base + ".mpd")
        let target = max(1, Int(options.segmenter.segmentDuration.seconds.rounded(.up)))
        let map = options.segmenter.format == .fragmentedMP4 ? Self.name(paths.initialization) : nil
        state = Locked(State(window: HLSLiveWindow(size: options.windowSize, targetDuration: target, map: map)))
    }

    /// The last path component.
    static func name(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    var statistics: HLSOrigin.Statistics { state.withLock { $0.statistics } }

    func segmentPath(_ index: Int, _ format: MediaSegmenter.Format) -> String {
        let number = String(index)
        return String(paths.media.dropLast(".m3u8".count)) + "-" + String(repeating: "0", count: max(0, 5 - number.count)) + number + "." + format.fileExtension
    }

    /// Puts a whole segment in memory and in the playlists, at once.
    func publish(_ bytes: ByteBuffer, report: MediaSegmenter.SegmentReport, initialization: [UInt8]?, format: VideoFormatDescription?, timescale: Int32?,
                 startedAt: Double) {
        let path = segmentPath(report.index, report.format)
        let entry = HLSLiveWindow.Entry(
            sequence: report.index, uri: Self.name(path), duration: report.duration.seconds, programDateTime: startedAt, independent: report.isIndependent,
            byteCount: report.byteCount, iFrames: report.syncSamples.map { .init(duration: $0.duration.seconds, byteRange: $0.byteRange) },
            timeline: timescale.map { (report.earliestPresentationTime.converted(toTimescale: $0).value, report.duration.converted(toTimescale: $0).value) })
        let now = WallClock.seconds
        state.withLock { state in
            if state.streamStart == nil { state.streamStart = startedAt }
            if state.format == nil { state.format = format }
            if state.timescale == nil { state.timescale = timescale }
            if let initialization, state.files[paths.initialization] == nil {
                state.files[paths.initialization] = File(bytes: ByteBuffer(bytes: initialization), contentType: "video/mp4", cacheControl: "public, max-age=86400")
            }
            state.files[path] = File(bytes: bytes, contentType: report.format.contentType, cacheControl: "public, max-age=86400, immutable")
            state.statistics.segmentsPublished += 1
            let removed = state.window.append(entry)
            state.statistics.segmentsOverTarget = state.window.segmentsOverTarget
            let grace = Double(2 * state.window.targetDuration)
            for gone in removed { state.leaving.append((String(paths.media[..<(paths.media.lastIndex(of: "/") ?? paths.media.startIndex)]) + "/" + gone.uri, now + grace)) }
            while let first = state.leaving.first, first.at <= now {
                state.files[first.path] = nil
                state.leaving.removeFirst()
                state.statistics.segmentsDropped += 1
            }
            render(&state, now: now)
        }
    }

    /// The stream ended: the playlists say so.
    func end() {
        state.withLock { state in
            state.window.end()
            render(&state, now: WallClock.seconds)
        }
    }

    private func render(_ state: inout State, now: Double) {
        let playlist = "public, max-age=1"
        state.files[paths.media] = File(bytes: ByteBuffer(string: state.window.mediaPlaylist.rendered), contentType: "application/vnd.apple.mpegurl", cacheControl: playlist)
        state.files[paths.iFrames] = File(bytes: ByteBuffer(string: state.window.iFramePlaylist.rendered), contentType: "application/vnd.apple.mpegurl", cacheControl: playlist)
        guard let format = state.format else { return }
        let rates = state.window.bitRates
        let size = (width: format.width, height: format.height)
        let rate = format.sps.frameRate
        let multivariant = HLSMultivariantPlaylist(
            variants: [.init(uri: Self.name(paths.media), bandwidth: rates.peak, averageBandwidth: rates.average, codecs: [format.codecString], resolution: size,
                             frameRate: rate?.framesPerSecond)],
            iFrameVariants: [.init(uri: Self.name(paths.iFrames), bandwidth: max(1, state.window.entries.flatMap { entry in entry.iFrames.map { Int(Double($0.byteRange.count * 8) / max($0.duration, 0.001)) } }.max() ?? 1),
                                   codecs: [format.codecString], resolution: size)],
            independentSegments: state.window.allIndependent)
        state.files[paths.multivariant] = File(bytes: ByteBuffer(string: multivariant.rendered), contentType: "application/vnd.apple.mpegurl", cacheControl: playlist)
        if options.servesDASH, let timescale = state.timescale, let start = state.streamStart {
            let representation = DASHManifest.Representation(
                id: "video", codecs: format.codecString, width: size.width, height: size.height, frameRate: rate.map { "\($0.numerator)/\($0.denominator)" },
                bandwidth: rates.peak, timescale: Int(timescale), initialization: Self.name(paths.initialization),
                media: String(Self.name(paths.media).dropLast(".m3u8".count)) + "-$Number%05d$." + options.segmenter.format.fileExtension,
                startNumber: state.window.mediaSequence, segments: state.window.entries.compactMap(\.timeline))
            let segmentSeconds = options.segmenter.segmentDuration.seconds
            let kind: DASHManifest.Kind = state.window.ended
                ? .static(duration: state.window.entries.map(\.duration).reduce(0, +))
                : .dynamic(availabilityStartTime: start, minimumUpdatePeriod: segmentSeconds,
                           timeShiftBufferDepth: state.window.entries.map(\.duration).reduce(0, +), publishTime: now)
            state.files[paths.dash] = File(bytes: ByteBuffer(string: DASHManifest(kind: kind, minimumBufferTime: segmentSeconds, representations: [representation]).rendered),
                                           contentType: "application/dash+xml", cacheControl: playlist)
        }
    }

    // MARK: HTTP

    private static let cors: HTTPFields = [.accessControlAllowOrigin: "*", .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges"]

    /// The answer to a request: a published file (whole or a range), or a 4xx, counted.
    func respond(to request: Request) -> Response {
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
        let file = state.withLock { state -> File? in
            state.statistics.requests += 1
            return state.files[path]
        }
        guard let file else {
            state.withLock { $0.statistics.notFound += 1 }
            return Response(status: .notFound, headers: headers)
        }
        headers[.contentType] = file.contentType
        headers[.cacheControl] = file.cacheControl
        headers[.acceptRanges] = "bytes"
        var body = file.bytes
        var status = HTTPResponse.Status.ok
        if let range = request.headers[.range] {
            guard let (start, end) = Self.byteRange(range, size: file.bytes.readableBytes) else {
                state.withLock { $0.statistics.badRanges += 1 }
                headers[.contentRange] = "bytes */\(file.bytes.readableBytes)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            body = file.bytes.getSlice(at: file.bytes.readerIndex + start, length: end - start + 1) ?? ByteBuffer()
            headers[.contentRange] = "bytes \(start)-\(end)/\(file.bytes.readableBytes)"
            status = .partialContent
        }
        headers[.contentLength] = String(body.readableBytes)
        let count = body.readableBytes
        state.withLock { $0.statistics.served += 1; $0.statistics.bytesServed += method == .head ? 0 : count }
        return Response(status: status, headers: headers, body: method == .head ? .init() : .init(byteBuffer: body))
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
