import Foundation
@testable import H264Display
import H264Bitstream
import H264Session
import MediaCore
import Synchronization
import TestSupport
import SampleFlow
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The suites that run servers and browsers in real time: one test at a time, on threads of their own
/// (a page drops frames when the machine's two cores are taken by 200 clients beside it).
@Suite("Display in real time", .serialized, .timely, .exclusive)
enum RealTimeDisplay {}

/// The display layer with real pages: headless Chromium decodes with WebCodecs what the server
/// sends; reports, captures and the timebase checked against ffmpeg and the clock.
extension RealTimeDisplay {
@Suite("Display layer in headless Chromium", .requires(.chromium, .ffmpeg, .ffprobe))
struct DisplayTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// Plays `preview` in headless Chromium (opened at `page` of the URL the server gives, with
    /// `chromiumArguments`) until a page ends it.
    static func play(_ preview: Preview, seconds: Double = 120, page: @escaping @Sendable (String) throws -> String = { $0 },
                     chromiumArguments: [String] = []) async throws -> (reports: [PageReport], captures: [Int: [UInt8]]) {
        try await withDeadline(seconds: seconds, "a page playing the preview to its end") { try await playToEnd(preview, page: page, chromiumArguments: chromiumArguments) }
    }

    static func playToEnd(_ preview: Preview, page: @Sendable (String) throws -> String = { $0 },
                          chromiumArguments: [String] = []) async throws -> (reports: [PageReport], captures: [Int: [UInt8]]) {
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
        let browser = try HeadlessChromium(url: try page(try #require(address)), arguments: chromiumArguments)
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

}

extension RealTimeDisplay.DisplayTests {
    /// Every picture of `path` as ffmpeg decodes it, converted to RGB with the matrix and range
    /// of its VUI (BT.709 limited range where it gives none, as Chromium shows such a stream).
    static func referencePictures(_ path: String, width: Int, height: Int) throws -> [[UInt8]] {
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=color_space,color_range", "-of", "default=noprint_wrappers=1", path])
        var fields: [String: String] = [:]
        for line in probe.stdoutText.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        let matrix = fields["color_space"].flatMap { ["bt709": "bt709", "bt470bg": "bt601", "smpte170m": "bt601", "fcc": "fcc", "smpte240m": "smpte240m"][$0] } ?? "bt709"
        let range = fields["color_range"] == "pc" ? "pc" : "tv"
        let decoded = try run("ffmpeg", ["-v", "error", "-i", path, "-vf", "scale=in_color_matrix=\(matrix):in_range=\(range):out_range=pc:flags=bilinear",
                                         "-pix_fmt", "rgb24", "-f", "rawvideo", "-"]).stdout
        let size = width * height * 3
        return stride(from: 0, to: decoded.count - size + 1, by: size).map { [UInt8](decoded[$0..<($0 + size)]) }
    }

    /// A PNG's pixels as RGB, through ffmpeg.
    static func pixels(ofPNG png: [UInt8]) throws -> [UInt8] {
        let path = try Checkout.temporaryFile(png, suffix: ".png")
        defer { try? FileManager.default.removeItem(atPath: path) }
        return [UInt8](try run("ffmpeg", ["-v", "error", "-i", path, "-pix_fmt", "rgb24", "-f", "rawvideo", "-"]).stdout)
    }

    static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return 0 }
        var sum = 0.0
        for index in a.indices { let d = Double(Int(a[index]) - Int(b[index])); sum += d * d }
        let mse = sum / Double(a.count)
        return mse == 0 ? 100 : 10 * log10(255 * 255 / mse)
    }

    @Test("the picture is right: frames the page drew, sent back as PNG, match ffmpeg's decode in RGB (PSNR >= 40 dB; the wrong range gives 38), with and without a colour description",
          arguments: [false, true])
    func capturedPicturesMatchFFmpeg(colourDescription: Bool) async throws {
        var path = Self.source
        if colourDescription {
            // Full-range BT.601 with its VUI saying so: the page must honour the matrix and the
            // range. (Primaries BT.709 and the sRGB transfer: Chromium manages colour, and with
            // BT.470BG primaries it converts the gamut as well, which ffmpeg's scale does not —
            // measured: the green bar gains 28 of blue.)
            path = try Checkout.temporaryFile([], suffix: ".mp4")
            let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "50", "-vf", "scale=out_range=pc",
                                          "-pix_fmt", "yuvj420p", "-c:v", "libx264", "-preset", "veryfast", "-color_range", "pc", "-colorspace", "bt470bg",
                                          "-color_primaries", "bt709", "-color_trc", "iec61966-2-1", path])
            try #require(made.status == 0, "\(made.stderrText)")
        }
        defer { if colourDescription { try? FileManager.default.removeItem(atPath: path) } }
        let numbers = [0, 17, 40]
        let preview = Preview(source: .file(FilePreview(path: path)), options: .init(server: .init(port: 0), exitsAfterPlayback: true, captures: numbers))
        let (reports, captures) = try await Self.play(preview)
        #expect(reports.first?.ended == true && reports.first?.error == nil, "\(reports)")
        let reference = try Self.referencePictures(path, width: 320, height: 240)
        for number in numbers {
            let png = try #require(captures[number], "no capture of frame \(number)")
            let value = Self.psnr(try Self.pixels(ofPNG: png), reference[number])
            #expect(value >= 40, "frame \(number): \(value) dB")
        }
    }

    @Test("a size change mid-stream (320x240 then 640x480, two streams joined): each frame is drawn at its own size, the captures match ffmpeg's frames (PSNR >= 40 dB)")
    func aSizeChangeDrawsEachFrameAtItsOwnSize() async throws {
        var parts: [String] = []
        defer { for path in parts { try? FileManager.default.removeItem(atPath: path) } }
        for size in ["320x240", "640x480"] {
            let path = try Checkout.temporaryFile([], suffix: ".264")
            parts.append(path)
            let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-frames:v", "30", "-c:v", "libx264",
                                          "-preset", "veryfast", "-bf", "0", "-f", "h264", path])
            try #require(made.status == 0, "\(made.stderrText)")
        }
        let joined = try Checkout.temporaryFile(try parts.flatMap { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }, suffix: ".264")
        parts.append(joined)
        let numbers = [0, 29, 30, 31, 59]
        let preview = Preview(source: .file(FilePreview(path: joined)), options: .init(server: .init(port: 0), exitsAfterPlayback: true, captures: numbers))
        let (reports, captures) = try await Self.play(preview)
        #expect(reports.first?.ended == true && reports.first?.error == nil, "\(reports)")
        let small = try Self.referencePictures(parts[0], width: 320, height: 240), large = try Self.referencePictures(parts[1], width: 640, height: 480)
        for number in numbers {
            let png = try #require(captures[number], "no capture of frame \(number)")
            let reference = number < 30 ? small[number] : large[number - 30]
            let pixels = try Self.pixels(ofPNG: png)
            #expect(pixels.count == reference.count, "frame \(number): \(pixels.count / 3) pixels, its own size has \(reference.count / 3)")
            let value = Self.psnr(pixels, reference)
            #expect(value >= 40, "frame \(number): \(value) dB")
        }
    }

    /// A layer fed by a looped file, shown to one Chromium page, for driving its timebase.
    static func withLoopedPage(_ path: String = source, _ body: (DisplayLayer) async throws -> Void) async throws {
        let server = try DisplayServer(options: .init(port: 0))
        final class Shared: Sendable { let url = Mutex<String?>(nil) }
        let shared = Shared()
        let layer = DisplayLayer()
        server.show(layer)
        let serving = Task { try await server.run { address in shared.url.withLock { $0 = address } } }
        defer { serving.cancel() }
        let feeding = Task { await FilePreview(path: path, loops: true).feed(layer) }
        defer { feeding.cancel() }
        var address: String?
        for _ in 0..<6000 where address == nil {
            address = shared.url.withLock { $0 }
            if address == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let browser = try HeadlessChromium(url: try #require(address))
        defer { browser.stop() }
        // Playing: frames presented.
        for _ in 0..<3000 where (layer.pageReports.first?.framesPresented ?? 0) < 10 { try await Task.sleep(for: .milliseconds(10)) }
        try await body(layer)
    }

    /// The page's next report after now.
    static func freshReport(_ layer: DisplayLayer) async throws -> PageReport {
        try await Task.sleep(for: .milliseconds(250))
        return try #require(layer.pageReports.first)
    }

    /// The page's first report that meets `condition` (such as the rate just set applied),
    /// waiting up to 10 s of the wall clock: on a loaded machine a page's report comes late (CI:
    /// the report 250 ms after a pause was still the one from before it).
    static func report(_ layer: DisplayLayer, where condition: (PageReport) -> Bool) async throws -> PageReport {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let report = layer.pageReports.first, condition(report) { return report }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("no report as waited for within 10 s; the last: \(String(describing: layer.pageReports.first))")
    }

    @Test("the control timebase drives the page: pause holds the frame and stops the clock; rate 2 plays twice as fast; a seek lands on the exact frame; a flush empties the queues")
    func timebaseSemantics() async throws {
        try await Self.withLoopedPage { layer in
            // Pause: the clock and the frame on screen stay.
            // (A page whose decoder was behind, on a loaded machine, still presents the frames
            // due at the paused time after the pause: CI saw 25 more, the clock held. The pause
            // is judged from the report that shows the paused time's frame.)
            layer.setRate(0)
            let paused = try await Self.report(layer) { report in
                report.rate == 0 && report.presentedTime.map { report.time - $0 >= -0.001 && report.time - $0 < 2.0 / 29.97 } == true
            }
            try await Task.sleep(for: .seconds(1))
            let stillPaused = try await Self.freshReport(layer)
            #expect(abs(stillPaused.time - paused.time) < 0.001 && stillPaused.framesPresented == paused.framesPresented && stillPaused.presentedTime == paused.presentedTime,
                    "\(paused.time) -> \(stillPaused.time), \(paused.framesPresented) -> \(stillPaused.framesPresented)")

            // Rate 2 for 3 seconds of wall clock: 6 seconds of media, within 5%.
            layer.setRate(2)
            let start = try await Self.report(layer) { $0.rate == 2 }
            let wall = ContinuousClock.now
            try await Task.sleep(for: .seconds(3))
            let end = try #require(layer.pageReports.first)
            let elapsed = ContinuousClock.now - wall
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18 - 0.25
            let advanced = (end.presentedTime ?? 0) - (start.presentedTime ?? 0)
            #expect(abs(advanced / (seconds + 0.25) - 2) <= 0.1, "media advanced \(advanced) s in \(seconds + 0.25) s of wall clock")
            #expect(abs((end.time - start.time) / (seconds + 0.25) - 2) <= 0.1, "the page clock advanced \(end.time - start.time) s")

            // Seek while paused: the frame on screen is the one asked for (a B-frame between sync
            // samples; then one in the first group of pictures, which a stream reads from its start).
            layer.setRate(0)
            for frame in [45, 10] {
                let target = MediaTime(value: Int64(frame) * 1001, timescale: 30_000)
                layer.control("seek", value: target.seconds)
                var landed: PageReport?
                for _ in 0..<300 {
                    try await Task.sleep(for: .milliseconds(20))
                    if let report = layer.pageReports.first, let shown = report.presentedTime, abs(shown - target.seconds) < 0.0005 { landed = report; break }
                }
                #expect(landed != nil, "frame \(frame): the page shows \(layer.pageReports.first?.presentedTime ?? -1), not \(target.seconds)")
            }

            // Flush: nothing waits in the page afterwards.
            layer.setRate(1)
            try await Task.sleep(for: .milliseconds(500))
            layer.flush()
            let flushed = try await Self.freshReport(layer)
            #expect(flushed.framesWaiting <= 2, "\(flushed.framesWaiting) frames still waiting")
            #expect(layer.statistics.flushes >= 2)
        }
    }

    @Test("a stream the browser cannot decode (baseline with FMO: ffmpeg decodes none of it either) ends with an error saying so, not a blank success")
    func undecodableStream() async throws {
        let fixture = Checkout.root.path + "/Tests/Fixtures/jcodec-fmo-explicit.264"
        let preview = Preview(source: .file(FilePreview(path: fixture)), options: .init(server: .init(port: 0), exitsAfterPlayback: true))
        let (reports, _) = try await Self.play(preview)
        let report = try #require(reports.first)
        #expect(report.framesPresented == 0 && report.decodeErrors > 0, "\(report)")
        #expect(report.error?.contains("No frame could be decoded") == true, "\(report)")
    }
}

/// The wire format and the layer's bookkeeping, without a browser.
@Suite("Display messages and layer", .timely)
struct DisplayLayerTests {
    @Test("a sample message: the 40-byte header then the AVCC bytes; the config message names the codec and carries the avcC")
    func messageLayout() throws {
        let reader = try SampleBufferReader(path: RealTimeDisplay.DisplayTests.source)
        let sample = try #require(try reader.next())
        let bytes = DisplayMessage.sample(sample, number: 7, hidden: true, afterFlush: false, arrival: 1234)
        #expect(bytes.count == 40 + sample.data.count && bytes[0] == 1 && bytes[1] == 0b011)
        func integer(_ range: Range<Int>) -> Int64 { bytes[range].reduce(0) { $0 << 8 | Int64($1) } }
        #expect(integer(4..<8) == 7 && integer(8..<16) == DisplayMessage.microseconds(sample.presentationTime) && integer(32..<40) == 1234)
        let config = DisplayMessage.configuration(sample.videoFormatDescription!, live: false)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
        #expect(object["codec"] as? String == sample.videoFormatDescription!.codecString && object["width"] as? Int == 320)
        #expect(Data(base64Encoded: object["description"] as? String ?? "").map([UInt8].init) == sample.videoFormatDescription!.avcC)
    }

    @Test("back-pressure: no page, not ready; a page that has not read its queue stops the producer; a flush empties it")
    func backPressure() async throws {
        let layer = DisplayLayer(options: .init(maximumQueuedSamples: 8))
        #expect(!layer.isReadyForMoreMediaData)
        let page = PageConnection(id: 1, maximumQueuedSamples: 8)
        layer.attach(page)
        #expect(layer.isReadyForMoreMediaData)
        let reader = try SampleBufferReader(path: RealTimeDisplay.DisplayTests.source)
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

    /// Returns once a producer is parked in the layer's `requestMediaDataWhenReady()` (a wake
    /// tested before it parks would prove nothing).
    static func untilParked(_ layer: DisplayLayer) async throws {
        for _ in 0..<1000 where layer.waitingProducers == 0 { try await Task.sleep(for: .milliseconds(5)) }
        try #require(layer.waitingProducers == 1, "the producer never parked")
    }

    @Test("a page's queue: any number of timebases while it does not read come to one, the newest; past its bound of text messages the page is closed, once; after its writer stops nothing counts")
    func pageQueueBounds() async {
        let closed = Mutex(0)
        let page = PageConnection(id: 1, maximumQueuedSamples: 8, maximumQueuedTexts: 16) { closed.withLock { $0 += 1 } }
        for index in 0..<1000 { page.sendTimebase("timebase \(index)") }
        for index in 0..<16 { page.sendText("text \(index)") }
        #expect(closed.withLock { $0 } == 0)
        page.sendText("one too many")
        page.sendText("and another")
        #expect(closed.withLock { $0 } == 1)
        page.finish()
        var timebases = 0, texts = 0
        for await message in page.messages {
            switch message {
            case .timebase: timebases += 1; #expect(page.takeTimebase() == "timebase 999")
            case .text: texts += 1
            case .sample: break
            }
        }
        #expect(timebases == 1 && texts == 18)
        let gone = PageConnection(id: 2, maximumQueuedSamples: 8, maximumQueuedTexts: 16) { closed.withLock { $0 += 1 } }
        gone.writerStopped()
        for _ in 0..<100 { gone.sendText("unread") }
        #expect(closed.withLock { $0 } == 1)
    }

    @Test("a page's report is kept while it watches; after it goes only the last departed page's is (pages that come and go cost nothing); a late report from a page that went is not kept")
    func reportsGoWithTheirPages() {
        let layer = DisplayLayer()
        for id in 1...100 {
            let page = PageConnection(id: id, maximumQueuedSamples: 8)
            layer.attach(page)
            layer.record(PageReport(framesReceived: id), from: page)
            #expect(layer.pageReports.map(\.framesReceived) == [id])
            layer.detach(page)
            layer.record(PageReport(framesReceived: -1), from: page)
        }
        #expect(layer.pageReports.map(\.framesReceived) == [100])
        let watching = PageConnection(id: 101, maximumQueuedSamples: 8)
        layer.attach(watching)
        layer.record(PageReport(framesReceived: 101), from: watching)
        #expect(layer.pageReports.map(\.framesReceived) == [101])
    }

    @Test("a page that fell behind and was left alone (the faster page gone) is fed again once its writer drains it, from the next sync sample")
    func fallenBehindPageAloneIsFedAgain() async throws {
        let layer = DisplayLayer(options: .init(maximumQueuedSamples: 8))
        let fast = PageConnection(id: 1, maximumQueuedSamples: 8), slow = PageConnection(id: 2, maximumQueuedSamples: 8)
        layer.attach(fast)
        layer.attach(slow)
        let reader = try SampleBufferReader(path: RealTimeDisplay.DisplayTests.source)
        var samples: [SampleBuffer] = []
        while let sample = try reader.next() { samples.append(sample) }
        // The fast page's writer keeps up; the slow page's takes nothing until it has fallen behind.
        var index = 0
        while slow.droppedSamples == 0, index < samples.count {
            layer.enqueue(samples[index])
            layer.taken(by: fast)
            index += 1
        }
        #expect(slow.droppedSamples == 1 && !samples[index...].isEmpty)
        layer.detach(fast)
        #expect(!layer.isReadyForMoreMediaData)
        let waiting = Task { try await layer.requestMediaDataWhenReady() }
        defer { waiting.cancel() }
        try await Self.untilParked(layer)
        for _ in 0..<8 { layer.taken(by: slow) }  // its writer sends the 8 it held
        try await withDeadline(seconds: 10, "the producer was not woken by the drained page") {
            try await withTaskCancellationHandler { try await waiting.value } onCancel: { waiting.cancel() }
        }
        let sent = layer.statistics.samplesSent
        while index < samples.count, !samples[index].isSync {
            layer.enqueue(samples[index])
            index += 1
        }
        #expect(layer.statistics.samplesSent == sent, "a page that fell behind starts again at a sync sample")
        try #require(index < samples.count)
        layer.enqueue(samples[index])
        #expect(layer.statistics.samplesSent == sent + 1)
    }

    @Test("seeks while a looped file feeds a page (a stream, and the same muxed into MP4): after each, the page's next sample is the sync sample at or before the target, never one read at the old position",
          arguments: [false, true])
    func seeksLeaveNoStaleSample(movie: Bool) async throws {
        let source = movie ? FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-seeks-\(UUID().uuidString).mp4").path
                           : RealTimeDisplay.DisplayTests.source
        if movie { _ = try StreamMuxer().run(path: RealTimeDisplay.DisplayTests.source, to: source) }
        defer { if movie { try? FileManager.default.removeItem(atPath: source) } }
        let reader = try MediaSource(path: source)
        var syncTimes: [MediaTime] = []
        while let sample = try reader.next() {
            if sample.isSync { syncTimes.append(sample.presentationTime) }
        }
        let times = try FilePreview(path: source).presentationTimes()
        let layer = DisplayLayer()
        let page = PageConnection(id: 1, maximumQueuedSamples: 240)
        layer.attach(page)
        // The page's writer: every message taken at once; the first current sample after each flush noted.
        final class Seen: Sendable { let firstAfterFlush = Mutex<[MediaTime?]>([]) }
        let seen = Seen()
        let writer = Task {
            for await message in page.messages {
                switch message {
                case .text(let text) where text == DisplayMessage.flush:
                    seen.firstAfterFlush.withLock { $0.append(nil) }
                case .sample(let outgoing, let generation):
                    if page.isCurrent(generation) {
                        seen.firstAfterFlush.withLock { if let last = $0.indices.last, $0[last] == nil { $0[last] = outgoing.sample.presentationTime } }
                    }
                    layer.taken(by: page)
                default: break
                }
            }
        }
        defer { writer.cancel() }
        let feeding = Task { await FilePreview(path: source, loops: true).feed(layer) }
        defer { feeding.cancel() }
        var generator = SystemRandomNumberGenerator()
        for seek in 0..<60 {
            let target = times[Int.random(in: 0..<times.count, using: &generator)]
            try await Task.sleep(for: .milliseconds(Int.random(in: 0..<5, using: &generator)))  // mid-stream, somewhere
            layer.control("seek", value: target.seconds)
            var first: MediaTime?
            for _ in 0..<1000 where first == nil {
                try await Task.sleep(for: .milliseconds(5))
                first = seen.firstAfterFlush.withLock { $0.count == seek + 1 ? $0[seek] : nil }
            }
            let expected = syncTimes.last { $0 <= target }
            #expect(first != nil && first == expected, "seek \(seek) to \(target.seconds) s: the first sample after the flush is at \(first?.seconds ?? -1) s, not the sync sample at \(expected?.seconds ?? -1) s")
            if first != expected { break }
        }
    }

    @Test("a producer waiting for room wakes as a page's writer drains its queue, with no report and no page coming or going (CI once saw 11 of 200 pages stop at 30 samples)")
    func drainingWakesTheProducer() async throws {
        let layer = DisplayLayer()
        let page = PageConnection(id: 1, maximumQueuedSamples: 240)
        layer.attach(page)
        let reader = try SampleBufferReader(path: RealTimeDisplay.DisplayTests.source)
        var enqueued = 0
        while layer.isReadyForMoreMediaData, let sample = try reader.next() {
            layer.enqueue(sample)
            enqueued += 1
        }
        #expect(enqueued == 30, "a page that has not reported yet takes 30 samples ahead")
        let waiting = Task { try await layer.requestMediaDataWhenReady() }
        defer { waiting.cancel() }
        try await Self.untilParked(layer)
        // The server's writer sends what is queued, as it does for a page that reads but never reports.
        for _ in 0..<5 { layer.taken(by: page) }
        try await withDeadline(seconds: 10, "the producer was not woken by the page's room") {
            try await withTaskCancellationHandler { try await waiting.value } onCancel: { waiting.cancel() }
        }
        #expect(layer.isReadyForMoreMediaData)
    }
}

extension RealTimeDisplay.DisplayTests {
    static let corpusStreams = Corpus.entries().filter { !$0.ffmpegFailed && ($0.frames ?? 0) > 0 }

    @Test("every corpus stream this Chromium decodes plays whole at 1x: every frame ffmpeg decodes presented, no decode error, late by at most a frame at p95; any other ends with a clear error or warning",
          .requiresCorpus, arguments: corpusStreams)
    func corpusInChromium(_ entry: Corpus.Entry) async throws {
        let file = FilePreview(path: entry.url.path)
        let times = try file.presentationTimes()
        let steps = zip(times, times.dropFirst()).map { ($1 - $0).seconds }.sorted()
        let frameDuration = steps.isEmpty ? 1.0 / 25 : steps[steps.count / 2]
        let seconds = (times.last.map { ($0 - times[0]).seconds } ?? 0) + 60
        let machineBefore = MachineCPU.now()
        let (reports, _) = try await Self.play(Preview(source: .file(file), options: .init(server: .init(port: 0), exitsAfterPlayback: true)), seconds: seconds)
        let idle = MachineCPU.now().idleFraction(since: machineBefore)
        let report = try #require(reports.first, "no page report")
        if let error = report.error {
            // Not decodable by this browser (14-bit, say): said clearly, nothing claimed.
            #expect(error.count > 20 && report.framesPresented == 0, "\(entry): \(report)")
            print("corpus in Chromium: \(entry.path): \(error)")
            return
        }
        if let warning = report.warning {
            // The browser's decoder dropped frames without an error (measured with Chromium 156:
            // B-frames after a second IDR picture, a QuickTime file's last frame): the page says
            // so; what it did show is checked below as for every stream.
            withKnownIssue("\(entry.path): \(warning)") { Issue.record("\(warning)") }
            #expect(report.ended && report.framesPresented == report.framesDecoded - report.framesDropped, "\(entry): \(report)")
            return
        }
        // Every frame ffmpeg decodes (Chromium may decode a damaged one ffmpeg skips), but one
        // of two frames with the same presentation time (clips joined without care): only one
        // can be on screen at that time, the other is dropped.
        let duplicates = times.count - Set(times).count
        #expect(report.ended && report.decodeErrors == 0 && report.framesPresented <= report.framesReceived, "\(entry): \(report)")
        let rate = 1 / frameDuration
        // What the page measured of the causes, said with any failure.
        let causes = "decoding \(report.decodeFramesPerSecond.map { "\(Int($0)) frames a second" } ?? "never behind"), "
            + "frame loop \(report.frameLoopMs.map { "\($0)" } ?? "-") ms, decoded late \(report.framesDecodedLate ?? -1), "
            + "samples received late \(report.samplesReceivedLate ?? -1), dropped between animation frames \(report.framesDroppedBetweenAnimationFrames ?? -1)"
        let onTime = {
            #expect(report.framesPresented >= (entry.frames ?? 0) - duplicates && report.framesDropped <= duplicates,
                    "\(entry): \(report.framesPresented) presented, \(report.framesDropped) dropped, \(duplicates) duplicate times; \(causes)")
            #expect(report.latenessMs.p95 <= frameDuration * 1000 + 1, "\(entry): lateness \(report.latenessMs), a frame is \(frameDuration * 1000) ms; \(causes)")
        }
        // The frames the browser itself cost, as the page measured them: those whose whole time
        // passed between two of its animation frames (its frame loop stalled), and those its
        // decoder returned after their time while samples waited in it (it fell behind). Both
        // happen when the suite beside it takes the machine's two cores.
        let betweenAnimationFrames = report.framesDroppedBetweenAnimationFrames ?? 0
        let decodedLate = report.framesDecodedLate ?? 0
        let stalled = report.frameLoopMs.map { $0.max > 1000 / rate * 1.5 } ?? false
        let latenessExplained = report.latenessMs.p95 <= frameDuration * 1000 + 1 || stalled || decodedLate * 20 >= report.framesPresented
        if let decoding = report.decodeFramesPerSecond, decoding < rate * 1.15 {
            // The browser decodes this stream hardly faster than real time here, if at all (4K60,
            // 1080p60, 10-bit 1080p intra in software on two cores): frames are late and dropped
            // by nature; measured, not hidden.
            withKnownIssue("\(entry.path): the browser decodes \(Int(decoding)) frames a second of a \(Int(rate.rounded())) fps stream", isIntermittent: true) { onTime() }
        } else if let loop = report.frameLoopMs, loop.p95 > max(1000 / rate, 1000.0 / 60) * 1.5 {
            // The browser itself ran late (its animation frames came far apart: the machine's two
            // cores busy with the other suites beside it): measured, and said.
            withKnownIssue("\(entry.path): the page's animation frames came \(Int(loop.p95)) ms apart at p95 (the machine was busy)", isIntermittent: true) { onTime() }
        } else if betweenAnimationFrames + decodedLate > 0 || stalled,
                  report.framesDropped - duplicates <= betweenAnimationFrames + decodedLate, latenessExplained {
            // The browser's own frame loop stalled, or its decoder fell behind for a moment: the
            // frames that cost are dropped or late, measured and said as a known issue; a drop
            // or lateness the browser did not cause (a sample that came late) is a failure.
            withKnownIssue("\(entry.path): \(report.framesDropped) dropped: \(betweenAnimationFrames) between the page's animation frames (longest interval \(Int(report.frameLoopMs?.max ?? 0)) ms), \(decodedLate) decoded after their time", isIntermittent: true) { onTime() }
        } else if (report.samplesReceivedLate ?? 0) > 0, idle < 0.05 {
            // A sample reached the page late while the machine had no CPU to spare (the other
            // suites beside it, in CI here: 0% idle): the machine's, measured and said; with
            // CPU to spare, a late sample is the server's and a failure.
            withKnownIssue("\(entry.path): \(report.samplesReceivedLate ?? 0) samples reached the page late with \(Int(idle * 100))% of the CPU idle (the machine was busy)", isIntermittent: true) { onTime() }
        } else {
            onTime()
        }
    }
}

/// The page compiled into the module is the one in `Resources/` (edited there, embedded by
/// `scripts/embed-player.py`): the two never drift apart.
@Suite("Display page sources", .timely)
struct PlayerResourcesTests {
    @Test func theEmbeddedPageIsTheResourcesPage() throws {
        let generated = String(decoding: try readFile(Checkout.root.appendingPathComponent("Sources/H264Display/PlayerResources.swift").path), as: UTF8.self)
        for name in ["player.html", "player.js"] {
            let source = String(decoding: try readFile(Checkout.root.appendingPathComponent("Sources/H264Display/Resources/\(name)").path), as: UTF8.self)
            #expect(generated.contains("\n" + source + "\n\"\"\"#"), "\(name) changed since PlayerResources.swift was made: run scripts/embed-player.py")
        }
    }
}

extension RealTimeDisplay.DisplayTests {
    @Test("a browser that freezes mid-play (every one of its processes stopped): the preview, cancelled, ends within 5 s, and stopping the frozen browser does not wait on it")
    func frozenBrowser() async throws {
        // 30 s of pictures: the page is still playing when it freezes.
        let path = try Checkout.temporaryFile(try x264Stream(frames: 750, arguments: ["--preset", "ultrafast"]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let preview = Preview(source: .file(FilePreview(path: path)), options: .init(server: .init(port: 0), exitsAfterPlayback: true))
        let address = Mutex<String?>(nil)
        let running = Task { try await preview.run(onListening: { url in address.withLock { $0 = url } }) }
        defer { running.cancel() }
        var url: String?
        for _ in 0..<6000 where url == nil {
            url = address.withLock { $0 }
            if url == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let browser = try HeadlessChromium(url: try #require(url))
        try await Task.sleep(for: .seconds(4))
        let frozen = [browser.process.pid] + HeadlessChromium.descendants(of: browser.process.pid)
        for pid in frozen { kill(pid, SIGSTOP) }
        try await Task.sleep(for: .seconds(2))
        let clock = ContinuousClock()
        let cancelled = clock.now
        running.cancel()
        let reports = try await withDeadline(seconds: 30, "the cancelled preview") { try await running.value }
        #expect(clock.now - cancelled < .seconds(5), "the cancelled preview took \(clock.now - cancelled)")
        #expect(reports.first.map { !$0.ended && $0.framesPresented > 0 } == true, "the page played, and had not ended: \(reports)")
        let stopping = clock.now
        browser.stop(grace: 2)
        #expect(clock.now - stopping < .seconds(5), "stopping the frozen browser took \(clock.now - stopping)")
        // (A killed process ends as the kernel gets to it: a zombie, or gone, within moments.)
        let ended: @Sendable (Int32) -> Bool = { kill($0, 0) != 0 || (try? String(contentsOfFile: "/proc/\($0)/stat", encoding: .utf8))?.contains(") Z") == true }
        for _ in 0..<300 where !frozen.allSatisfy(ended) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(frozen.allSatisfy(ended), "every process of the frozen browser ended: \(frozen.filter { !ended($0) }) did not")
    }
}
