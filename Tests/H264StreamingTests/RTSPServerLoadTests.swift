import Dispatch
import Foundation
import H264Network
import H264Streaming
import MediaCore
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A plain blocking RTSP connection to 127.0.0.1 for tests that misbehave on purpose: bytes as
/// given, responses read (or never read).
final class RawRTSPConnection: @unchecked Sendable {
    let descriptor: Int32

    init(port: Int, receiveBuffer: Int32? = nil, receiveTimeout: Int = 5) throws {
        descriptor = try loopbackTCPConnection(port: port, receiveBuffer: receiveBuffer, receiveTimeout: receiveTimeout)
    }

    deinit { close(descriptor) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until a whole response (headers and body) or the end; nil at the end or a timeout.
    func response() -> RTSPMessage? {
        var parser = RTSPMessageParser()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            guard let elements = try? parser.append(buffer[..<count]) else { return nil }
            for case .message(let message) in elements { return message }
        }
    }

    /// Whether the server closed the connection (read returns 0, or the connection is reset)
    /// within the receive timeout.
    func isClosedByPeer() -> Bool { closing() == nil }

    /// Reads until the server closes the connection: nil when it did (read returns 0, or a
    /// reset), else what happened instead (a timeout, another error).
    func closing() -> String? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { return nil }
            if count > 0 { received += count; continue }
            switch errno {
            case EINTR: continue
            case ECONNRESET: return nil
            case EAGAIN: return "still open at the receive timeout, \(received) bytes read meanwhile"
            case let error: return "errno \(error) after \(received) bytes"
            }
        }
    }

    /// OPTIONS, DESCRIBE, SETUP over TCP interleaved and PLAY: the stream starts coming;
    /// `withSound`: the second medium (`trackID=1`) is set up into the session too.
    func play(_ url: String, withSound: Bool = false) throws {
        send("DESCRIBE \(url) RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n")
        guard let described = response(), case .response(200, _) = described.startLine else { throw TestFailure("DESCRIBE failed") }
        send("SETUP \(url)/trackID=0 RTSP/1.0\r\nCSeq: 2\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n\r\n")
        guard let setUp = response(), case .response(200, _) = setUp.startLine, let session = setUp["Session"]?.split(separator: ";").first else { throw TestFailure("SETUP failed") }
        if withSound {
            send("SETUP \(url)/trackID=1 RTSP/1.0\r\nCSeq: 3\r\nSession: \(session)\r\nTransport: RTP/AVP/TCP;unicast;interleaved=2-3\r\n\r\n")
            guard let sound = response(), case .response(200, _) = sound.startLine else { throw TestFailure("SETUP of the sound failed") }
        }
        send("PLAY \(url) RTSP/1.0\r\nCSeq: 4\r\nSession: \(session)\r\n\r\n")
    }
}

/// The RTSP server under hostile and heavy use, over real sockets on loopback.
@Suite("RTSP server under load and abuse", .serialized, .timely, .exclusive)
struct RTSPServerLoadTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    static func start(_ media: RTSPServer.Media, _ options: RTSPServer.Options = .init()) async throws -> (RTSPServer, Task<Void, any Error>, Int) {
        var options = options
        options.port = 0  // (any free port, as the server binds it: see RTSPTests.startServer)
        let server = try RTSPServer(options: options)
        try server.serve(media, at: "/live")
        let bound = BoundPort()
        let task = Task(executorPreference: TimelyExecutor.shared) { try await server.run(onListening: { bound.set($0) }) }
        let port = try #require(await bound.value(within: 60), "the server never listened")
        return (server, task, port)
    }

    @Test("garbage, a huge header, an HTTP request, a path outside, a silent connection: 4xx or closed, counted; a client plays meanwhile")
    func hostileRequests() async throws {
        let (server, task, port) = try await Self.start(.file(path: Self.source, loops: true), .init(idleConnectionTimeout: 10))
        defer { task.cancel() }
        let url = "rtsp://127.0.0.1:\(port)/live"
        // A well-behaved client plays through all of it.
        let client = RTSPClient(url: try RTSPURL(parsing: url), options: .init(receiver: .init(sampleLimit: 60), transport: .tcp))
        async let played = client.receive { _ in }
        @Sendable func status(_ response: RTSPMessage?) -> Int? {
            if case .response(let status, _)? = response?.startLine { return status }
            return nil
        }
        // (Each exchange blocks on its socket: on a thread of its own, off the shared pool.)
        let garbage = try await offThePool { () throws -> (Int?, String?) in
            let connection = try RawRTSPConnection(port: port)
            connection.send([0x00, 0xFF, 0x13, 0x37] + Array("\r\n\r\n".utf8))
            return (status(connection.response()), connection.closing())
        }
        #expect(garbage.0 == 400 && garbage.1 == nil, "answered \(String(describing: garbage.0)), then: \(garbage.1 ?? "closed")")
        let http = try await offThePool { () throws -> Int? in
            let connection = try RawRTSPConnection(port: port)
            connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            return status(connection.response())
        }
        #expect(http == 400)
        let huge = try await offThePool { () throws -> (Int?, Bool) in
            let connection = try RawRTSPConnection(port: port)
            connection.send("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nX-Filler: " + String(repeating: "a", count: 20_000))
            return (status(connection.response()), connection.isClosedByPeer())
        }
        #expect(huge.0 == 413 && huge.1)
        let outside = try await offThePool { () throws -> [Int?] in
            let connection = try RawRTSPConnection(port: port)
            var statuses: [Int?] = []
            for (sequence, path) in ["/../../etc/passwd", "/live/../../etc/passwd", "/%2e%2e/secret", "/nothing"].enumerated() {
                connection.send("DESCRIBE rtsp://127.0.0.1:\(port)\(path) RTSP/1.0\r\nCSeq: \(sequence + 1)\r\n\r\n")
                statuses.append(status(connection.response()))
            }
            connection.send("OPTIONS * RTSP/1.0\r\nCSeq: 9\r\n\r\n")  // the connection goes on after its 4xx
            statuses.append(status(connection.response()))
            return statuses
        }
        #expect(outside == [404, 404, 404, 404, 200])
        let silent = try await offThePool { () throws -> (String?, Double) in
            let connection = try RawRTSPConnection(port: port, receiveTimeout: 40)
            let start = ContinuousClock.now
            let closing = connection.closing()
            return (closing, Double((ContinuousClock.now - start).components.seconds))
        }
        #expect(silent.0 == nil, "a connection that never sends a request is closed after the idle timeout (10 s): \(silent.0 ?? "") after \(silent.1) s; the server: \(server.statistics)")

        let report = try await played
        #expect(report.samples == 60 && report.depacketizer.packetsLost == 0, "\(report)")
        let statistics = server.statistics
        #expect(statistics.errorsAnswered >= 7, "\(statistics)")
    }

    @Test("clients that stop reading fall behind, are counted and cost the server no more than their queue; a reader beside them gets every frame")
    func clientsThatNeverRead() async throws {
        // Real time (~40 KB/s) and 32 KiB queues: a client that does not read fills its queue
        // and socket buffers (~100 KB) in under three seconds, while the reader, in this process
        // beside the whole suite, has about five seconds of buffers to lag by (at four and ten
        // times real time it had one and half a second, and under load fell behind itself).
        let (server, task, port) = try await Self.start(.file(path: Self.source, loops: true), .init(clientQueueLimit: 32 << 10))
        defer { task.cancel() }
        let url = "rtsp://127.0.0.1:\(port)/live"
        let stalled = try await offThePool {
            try (0..<3).map { _ in
                let connection = try RawRTSPConnection(port: port, receiveBuffer: 4096)
                try connection.play(url)
                return connection
            }
        }
        // (An idle timeout well past any stall: the looped file never ends by itself.)
        let reader = RTSPClient(url: try RTSPURL(parsing: url), options: .init(receiver: .init(idleTimeout: .seconds(60), sampleLimit: 210), transport: .tcp))
        var times: [Int64] = []
        var arrivals: [ContinuousClock.Instant] = []
        let stalls = StallWatch()
        let report = try await reader.receive {
            times.append($0.presentationTime.converted(toTimescale: 90_000, rounding: .halfAwayFromZero).value)
            arrivals.append(.now)
        }
        let stall = stalls.stop()
        let statistics = server.statistics
        #expect(report.samples == 210 && report.depacketizer.packetsLost == 0, "\(report)")
        // Every frame, none skipped by the server: presentation times one frame apart. The
        // reader has about five seconds of buffers at this pace (the server's 32 KiB queue and
        // send buffer, its own receive buffer). When it could not read for longer, the server
        // skips it too, as it should, and that is said, not failed: when the machine stopped
        // this process, or the event loops it shares with the suite's other tests (hundreds of
        // pages and clients) ran nothing for it. Its longest wait between two frames measures
        // that; a skip of its own costs at most a group of pictures (one second here).
        let sorted = times.sorted()
        let longestWait = zip(arrivals, arrivals.dropFirst()).map { $1 - $0 }.max() ?? .zero
        let cause: String? = if stall > .seconds(4) {
            "this process was not scheduled for \(stall): the reader's buffers overflowed meanwhile"
        } else if longestWait > .seconds(3) {
            "the reader got nothing for \(longestWait) (the event loops it shares with the suite were busy): its buffers overflowed meanwhile"
        } else {
            nil
        }
        let missing = zip(sorted, sorted.dropFirst()).filter { $1 - $0 != 3003 }.prefix(5).map { "\($0)→\($1)" }
        expectations(unless: cause) {
            #expect(missing.isEmpty, "the reader missed frames: \(missing), longest wait \(longestWait), stall \(stall), \(statistics)")
        }
        #expect(statistics.clientsFellBehind >= 3 && statistics.accessUnitsDroppedBehind > 0, "\(statistics)")
        withExtendedLifetime(stalled) {}
    }

    /// Alone: 180 clients and the server in this process take both cores and the event loops
    /// every other real-time test here uses (CI: an RTP receiver beside it went 3 s without
    /// reading its socket).
    @Test("two hundred clients join in the same second (UDP and TCP), twenty of them never read: every reader gets its frames from a sync sample; also from a file with sound, the twenty that never read holding both media",
          .alone, arguments: [false, true])
    func twoHundredClients(withSound: Bool) async throws {
        // The server's patience as long as the clients' (answers within 60 s, below): a client
        // starved of CPU that long beside the suite sends its next request, or its receiver
        // reports, late, and a 30-s connection or 60-s session timeout would close it (CI: a
        // reader closed with sound).
        let (server, task, port) = try await Self.start(.file(path: withSound ? RTPStreamingTests.audioVideoSource : Self.source, loops: true),
                                                        .init(sessionTimeout: 180, idleConnectionTimeout: 180))
        defer { task.cancel() }
        let url = try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live")
        let stalled = try await offThePool {
            try (0..<20).map { _ in
                let connection = try RawRTSPConnection(port: port, receiveBuffer: 4096)
                try connection.play(url.description, withSound: withSound)
                return connection
            }
        }
        final class Results: Sendable { let all = Mutex<[(samples: Int, firstIsSync: Bool, tcp: Bool, lost: Int, report: String)]>([]) }
        let results = Results()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<180 {
                group.addTask {
                    // (Answers within 60 s: 200 clients at once on two cores busy with the suite,
                    // the 180 in this process on the server's two event loops. CI saw over 30 s
                    // with sound beside three other real-time tests and their peers. The figure,
                    // on a quiet machine, is Benchmarks/rtsp-load.py's: PLAY to first packet p95
                    // under 100 ms for 330 clients.)
                    let client = RTSPClient(url: url, options: .init(receiver: .init(idleTimeout: .seconds(60), sampleLimit: 40),
                                                                     transport: index.isMultiple(of: 2) ? .tcp : .udp, responseTimeout: .seconds(60)))
                    var first: Bool?
                    let report = try await client.receive { sample in if first == nil { first = sample.isSync } }
                    results.all.withLock { $0.append((report.samples, first ?? false, index.isMultiple(of: 2), report.depacketizer.packetsLost, "\(report)")) }
                }
            }
            try await group.waitForAll()
        }
        let all = results.all.withLock { $0 }
        #expect(all.count == 180)
        // Over TCP every frame arrives; over UDP a machine whose cores are both busy (the other
        // suites beside this one) may drop datagrams on loopback: then the client, its loss
        // counted, must still have been served from a sync sample.
        let short = all.filter { !$0.firstIsSync || ($0.samples != 40 && ($0.tcp || $0.lost == 0 || $0.samples == 0)) }
        #expect(short.isEmpty, "\(short.count) clients short or not starting at a sync sample: \(short.prefix(3).map { "\($0.tcp ? "TCP" : "UDP"), \($0.samples) samples, first sync \($0.firstIsSync): \($0.report)" })")
        let statistics = server.statistics
        #expect(statistics.sessionsPlayed >= 200 && statistics.connectionsRefused == 0, "\(statistics)")
        withExtendedLifetime(stalled) {}
    }

    @Test("a UDP client that goes silent (no request, no RTCP) loses its session after the session timeout")
    func sessionTimeout() async throws {
        let (server, task, port) = try await Self.start(.file(path: Self.source, loops: true), .init(sessionTimeout: 1))
        defer { task.cancel() }
        let rtp = try freeUDPPortPair()
        let silent = try await offThePool { () throws -> RawRTSPConnection in
            let silent = try RawRTSPConnection(port: port)
            silent.send("SETUP rtsp://127.0.0.1:\(port)/live/trackID=0 RTSP/1.0\r\nCSeq: 1\r\nTransport: RTP/AVP;unicast;client_port=\(rtp)-\(rtp + 1)\r\n\r\n")
            guard let session = silent.response()?["Session"]?.split(separator: ";").first else { throw TestFailure("SETUP failed") }
            silent.send("PLAY rtsp://127.0.0.1:\(port)/live RTSP/1.0\r\nCSeq: 2\r\nSession: \(session)\r\n\r\n")
            _ = silent.response()
            return silent
        }
        defer { withExtendedLifetime(silent) {} }
        for _ in 0..<100 where server.statistics.sessionsPlaying == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.statistics.sessionsPlaying == 1)
        try await Task.sleep(for: .milliseconds(2500))
        let statistics = server.statistics
        #expect(statistics.sessionsPlaying == 0 && statistics.sessionsTimedOut == 1, "\(statistics)")
    }
}
