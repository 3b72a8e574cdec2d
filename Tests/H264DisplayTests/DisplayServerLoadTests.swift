import Foundation
import H264Display
import Synchronization
import TestSupport
import Testing

/// The display server under hostile and heavy use, over real sockets on loopback: pages are
/// plain WebSocket clients here (no browser), so that they can misbehave.
extension RealTimeDisplay {
@Suite("Display server under load and abuse", .timely)
struct DisplayServerLoadTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// A server showing one layer, fed by the sample looped; its port.
    static func start(_ options: DisplayServer.Options = .init(port: 0)) async throws -> (DisplayServer, DisplayLayer, Task<Void, Never>, Int) {
        let server = try DisplayServer(options: options)
        let layer = DisplayLayer()
        server.show(layer)
        final class Shared: Sendable { let url = Mutex<String?>(nil) }
        let shared = Shared()
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await server.run { url in shared.url.withLock { $0 = url } } }
                group.addTask { await FilePreview(path: source, loops: true).feed(layer) }
                await group.waitForAll()
            }
        }
        var url: String?
        for _ in 0..<1000 where url == nil {
            url = shared.url.withLock { $0 }
            if url == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let port = try #require(url.flatMap { URL(string: $0)?.port }, "the server did not start")
        return (server, layer, task, port)
    }

    @Test("only the page, its script and the WebSocket are served: other paths, traversal and a plain GET of /stream get 4xx, never a file")
    func nothingElseIsServed() async throws {
        let (_, _, task, port) = try await Self.start()
        defer { task.cancel() }
        let page = try await offThePool { try RawWebSocket(port: port, path: nil).request("GET / HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(page.status == 200 && page.body.contains("VideoDecoder"), "the page with its script inline")
        for path in ["/etc/passwd", "/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/Resources/player.js", "/stream", "/player.js/../../Package.swift"] {
            let response = try await offThePool { try RawWebSocket(port: port, path: nil).request("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect((400..<500).contains(response.status) && !response.body.contains("root:"), "\(path): \(response.status)")
        }
    }

    @Test("two hundred pages join in the same second, twenty of them never read: every reading page gets the configuration and then samples from a sync sample")
    func twoHundredPages() async throws {
        let (server, layer, task, port) = try await Self.start(.init(port: 0, maximumPages: 256))
        defer { task.cancel() }
        let stalled = try await offThePool { try (0..<20).map { _ in try RawWebSocket(port: port, receiveBuffer: 4096, receiveTimeout: 30) } }
        #expect(stalled.allSatisfy { $0.status == 101 })
        final class Results: Sendable { let all = Mutex<[(status: Int, configured: Bool, samples: Int, firstIsSync: Bool)]>([]) }
        let results = Results()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<180 {
                group.addTask {
                    let result = try await offThePool { () -> (Int, Bool, Int, Bool) in
                        let page = try RawWebSocket(port: port, receiveTimeout: 30)
                        var configured = false, samples = 0, firstIsSync = false
                        while samples < 40, let frame = page.readFrame() {
                            if frame.opcode == 1, String(decoding: frame.payload, as: UTF8.self).contains("\"config\"") { configured = true }
                            if frame.opcode == 2, frame.payload.count > 40, frame.payload[0] == 1 {
                                if samples == 0 { firstIsSync = frame.payload[1] & 1 != 0 }
                                samples += 1
                            }
                        }
                        return (page.status, configured, samples, firstIsSync)
                    }
                    results.all.withLock { $0.append(result) }
                }
            }
            try await group.waitForAll()
        }
        let all = results.all.withLock { $0 }
        let short = all.filter { $0.status != 101 || !$0.configured || $0.samples != 40 || !$0.firstIsSync }
        #expect(all.count == 180 && short.isEmpty, "\(short.count) pages short: \(short.prefix(3))")
        let statistics = server.statistics
        #expect(statistics.pages >= 200 && statistics.pagesRefused == 0, "\(statistics)")
        #expect(layer.statistics.samplesDroppedForSlowPages > 0, "the pages that never read were not left behind: \(layer.statistics)")
        withExtendedLifetime(stalled) {}
    }

    @Test("a page that stops reading but keeps asking (5,000 play requests, each a timebase for every page) costs one timebase waiting, not 5,000, and no page is closed for it; text past 64 KiB closes a page; a capture nobody asked for is dropped and counted; the reading page beside them plays on")
    func pagesThatAskWithoutReading() async throws {
        let (server, _, task, port) = try await Self.start()
        defer { task.cancel() }
        let outcome = try await offThePool { () -> (neighbour: Int, longTextClosed: Bool) in
            let neighbour = try RawWebSocket(port: port)
            let asker = try RawWebSocket(port: port, receiveBuffer: 4096)
            for _ in 0..<5000 { asker.sendFrame(opcode: 1, Array("{\"type\":\"control\",\"action\":\"play\"}".utf8)) }
            var capture: [UInt8] = [2] + [UInt8](repeating: 0, count: 8)
            capture += [UInt8](repeating: 0x89, count: 1000)
            neighbour.sendFrame(opcode: 2, capture)
            let talker = try RawWebSocket(port: port)
            talker.sendFrame(opcode: 1, [UInt8](repeating: 0x20, count: 70 << 10))
            let longTextClosed = talker.closeCode() == 1009
            var samples = 0
            while samples < 60, let frame = neighbour.readFrame() { if frame.opcode == 2 { samples += 1 } }
            withExtendedLifetime(asker) {}
            return (samples, longTextClosed)
        }
        #expect(outcome.neighbour == 60 && outcome.longTextClosed)
        var statistics = server.statistics
        for _ in 0..<500 where statistics.unrequestedCaptures == 0 || statistics.pagesClosedForBadInput == 0 {
            try await Task.sleep(for: .milliseconds(10))
            statistics = server.statistics
        }
        #expect(statistics.pagesClosedForBacklog == 0 && statistics.unrequestedCaptures == 1 && statistics.pagesClosedForBadInput == 1, "\(statistics)")
    }

    @Test("a page closed mid-stream goes; a page that sends nonsense is ignored (counted) and keeps its samples; one that sends more than the limit is closed; the page beside them plays on")
    func hostilePages() async throws {
        let (server, _, task, port) = try await Self.start(.init(port: 0, maximumMessageSize: 64 << 10))
        defer { task.cancel() }
        let outcome = try await offThePool { () -> (afterNonsense: Int, oversizedClosed: Bool, neighbour: Int) in
            let neighbour = try RawWebSocket(port: port)
            // A page closed mid-stream: a few samples read, then the connection gone.
            var quitter: RawWebSocket? = try RawWebSocket(port: port)
            var read = 0
            while read < 5, let frame = quitter?.readFrame() { if frame.opcode == 2 { read += 1 } }
            quitter = nil
            let noisy = try RawWebSocket(port: port)
            for text in ["not json", "{\"type\":\"status\",\"framesReceived\":\"many\"}", "{\"type\":\"what\"}", "{\"no\":\"type\"}", "[1,2,3]",
                         "{\"type\":\"control\"}", "{\"type\":\"control\",\"action\":\"rate\",\"value\":1e308}"] {
                noisy.sendFrame(opcode: 1, Array(text.utf8))
            }
            noisy.sendFrame(opcode: 2, [7, 7, 7])   // binary, not a capture
            var afterNonsense = 0
            while afterNonsense < 20, let frame = noisy.readFrame() { if frame.opcode == 2 { afterNonsense += 1 } }
            let oversized = try RawWebSocket(port: port)
            oversized.sendFrame(opcode: 1, [UInt8](repeating: 0x20, count: 100 << 10))
            let closed = oversized.closeCode() == 1009   // message too big (RFC 6455 §7.4.1)
            var samples = 0
            while samples < 60, let frame = neighbour.readFrame() { if frame.opcode == 2 { samples += 1 } }
            return (afterNonsense, closed, samples)
        }
        #expect(outcome.afterNonsense == 20, "the noisy page stopped getting samples")
        #expect(outcome.oversizedClosed, "a page past the message limit was not closed with 1009")
        #expect(outcome.neighbour == 60)
        // (The server reads a page's messages as they come, beside what it sends: the noisy
        // page's last may be read after the oversized one is closed. CI saw 1 of 8 counted.)
        var statistics = server.statistics
        for _ in 0..<500 where statistics.pagesClosedForBadInput == 0 || statistics.badMessages < 6 {
            try await Task.sleep(for: .milliseconds(10))
            statistics = server.statistics
        }
        #expect(statistics.badMessages >= 6 && statistics.pagesClosedForBadInput >= 1, "\(statistics)")
    }
}
}
