import Logging
import H264Network
public import H264Streaming
import SampleFlow
public import MediaCore
import SystemIO

/// `h264kit preview` as one call: a ``DisplayServer`` showing a file (each page gets it from
/// its start, with its own seeks) or a live RTP/RTSP source (every page watches the same layer,
/// frames drawn as they arrive; a source made to receive its sound, `LiveSource`'s `audio`,
/// plays its AAC with the picture, both on the page's clock a little behind the stream), until the task is cancelled or, with
/// ``Options/exitsAfterPlayback``, until a page has shown the stream to its end or stopped
/// on an error it cannot go past (``PageReport/error``: a stream the browser cannot decode).
public struct Preview: Sendable {
    /// What is shown.
    public enum Source: Sendable {
        /// A media file.
        case file(FilePreview)
        /// A live stream (RTP, RTSP played, or a publisher's), shown at low latency.
        case live(LiveSource)

        /// An RTP stream (`rtp://@:PORT` or a session description): `.live(.rtp(receiver))`.
        public static func rtp(_ receiver: RTPReceiver) -> Source { .live(.rtp(receiver)) }
        /// An RTSP stream to play: `.live(.rtsp(client))`.
        public static func rtsp(_ client: RTSPClient) -> Source { .live(.rtsp(client)) }
    }

    /// How the preview runs.
    public struct Options: Sendable {
        /// The web server.
        public var server: DisplayServer.Options
        /// End once a page has shown the stream to its end (a file's end, a live stream's BYE).
        public var exitsAfterPlayback: Bool
        /// Frames (numbers in presentation order, from 0) whose picture pages send back as PNG.
        public var captures: [Int]

        /// Options: serve until cancelled, no captures.
        public init(server: DisplayServer.Options = .init(), exitsAfterPlayback: Bool = false, captures: [Int] = []) {
            self.server = server
            self.exitsAfterPlayback = exitsAfterPlayback
            self.captures = captures
        }
    }

    /// Why the page cannot play a live source's sound of `format` (nil: it can): the page
    /// decodes AAC (WebCodecs' `AudioDecoder`).
    @Sendable public static func soundRefusal(_ format: AudioFormatDescription) -> String? {
        format.isAAC ? nil : "the page plays AAC, not \(format.codecString)"
    }

    /// What is shown.
    public let source: Source
    /// How the preview runs.
    public let options: Options

    /// The server while ``run(onListening:onCapture:)`` runs.
    private let server = Locked<DisplayServer?>(nil)

    /// A preview of `source`.
    public init(source: Source, options: Options = Options()) {
        self.source = source
        self.options = options
    }

    /// Reads the certificate and key files of an `https://` preview again (``DisplayServer/reloadCertificate()``):
    /// pages that come from now on get the new certificate; those open keep theirs.
    public func reloadCertificate() throws(StreamingError) {
        guard let server = server.withLock({ $0 }) else { throw .invalidOption("the preview is not running") }
        try server.reloadCertificate()
    }

    /// Serves the preview; `onListening` gets the page's URL, `onCapture` each PNG a page sends
    /// back (the frame's number and the bytes). Returns the report of the page that ended (or of
    /// every page, when cancelled).
    public func run(onListening: @escaping @Sendable (String) -> Void = { _ in },
                    onCapture: @escaping @Sendable (Int, [UInt8]) -> Void = { _, _ in }) async throws(StreamingError) -> [PageReport] {
        var serverOptions = options.server
        if case .file = source {} else { serverOptions.layer.isLive = true }
        let server = try DisplayServer(options: serverOptions)
        self.server.withLock { $0 = server }
        defer { self.server.withLock { $0 = nil } }
        let outcome = Outcome()
        var captureTimes: [MediaTime] = []
        if case .file(let file) = source {
            // A file that cannot be read is an error now, not when a page comes.
            do { _ = try MediaSource(path: file.path, options: file.options) } catch { throw .source(error) }
        }
        if case .file(let file) = source, !options.captures.isEmpty {
            let times: [MediaTime]
            do { times = try file.presentationTimes() } catch { throw .source(error) }
            for number in options.captures {
                guard times.indices.contains(number) else { throw .invalidOption("\(file.path): no frame \(number) to capture (it has \(times.count))") }
                captureTimes.append(times[number])
            }
        }
        let numbers = Dictionary(zip(captureTimes.map(DisplayMessage.microseconds), options.captures), uniquingKeysWith: { a, _ in a })
        let requestedTimes = captureTimes
        outcome.expectCaptures(numbers.count)
        // A layer's reports taken in: the latest, and the end when one says it.
        let note: @Sendable (DisplayLayer) -> Void = { layer in
            let reports = layer.pageReports
            outcome.latest(reports)
            if let ended = reports.first(where: { $0.ended || $0.error != nil }) { outcome.ended(ended) }
        }
        let watch: @Sendable (DisplayLayer) async -> Void = { layer in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await (timestamp, png) in layer.captures {
                        if let number = numbers[timestamp] {
                            onCapture(number, png)
                            outcome.captured()
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(50))
                        note(layer)
                    }
                }
                await group.waitForAll()
            }
        }
        let shared: DisplayLayer?
        switch source {
        case .file(let file):
            shared = nil
            server.onPage { layer in
                if !requestedTimes.isEmpty { layer.requestCaptures(at: requestedTimes) }
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await watch(layer) }
                    group.addTask { await file.feed(layer) }
                    _ = await group.next()
                    group.cancelAll()
                }
                // The page's last report can come just before it goes (a short stream), after the
                // watcher's last look: one more look, or the end is missed and the preview waits.
                note(layer)
            }
        case .live:
            let layer = DisplayLayer(options: serverOptions.layer)
            server.show(layer)
            shared = layer
        }
        let source = self.source
        let exits = options.exitsAfterPlayback
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run(onListening: onListening) }
                if let shared {
                    group.addTask { await watch(shared) }
                    group.addTask {
                        // A live source: samples to the layer as they come, the end told when
                        // the stream ends (a BYE, a TEARDOWN, the idle timeout) or fails.
                        defer { shared.endOfStream() }
                        if case .live(let live) = source {
                            let report = try await live.withReceiverOptions { $0.isLowLatency = true }
                                .receive(soundRefusal: Preview.soundRefusal) { shared.enqueue($0) }
                            for medium in report.mediaNotReceived {
                                Logger(label: "h264kit.display").warning("\(medium) not played (the page plays H.264 and AAC)")
                            }
                        }
                        shared.endOfStream()
                        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
                    }
                }
                if exits {
                    group.addTask { await outcome.waitForEnd() }
                    _ = try await group.next()
                } else {
                    try await group.next()
                }
                group.cancelAll()
            }
        } catch let error as StreamingError {
            throw error
        } catch is CancellationError {
        } catch {
            throw .sending(error)
        }
        return outcome.reports
    }
}

/// The pages' reports as the preview runs, and the end of playback.
private final class Outcome: Sendable {
    private let state = Locked<(latest: [PageReport], ended: PageReport?)>(([], nil))
    private let captures = Locked<(expected: Int, delivered: Int)>((0, 0))

    func expectCaptures(_ count: Int) { captures.withLock { $0.expected = count } }
    func captured() { captures.withLock { $0.delivered += 1 } }

    func latest(_ reports: [PageReport]) { state.withLock { if $0.ended == nil { $0.latest = reports } } }
    func ended(_ report: PageReport) { state.withLock { $0.ended = $0.ended ?? report } }
    var reports: [PageReport] { state.withLock { $0.ended.map { [$0] } ?? $0.latest } }

    func waitForEnd() async {
        while state.withLock({ $0.ended == nil }) {
            try? await Task.sleep(for: .milliseconds(20))
            if Task.isCancelled { return }
        }
        // The page sends its captures before its last report; they may still be on their way
        // to the handler here (at most 2 s more).
        for _ in 0..<100 where captures.withLock({ $0.delivered < $0.expected }) {
            try? await Task.sleep(for: .milliseconds(20))
            if Task.isCancelled { return }
        }
    }
}
