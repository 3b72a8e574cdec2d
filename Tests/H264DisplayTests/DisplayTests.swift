import Foundation
@testable import H264Display
import H264Session
import MediaCore
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium, started for one page and stopped with the test.
final class HeadlessChromium: @unchecked Sendable {
    let process: ChildProcess
    let profile: String

    init(url: String) throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-chromium-\(UUID().uuidString)").path
        // As root, headless Chromium needs --no-sandbox; no GL flags (measured: WebCodecs decodes
        // in software here). Timing is real: no --virtual-time-budget.
        process = try ChildProcess(try #require(which("chromium")), [
            "--headless=new", "--no-sandbox", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--user-data-dir=\(profile)", "--autoplay-policy=no-user-gesture-required", url,
        ])
    }

    func stop() {
        kill(process.pid, SIGTERM)
        _ = process.wait()
        try? FileManager.default.removeItem(atPath: profile)
    }
}

/// The display layer with real pages: headless Chromium decodes with WebCodecs what the server
/// sends; reports, captures and the timebase checked against ffmpeg and the clock.
@Suite("Display layer in headless Chromium", .requires(.chromium, .ffmpeg, .ffprobe), .serialized, .timely)
struct DisplayTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// Runs `preview` with a page in Chromium until the page has shown the stream to its end.
    static func play(_ preview: Preview) async throws -> (reports: [PageReport], captures: [Int: [UInt8]]) {
        final class Shared: Sendable {
            let url = Mutex<String?>(nil)
            let captures = Mutex<[Int: [UInt8]]>([:])
        }
        let shared = Shared()
        async let reports = preview.run(onListening: { address in shared.url.withLock { $0 = address } },
                                        onCapture: { number, png in shared.captures.withLock { $0[number] = png } })
        var address: String?
        for _ in 0..<6000 where address == nil {
            address = shared.url.withLock { $0 }
            if address == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let browser = try HeadlessChromium(url: try #require(address))
        defer { browser.stop() }
        let result = try await reports
        return (result, shared.captures.withLock { $0 })
    }

    @Test("a file plays in Chromium: every frame presented, no decode error, late by less than a frame; the report names codec, size and browser")
    func everyFramePresented() async throws {
        let frames = try ffmpegFrameHashes(Self.source).count
        let preview = Preview(source: .file(FilePreview(path: Self.source)), options: .init(server: .init(port: 0), exitsAfterPlayback: true))
        let (reports, _) = try await Self.play(preview)
        let report = try #require(reports.first)
        #expect(report.ended && report.error == nil, "\(report)")
        #expect(report.framesPresented == frames && report.framesDropped == 0 && report.decodeErrors == 0, "\(report)")
        #expect(report.latenessMs.p95 <= 1000.0 / 29.97, "\(report.latenessMs)")
        #expect(report.codec.hasPrefix("avc1.") && report.width == 320 && report.height == 240 && report.userAgent.contains("Chrome"), "\(report)")
    }
}

/// The wire format and the layer's bookkeeping, without a browser.
@Suite("Display messages and layer")
struct DisplayLayerTests {
    @Test("a sample message: the 40-byte header then the AVCC bytes; the config message names the codec and carries the avcC")
    func messageLayout() throws {
        let reader = try SampleBufferReader(path: DisplayTests.source)
        let sample = try #require(try reader.next())
        let bytes = DisplayMessage.sample(sample, number: 7, hidden: true, afterFlush: false, arrival: 1234)
        #expect(bytes.count == 40 + sample.data.count && bytes[0] == 1 && bytes[1] == 0b011)
        func integer(_ range: Range<Int>) -> Int64 { bytes[range].reduce(0) { $0 << 8 | Int64($1) } }
        #expect(integer(4..<8) == 7 && integer(8..<16) == DisplayMessage.microseconds(sample.presentationTime) && integer(32..<40) == 1234)
        let config = DisplayMessage.configuration(sample.formatDescription, live: false)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
        #expect(object["codec"] as? String == sample.formatDescription.codecString && object["width"] as? Int == 320)
        #expect(Data(base64Encoded: object["description"] as? String ?? "").map([UInt8].init) == sample.formatDescription.avcC)
    }

    @Test("back-pressure: no page, not ready; a page that has not read its queue stops the producer; a flush empties it")
    func backPressure() async throws {
        let layer = DisplayLayer(options: .init(maximumQueuedSamples: 8))
        #expect(!layer.isReadyForMoreMediaData)
        let page = PageConnection(id: 1, maximumQueuedSamples: 8)
        layer.attach(page)
        #expect(layer.isReadyForMoreMediaData)
        let reader = try SampleBufferReader(path: DisplayTests.source)
        var enqueued = 0
        while layer.isReadyForMoreMediaData, let sample = try reader.next() {
            layer.enqueue(sample)
            enqueued += 1
        }
        #expect(enqueued == 4, "ready while less than half the queue waits")
        // The page never reads: past its queue it falls behind and is skipped to a sync sample.
        while let sample = try reader.next() { layer.enqueue(sample) }
        #expect(layer.statistics.samplesDroppedForSlowPages > 0 && !layer.isReadyForMoreMediaData)
        let waiting = Task { try await layer.requestMediaDataWhenReady() }
        try await Task.sleep(for: .milliseconds(50))
        layer.detach(page)
        let other = PageConnection(id: 2, maximumQueuedSamples: 8)
        layer.attach(other)
        try await waiting.value  // a new page with room wakes the producer
        layer.flush()
        #expect(layer.statistics.flushes == 1)
    }
}
