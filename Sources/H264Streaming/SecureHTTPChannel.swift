package import HummingbirdCore
package import HummingbirdHTTP2
package import Logging
package import NIOCore
package import NIOHTTP2
package import NIOSSL
import NIOTLS
import SystemIO

/// The TLS context each new connection takes: read from the PEM files at start and again on
/// ``reload()``, so that a renewed certificate is served without a restart and without closing
/// a connection (each keeps the context it began with).
package final class TLSContextStore: Sendable {
    private let files: TLSFiles
    private let current: Locked<NIOSSLContext>

    /// The files' context, checked now (an error names the file).
    package init(files: TLSFiles) throws(StreamingError) {
        self.files = files
        current = Locked(try Self.context(files))
    }

    /// The context a connection made now takes.
    package var context: NIOSSLContext { current.withLock { $0 } }

    /// Reads the files again; on an error the context in use stays.
    package func reload() throws(StreamingError) {
        let context = try Self.context(files)
        current.withLock { $0 = context }
    }

    private static func context(_ files: TLSFiles) throws(StreamingError) -> NIOSSLContext {
        var configuration = try files.serverConfiguration()
        configuration.applicationProtocols = NIOHTTP2SupportedALPNProtocols
        do { return try NIOSSLContext(configuration: configuration) } catch {
            throw .credentials("\(files.privateKey): not the key of the certificate in \(files.certificateChain)", underlying: error)
        }
    }
}

/// How a connection's TLS handshake ended.
package enum TLSHandshakeOutcome: Sendable {
    case completed, failed, timedOut
}

/// A TLS connection that speaks HTTP/2 or HTTP/1.1 as ALPN chose (h2 first; no ALPN is
/// HTTP/1.1): Hummingbird's HTTP/2 upgrade channel (`HTTP1` is Hummingbird's HTTP/1.1 channel, or
/// its WebSocket upgrade channel for a page that opens a WebSocket: a browser opens those on a
/// connection of their own, by HTTP/1.1), with a context taken from a
/// ``TLSContextStore`` at each connection (so a reload needs no restart) and a deadline on the
/// handshake (a connection that has not finished it in time is closed: half a ClientHello
/// holds nothing for long). Every handshake's end is told to `onHandshake`, to be counted
/// rather than logged one by one.
package struct SecureHTTPChannel<HTTP1: ServerChildChannel>: ServerChildChannel {
    package struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<NIONegotiatedHTTPVersion<HTTP1.Value, HTTP2Channel.Value>>
        package let channel: any Channel
    }

    let contexts: TLSContextStore
    let http1: HTTP1
    let http2: HTTP2Channel
    let handshakeTimeout: TimeAmount
    let onHandshake: @Sendable (TLSHandshakeOutcome) -> Void

    /// A connection on `contexts`' certificate, HTTP/1.1 on `http1`, HTTP/2 on `http2`.
    package init(contexts: TLSContextStore, http1: HTTP1, http2: HTTP2Channel, handshakeTimeout: TimeAmount, onHandshake: @escaping @Sendable (TLSHandshakeOutcome) -> Void) {
        self.contexts = contexts
        self.http1 = http1
        self.http2 = http2
        self.handshakeTimeout = handshakeTimeout
        self.onHandshake = onHandshake
    }

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: contexts.context))
            try channel.pipeline.syncOperations.addHandler(TLSHandshakeWatch(timeout: handshakeTimeout, report: onHandshake))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let (http1, http2) = (http1, http2)
        return channel.configureHTTP2AsyncSecureUpgrade(
            http1ConnectionInitializer: { channel in http1.setup(channel: channel, logger: logger) },
            http2ConnectionInitializer: { channel in http2.setup(channel: channel, logger: logger) }
        ).map { Value(negotiated: $0, channel: channel) }
    }

    package func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("a TLS connection ended before its protocol was chosen: \(error)")
        }
    }
}

/// Sits after the TLS handler until the handshake ends: closes the connection when it has not
/// ended in `timeout`, tells how it ended, then leaves the pipeline.
final class TLSHandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private let report: @Sendable (TLSHandshakeOutcome) -> Void
    private var deadline: Scheduled<Void>?
    private var ended = false

    init(timeout: TimeAmount, report: @escaping @Sendable (TLSHandshakeOutcome) -> Void) {
        self.timeout = timeout
        self.report = report
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil, !ended else { return }
        let channel = context.channel, report = report
        let watch = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            guard !watch.value.ended else { return }
            watch.value.ended = true
            report(.timedOut)
            channel.close(promise: nil)
        }
    }

    private func end(_ outcome: TLSHandshakeOutcome) {
        guard !ended else { return }
        ended = true
        deadline?.cancel()
        report(outcome)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let completed: Bool
        if case .handshakeCompleted = event as? TLSUserEvent { completed = true } else { completed = false }
        if completed { end(.completed) }
        context.fireUserInboundEventTriggered(event)
        if completed { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.failed)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(.failed)
        context.fireChannelInactive()
    }
}
