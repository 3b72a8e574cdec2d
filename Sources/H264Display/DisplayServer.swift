import FoundationEssentials
public import H264Network
public import H264Streaming
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdWebSocket
public import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import SystemIO

/// The web server of the display: it serves the player page (plain HTML and JavaScript shipped
/// in this module's resources, decoding with WebCodecs) and, over a WebSocket, the samples of a
/// ``DisplayLayer`` to every page that opens it. Hummingbird 2 with its WebSocket module.
///
/// A page watches either one layer every page shares (``show(_:)``: an application's stream, a
/// live source), or a layer of its own that ``onPage(_:)`` feeds (a file, each page from its
/// start, with its own seeks). Nothing is served but the page, its script and the WebSocket;
/// what a page sends is bounded (``Options/maximumMessageSize``) and checked, a page that sends
/// nonsense is logged and goes on or is closed, and a page that stops reading falls behind on
/// its own.
public final class DisplayServer: Sendable {
    /// How the server runs.
    public struct Options: Sendable {
        /// The address to listen on: loopback unless another is asked for.
        public var host: String
        /// The TCP port (0: any free port; ``run(onListening:)`` says which).
        public var port: Int
        /// The most pages at once; one more is refused.
        public var maximumPages: Int
        /// The largest message a page may send (a PNG capture of a large picture is the largest).
        public var maximumMessageSize: Int
        /// The largest text message a page may send (its reports and requests are a few hundred
        /// bytes; a report is kept while its page watches).
        public var maximumTextMessageSize: Int
        /// The most text messages (configurations, flushes, capture requests, the end) that may
        /// wait for a page that does not read them; past it the page is closed. The timebase
        /// waits once, the newest (any number of play, pause and rate changes come to one);
        /// samples have their own bound (``DisplayLayer/Options/maximumQueuedSamples``), past
        /// which a page skips ahead.
        public var maximumQueuedTextMessages: Int
        /// How each layer made for a page feeds it (``onPage(_:)``).
        public var layer: DisplayLayer.Options
        /// HTTP/1.1 in the clear (`http://`, the default), or TLS (`https://`: the page over
        /// HTTP/2 or HTTP/1.1 as ALPN chooses, its WebSocket `wss://` on a connection of its own;
        /// the page's `AudioDecoder` needs the secure context anywhere but on localhost).
        /// Cleartext HTTP/2 is refused: a page's WebSocket needs HTTP/1.1 there.
        public var transport: HTTPTransport = .cleartext
        /// How long a TLS handshake may take before the connection is closed.
        public var tlsHandshakeTimeout: Duration = .seconds(10)
        /// When set, the page and its stream are served only by a URL signed with this key
        /// (`URLSigningKey.signedURL(_:scope:expires:)` of the page's URL, which opens the page's
        /// folder: the page finds its stream beside it); anything else gets 403, counted in
        /// ``Statistics/forbidden``.
        public var accessKey: URLSigningKey?

        /// Options: 127.0.0.1:8080, 256 pages, 32 MiB messages, 64 KiB text messages, 1,024
        /// text messages waiting.
        public init(host: String = "127.0.0.1", port: Int = 8080, maximumPages: Int = 256, maximumMessageSize: Int = 32 << 20,
                    maximumTextMessageSize: Int = 64 << 10, maximumQueuedTextMessages: Int = 1024, layer: DisplayLayer.Options = .init()) {
            self.host = host
            self.port = port
            self.maximumPages = maximumPages
            self.maximumMessageSize = maximumMessageSize
            self.maximumTextMessageSize = maximumTextMessageSize
            self.maximumQueuedTextMessages = maximumQueuedTextMessages
            self.layer = layer
        }
    }

    /// What the server has done.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Pages that connected.
        public var pages = 0
        /// Pages refused (``Options/maximumPages``).
        public var pagesRefused = 0
        /// Messages from pages that were not understood (ignored).
        public var badMessages = 0
        /// Pages closed for a message past the size limit (with WebSocket close code 1009,
        /// "message too big"). A single frame of more than twice the limit is refused by the
        /// WebSocket layer before it is read: that page is closed too, but not counted here.
        public var pagesClosedForBadInput = 0
        /// Pages closed because they left more than ``Options/maximumQueuedTextMessages`` text
        /// messages unread (a page that stopped reading while asking for more).
        public var pagesClosedForBacklog = 0
        /// Captures no one asked for (ignored).
        public var unrequestedCaptures = 0
        /// Requests refused for a missing, malformed, wrong or expired token
        /// (``Options/accessKey``).
        public var forbidden = 0
        /// TLS handshakes completed (``Options/transport``).
        public var tlsHandshakes = 0
        /// TLS handshakes that failed (a client that does not trust the certificate, a client
        /// that is not TLS, a connection closed halfway).
        public var tlsHandshakesFailed = 0
        /// TLS handshakes that did not end within ``Options/tlsHandshakeTimeout``.
        public var tlsHandshakesTimedOut = 0
    }

    /// How the server runs.
    public let options: Options
    private enum Source: Sendable {
        case none
        case shared(DisplayLayer)
        case perPage(@Sendable (DisplayLayer) async -> Void)
    }
    private let source = Locked<Source>(.none)
    private let counts = Locked(Statistics())
    private let nextPage = Atomic<Int>(0)
    private let page: [UInt8]
    private let script: [UInt8]
    private let logger: Logger
    private let tls: TLSContextStore?

    /// A message's `type`, all the server reads of it before it knows what the message is, and
    /// the fields a control or an error message adds.
    private struct MessageType: Decodable {
        var type: String
        var action: String?
        var value: Double?
        var message: String?
    }

    /// A server with `options`; fails when they are out of range.
    public init(options: Options = Options(), logger: Logger = Logger(label: "h264kit.display")) throws(StreamingError) {
        guard (0...65535).contains(options.port), options.maximumPages > 0, options.maximumMessageSize >= 1024, options.maximumTextMessageSize >= 1024,
              options.maximumQueuedTextMessages >= 16 else {
            throw .invalidOption("display server options: a port of 0-65535, at least one page, messages of at least 1 KiB, at least 16 text messages waiting")
        }
        guard options.tlsHandshakeTimeout > .zero else { throw .invalidOption("display server options: a TLS handshake timeout above 0") }
        switch options.transport {
        case .cleartext: tls = nil
        case .cleartextHTTP2: throw .invalidOption("the preview's page opens a WebSocket, which cleartext HTTP/2 does not carry: http:// or https://")
        case .tls(let files): tls = try TLSContextStore(files: files)
        }
        self.options = options
        self.logger = logger
        // The script goes inline (one request less before the WebSocket opens); /player.js
        // serves it too. (Both are compiled in: PlayerResources.swift, from Resources/.)
        let inlined = PlayerResources.html.replacing("<script src=\"/player.js\"></script>", with: "<script>\n" + PlayerResources.script + "</script>")
        page = Array(inlined.utf8)
        script = Array(PlayerResources.script.utf8)
    }

    /// Every page watches `layer`.
    public func show(_ layer: DisplayLayer) {
        source.withLock { $0 = .shared(layer) }
    }

    /// Each page gets a layer of its own, which `feed` fills (it is cancelled when the page goes).
    public func onPage(_ feed: @escaping @Sendable (DisplayLayer) async -> Void) {
        source.withLock { $0 = .perPage(feed) }
    }

    /// What the server has done.
    public var statistics: Statistics { counts.withLock { $0 } }

    /// Reads the certificate and key files again (``Options/transport``): connections made from
    /// now on get the new certificate, open ones (a page's WebSocket) keep theirs. On an error
    /// the certificate in use stays and the error says why.
    public func reloadCertificate() throws(StreamingError) {
        guard let tls else { throw .invalidOption("the display server has no certificate to reload (not https://)") }
        try tls.reload()
    }

    /// The path a request asked for, its token taken off (``Options/accessKey``), or `nil`
    /// when it may not be answered.
    private func allowedPath(_ uriPath: String) -> String? {
        guard let key = options.accessKey else { return uriPath }
        if case .allowed(let path) = key.check(uriPath, now: Int(WallClock.seconds)) { return path }
        return nil
    }

    /// Serves until the task is cancelled; `onListening` gets the page's URL once the server
    /// listens (with the port the system chose for port 0).
    public func run(onListening: @escaping @Sendable (String) -> Void = { _ in }) async throws(StreamingError) {
        let router = Router(context: BasicRequestContext.self)
        let page = ByteBuffer(bytes: self.page), script = ByteBuffer(bytes: self.script)
        // Every path goes to one handler: with an access key the token comes first in it.
        let respond: @Sendable (Request, BasicRequestContext) async throws -> Response = { [self] request, _ in
            guard let path = allowedPath(request.uri.path) else {
                counts.withLock { $0.forbidden += 1 }
                return Response(status: .forbidden, headers: [.cacheControl: "no-store"])
            }
            switch path {
            case "/":
                return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"], body: .init(byteBuffer: page))
            case "/player.js":
                return Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-store"], body: .init(byteBuffer: script))
            default:
                return Response(status: .notFound, headers: [.cacheControl: "no-store"])
            }
        }
        router.get("/", use: respond)
        router.get("**", use: respond)
        // Frames up to twice the message limit are read, so that the server's own check of each
        // message (which may come in several frames) is what refuses an oversized one, counted.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(ws: .init(maxFrameSize: options.maximumMessageSize * 2))
        let connections = self.connections
        // Every connection is noted as it is accepted, so that stopping can close them all.
        let upgrade: @Sendable (HTTPRequest, any Channel, Logger) throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> = { [self] head, channel, _ in
                // (A request refused here goes on to the router, which answers and counts it.)
                guard let path = head.path?.split(separator: "?").first, allowedPath(String(path)) == "/stream" else { return .dontUpgrade }
                let refused = counts.withLock { counts -> Bool in
                    guard activePages.load(ordering: .relaxed) < options.maximumPages else {
                        counts.pagesRefused += 1
                        return true
                    }
                    return false
                }
                if refused {
                    logger.warning("a page refused: \(options.maximumPages) pages already watch")
                    return .dontUpgrade
                }
                return .upgrade([:]) { [self] inbound, outbound, _ in await serve(inbound: inbound, outbound: outbound, channel: channel) }
        }
        let server: HTTPServerBuilder
        if let tls {
            // TLS: the page by HTTP/2 or HTTP/1.1 as ALPN chose; a browser opens the WebSocket on a
            // connection of its own by HTTP/1.1 (the HTTP/2 side announces no extended CONNECT).
            let http2 = HTTP2ChannelConfiguration(idleTimeout: .seconds(60), gracefulCloseTimeout: .seconds(5))
            let timeout = TimeAmount(options.tlsHandshakeTimeout)
            let counts = self.counts
            server = HTTPServerBuilder { responder in
                TrackingChildChannel(base: SecureHTTPChannel(
                    contexts: tls, http1: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration, shouldUpgrade: upgrade),
                    http2: HTTP2Channel(responder: responder, configuration: http2), handshakeTimeout: timeout,
                    onHandshake: { outcome in
                        counts.withLock { counts in
                            switch outcome {
                            case .completed: counts.tlsHandshakes += 1
                            case .failed: counts.tlsHandshakesFailed += 1
                            case .timedOut: counts.tlsHandshakesTimedOut += 1
                            }
                        }
                    }), connections: connections)
            }
        } else {
            server = HTTPServerBuilder { responder in
                TrackingChildChannel(base: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration, shouldUpgrade: upgrade), connections: connections)
            }
        }
        let host = options.host, scheme = options.transport.scheme
        // Hummingbird's own messages (at error level for a connection cancelled while the
        // server stops) only when tracing: the server's events are logged here.
        var frameworkLogger = logger
        if logger.logLevel > .debug { frameworkLogger.logLevel = .critical }
        let application = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(host, port: options.port), serverName: "H264Kit"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                onListening("\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)/")
            },
            logger: frameworkLogger
        )
        do {
            // Stopping closes every connection (a page's WebSocket, a browser's idle HTTP
            // connection): the server waits for its connections to end, and a browser may keep
            // one open for minutes.
            try await withTaskCancellationHandler {
                try await application.run()
            } onCancel: {
                connections.closeAll()
            }
        } catch is CancellationError {
        } catch {
            throw .socket("display server on \(host):\(options.port)", underlying: error)
        }
    }

    private let activePages = Atomic<Int>(0)
    /// Every connection open, to close them all when stopping.
    private let connections = ConnectionRegistry()

    /// One page's WebSocket: its layer's messages out, its reports and requests in.
    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel) async {
        let id = nextPage.add(1, ordering: .relaxed).newValue
        let active = activePages.add(1, ordering: .relaxed).newValue
        defer { activePages.subtract(1, ordering: .relaxed) }
        // (The check before the upgrade can let several through at once: this one counts.)
        guard active <= options.maximumPages else {
            counts.withLock { $0.pagesRefused += 1 }
            logger.warning("a page refused: \(options.maximumPages) pages already watch")
            try? await outbound.close(.policyViolation, reason: "\(options.maximumPages) pages already watch")
            return
        }
        counts.withLock { $0.pages += 1 }
        let layer: DisplayLayer
        var feed: (@Sendable (DisplayLayer) async -> Void)?
        switch source.withLock({ $0 }) {
        case .shared(let shared): layer = shared
        case .perPage(let makeFeed):
            layer = DisplayLayer(options: options.layer)
            feed = makeFeed
        case .none:
            try? await outbound.close(.unexpectedServerError, reason: "nothing to show")
            return
        }
        let logger = self.logger, counts = self.counts
        let connection = PageConnection(id: id, maximumQueuedSamples: layer.options.maximumQueuedSamples,
                                        maximumQueuedTexts: options.maximumQueuedTextMessages) { [limit = options.maximumQueuedTextMessages] in
            // It does not read what it is sent: the socket is closed under it (a close frame
            // would wait behind what it does not read).
            counts.withLock { $0.pagesClosedForBacklog += 1 }
            logger.warning("page \(id) closed: more than \(limit) messages unread")
            channel.close(promise: nil)
        }
        layer.attach(connection)
        logger.info("page \(id) watching")
        await withTaskGroup(of: Void.self) { group in
            if let feed { group.addTask { await feed(layer) } }
            group.addTask {
                // The writer: the page's queue onto its socket.
                defer { connection.writerStopped() }
                for await message in connection.messages {
                    do {
                        switch message {
                        case .text(let text):
                            defer { connection.textTaken() }
                            try await outbound.write(.text(text))
                        case .timebase:
                            if let text = connection.takeTimebase() { try await outbound.write(.text(text)) }
                        case .sample(let sample, let generation):
                            defer { layer.taken(by: connection) }
                            guard connection.isCurrent(generation) else { continue }
                            try await outbound.write(.binary(ByteBuffer(bytes: DisplayMessage.sample(sample.sample, number: sample.number, hidden: sample.hidden,
                                                                                                       afterFlush: sample.afterFlush, arrival: sample.arrival, inBand: sample.inBand))))
                        }
                    } catch {
                        return
                    }
                }
            }
            // The reader: what the page says, until it goes.
            do {
                for try await message in inbound.messages(maxSize: 2 * options.maximumMessageSize) {
                    let (size, limit) = switch message {
                    case .text(let text): (text.utf8.count, options.maximumTextMessageSize)
                    case .binary(let bytes): (bytes.readableBytes, options.maximumMessageSize)
                    }
                    guard size <= limit else {
                        counts.withLock { $0.pagesClosedForBadInput += 1 }
                        logger.warning("page \(id) closed: a message of \(size) bytes, past the limit of \(limit)")
                        try? await outbound.close(.messageTooLarge, reason: "past \(limit) bytes")
                        break
                    }
                    handle(message, from: connection, layer: layer)
                }
            } catch is CancellationError {
            } catch {
                // The page went (a reset, a broken frame): nothing more to read from it.
                logger.info("page \(id) ended", metadata: ["error": .string(String(describing: error))])
            }
            connection.finish()
            group.cancelAll()
        }
        layer.detach(connection)
        logger.info("page \(id) gone")
    }

    private func handle(_ message: WebSocketMessage, from connection: PageConnection, layer: DisplayLayer) {
        switch message {
        case .text(let text):
            let data = Data(text.utf8)
            guard let object = try? JSONDecoder().decode(MessageType.self, from: data) else {
                bad(connection, "a text message that is not a JSON object with a type")
                return
            }
            let type = object.type
            switch type {
            case "status", "report":
                guard let report = try? JSONDecoder().decode(PageReport.self, from: data) else {
                    bad(connection, "a \(type) that does not read as a report")
                    return
                }
                layer.record(report, from: connection)
                if let error = report.error, type == "report" { logger.error("page \(connection.id): \(error.prefix(500))") }
            case "control":
                guard let action = object.action else { return bad(connection, "a control without an action") }
                layer.control(action, value: object.value)
            case "error":
                // (The page's report that follows carries it.)
                logger.error("page \(connection.id): \(object.message?.prefix(500) ?? "an error")")
            default:
                bad(connection, "a message of type \(type.prefix(40))")
            }
        case .binary(var buffer):
            // A capture: kind 2, the presentation time (µs, 8 bytes), the PNG.
            guard buffer.readableBytes > 9, buffer.readInteger(as: UInt8.self) == 2, let timestamp = buffer.readInteger(as: Int64.self) else {
                return bad(connection, "a binary message that is not a capture")
            }
            if !layer.captured(timestamp: timestamp, png: Array(buffer.readableBytesView)) {
                counts.withLock { $0.unrequestedCaptures += 1 }
            }
        }
    }

    private func bad(_ connection: PageConnection, _ what: String) {
        counts.withLock { $0.badMessages += 1 }
        logger.warning("page \(connection.id) sent \(what); ignored")
    }
}

/// The connections a server has open.
final class ConnectionRegistry: Sendable {
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let added = channels.withLock { $0.updateValue(channel, forKey: key) == nil }
        if added { channel.closeFuture.whenComplete { [self] _ in channels.withLock { _ = $0.removeValue(forKey: key) } } }
    }

    func closeAll() {
        for channel in channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }
}

/// A server's child channels as Hummingbird sets them up, each noted in a registry first.
struct TrackingChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let connections: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        connections.add(channel)
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
