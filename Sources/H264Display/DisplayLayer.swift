public import MediaCore
import SystemIO

/// A layer that shows H.264 sample buffers in the pages that open a ``DisplayServer``: the
/// AVSampleBufferDisplayLayer of seed 003's case study 1, with the browser as the display. The
/// application enqueues sample buffers; each page decodes them with WebCodecs and draws each
/// frame when the layer's control timebase reaches its presentation time. AAC sample buffers
/// enqueued beside the pictures are played by the page on the same timebase (the seeds'
/// AVSampleBufferAudioRenderer under a render synchronizer): WebCodecs' `AudioDecoder` and Web
/// Audio.
///
/// The model is the seed's: ``enqueue(_:hidden:)`` takes sample buffers in decode order;
/// ``isReadyForMoreMediaData`` and ``requestMediaDataWhenReady()`` throttle the producer;
/// ``flush()`` empties every queue; the control timebase (``setRate(_:)``, ``setTime(_:)``,
/// pause is rate 0, seeking is a flush and a new time) reaches every page. Back-pressure is
/// real: a page reports what it has received, decoded and shown and where its clock is, and the
/// layer is ready only while a page has less than ``Options/aheadOfPresentation`` of samples
/// waiting, so a paused page stops the producer and memory stays flat for any length of
/// stream. With several pages, the layer follows the fastest: a page that falls behind (its
/// queue of ``Options/maximumQueuedSamples`` full, a page that stopped reading) skips to the
/// next sync sample, counted, and never holds up the others. With no page, it is not ready.
///
/// Pages ask for control too (play, pause, a rate, a seek, a frame step): play, pause and rate
/// change the timebase here; seeks and steps are handed to the application on
/// ``controlRequests``, since only it can go back in its source.
public final class DisplayLayer: Sendable {
    /// How the layer feeds its pages.
    public struct Options: Sendable, Hashable {
        /// How far ahead of a page's clock samples are sent before the layer stops being ready.
        public var aheadOfPresentation: Duration
        /// The most samples waiting to be sent to one page; past it the page skips to the next
        /// sync sample.
        public var maximumQueuedSamples: Int
        /// A live source: pages show each frame as soon as it is decoded (no clock, no seek),
        /// and report the latency added from a sample's arrival to its drawing. With sound
        /// (AAC samples enqueued beside the pictures), a page plays both on a clock of its
        /// own started 0.3 s behind the first picture, so that the sound is decoded and queued
        /// before it is heard with its picture.
        public var isLive: Bool

        /// Options: a second ahead, 240 samples a page, not live.
        public init(aheadOfPresentation: Duration = .seconds(1), maximumQueuedSamples: Int = 240, isLive: Bool = false) {
            self.aheadOfPresentation = aheadOfPresentation
            self.maximumQueuedSamples = maximumQueuedSamples
            self.isLive = isLive
        }
    }

    /// What a page asked for that the application carries out.
    public enum ControlRequest: Sendable, Hashable {
        /// Show the frame at this presentation time (decode from the sync sample before it).
        case seek(MediaTime)
        /// The page stepped one frame while paused; its clock is now at this time.
        case step(MediaTime)
    }

    /// What the layer has done.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Samples enqueued.
        public var samplesEnqueued = 0
        /// Samples handed to pages (each page counts).
        public var samplesSent = 0
        /// Samples a page could not take (it fell behind), all pages.
        public var samplesDroppedForSlowPages = 0
        /// Flushes.
        public var flushes = 0
        /// Pages that watched.
        public var pagesSeen = 0
        /// Pages watching now.
        public var pagesWatching = 0
    }

    /// How the layer feeds its pages.
    public let options: Options
    /// The control timebase: pages show a frame when it reaches the frame's presentation time.
    public let controlTimebase = Timebase()
    /// Seeks and steps the pages ask for.
    public let controlRequests: AsyncStream<ControlRequest>
    /// PNGs of what pages showed, for ``requestCaptures(at:)``: the presentation time
    /// (microseconds) and the PNG bytes.
    public let captures: AsyncStream<(timestamp: Int64, png: [UInt8])>

    private let requestContinuation: AsyncStream<ControlRequest>.Continuation
    private let captureContinuation: AsyncStream<(timestamp: Int64, png: [UInt8])>.Continuation
    private struct State {
        var pages: [Int: PageConnection] = [:]
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        var sampleNumber = 0
        var lastPresentation: MediaTime?
        var ended = false
        var statistics = Statistics()
        var reports: [Int: PageReport] = [:]
        /// The last report of the last page that went (kept for whoever asks after it went).
        var lastDeparted: PageReport?
        /// A page has reported the end of playback (it may have gone since).
        var endedSeen = false
        var captureRequests: [Int64] = []
        var afterFlush = false
        var mediaDuration: MediaTime?
    }
    private let state = Locked(State())

    /// A layer with `options`.
    public init(options: Options = Options()) {
        self.options = options
        (controlRequests, requestContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
        (captures, captureContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    deinit {
        requestContinuation.finish()
        captureContinuation.finish()
    }

    // MARK: The producer's side

    /// Queues a sample buffer for every page watching (decode order). `hidden`: decode it but do
    /// not show it (the frames between a sync sample and a seek's target); a sample marked
    /// `doNotDisplay` is hidden too. Always accepted: the producer paces itself with
    /// ``isReadyForMoreMediaData`` or ``requestMediaDataWhenReady()``.
    public func enqueue(_ sample: SampleBuffer, hidden: Bool = false) {
        let (pages, number, afterFlush) = state.withLock { state -> ([PageConnection], Int, Bool) in
            state.statistics.samplesEnqueued += 1
            if state.lastPresentation.map({ sample.presentationTime > $0 }) ?? true { state.lastPresentation = sample.presentationTime }
            defer {
                state.sampleNumber += 1
                state.afterFlush = false
            }
            return (Array(state.pages.values), state.sampleNumber, state.afterFlush)
        }
        let message = OutgoingSample(sample: sample, number: number, hidden: hidden || sample.attachments.doNotDisplay, afterFlush: afterFlush,
                                     arrival: Self.epochMicroseconds())
        var sent = 0, dropped = 0
        for page in pages {
            if page.send(message, live: options.isLive) { sent += 1 } else { dropped += 1 }
        }
        state.withLock {
            $0.statistics.samplesSent += sent
            $0.statistics.samplesDroppedForSlowPages += dropped
        }
    }

    /// Whether a page can take more now (see the type's discussion on back-pressure).
    public var isReadyForMoreMediaData: Bool {
        state.withLock { state in readiness(state) }
    }

    /// Returns once ``isReadyForMoreMediaData`` is true (the `requestMediaDataWhenReady(on:using:)`
    /// of AVSampleBufferDisplayLayer, as an `await`). Throws `CancellationError` when the task
    /// is cancelled.
    public func requestMediaDataWhenReady() async throws {
        try await requestMediaDataWhenReady(orWhen: { false })
    }

    /// Returns once ``isReadyForMoreMediaData`` is true or `interrupted()` is (checked under the
    /// layer's lock, and again at every wake: whoever makes it true calls ``wakeProducer()``).
    func requestMediaDataWhenReady(orWhen interrupted: @Sendable () -> Bool) async throws {
        while true {
            try Task.checkCancellation()
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            let ready: Bool = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if readiness(state) || interrupted() || Task.isCancelled { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
                return isReadyForMoreMediaData || interrupted()
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
            if ready { return }
        }
    }

    /// Empties every queue: samples not yet sent are dropped, and each page drops what it has
    /// queued and decoded and resets its decoder (the next sample must be a sync sample).
    public func flush() {
        let pages = state.withLock { state -> [PageConnection] in
            state.statistics.flushes += 1
            state.afterFlush = true
            state.lastPresentation = nil
            state.endedSeen = false  // (playing again)
            return Array(state.pages.values)
        }
        for page in pages { page.flush() }
        wakeWaiters()
    }

    /// The end of the stream: pages report the end of playback once they have shown the last frame.
    public func endOfStream() {
        let pages = state.withLock { state -> [PageConnection] in
            state.ended = true
            return Array(state.pages.values)
        }
        for page in pages { page.sendText(DisplayMessage.end) }
    }

    // MARK: The control timebase

    /// Sets the timebase's rate (0 pauses; 1 is real time) from its current time.
    public func setRate(_ rate: Double) {
        controlTimebase.setRate(rate)
        broadcastTimebase()
    }

    /// Sets the timebase's time, keeping its rate.
    public func setTime(_ time: MediaTime) {
        controlTimebase.setTime(time)
        broadcastTimebase()
    }

    /// Sets the timebase's rate and time at once (to start playing at `time`).
    public func setRate(_ rate: Double, time: MediaTime) {
        controlTimebase.setRate(rate, time: time)
        broadcastTimebase()
    }

    /// The stream's length, when known (a file): pages size their seek bar by it.
    public var mediaDuration: MediaTime? {
        get { state.withLock { $0.mediaDuration } }
        set {
            let pages = state.withLock { state -> [PageConnection] in
                state.mediaDuration = newValue
                return Array(state.pages.values)
            }
            if let newValue { for page in pages { page.sendText(DisplayMessage.info(duration: newValue)) } }
        }
    }

    /// Asks every page to send back a PNG of what its canvas shows for the frames at these
    /// presentation times; they come on ``captures``.
    public func requestCaptures(at timestamps: [MediaTime]) {
        let micro = timestamps.map(DisplayMessage.microseconds)
        let pages = state.withLock { state -> [PageConnection] in
            state.captureRequests += micro
            return Array(state.pages.values)
        }
        for page in pages { page.sendText(DisplayMessage.capture(micro)) }
    }

    // MARK: What the pages said

    /// What the layer has done.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Each watching page's last report (status or final report), then the last report of the
    /// page that went last when it had ended or failed, or when no page watches (a page's
    /// report is not kept after it goes: a page that comes and goes again and again costs
    /// nothing).
    public var pageReports: [PageReport] {
        state.withLock { state in
            var reports = state.reports.keys.sorted().compactMap { state.reports[$0] }
            if let departed = state.lastDeparted, reports.isEmpty || departed.ended || departed.error != nil { reports.append(departed) }
            return reports
        }
    }

    /// Whether some page has shown the stream to its end (after ``endOfStream()``), even if it
    /// has gone since.
    public var playbackEnded: Bool { state.withLock { $0.endedSeen } }

    /// Returns once a page has shown the stream to its end.
    public func waitUntilPlaybackEnded() async throws {
        while !playbackEnded {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    // MARK: Pages (the server's side)

    /// A page starts watching: it is told the timebase and, when the stream has ended, the end.
    func attach(_ page: PageConnection) {
        let (captures, ended, duration) = state.withLock { state -> ([Int64], Bool, MediaTime?) in
            state.pages[page.id] = page
            state.statistics.pagesSeen += 1
            state.statistics.pagesWatching = state.pages.count
            return (state.captureRequests, state.ended, state.mediaDuration)
        }
        page.sendTimebase(DisplayMessage.timebase(time: controlTimebase.time, rate: controlTimebase.rate))
        if let duration { page.sendText(DisplayMessage.info(duration: duration)) }
        if !captures.isEmpty { page.sendText(DisplayMessage.capture(captures)) }
        if ended { page.sendText(DisplayMessage.end) }
        wakeWaiters()
    }

    /// A page went away.
    func detach(_ page: PageConnection) {
        state.withLock { state in
            state.pages[page.id] = nil
            if let report = state.reports.removeValue(forKey: page.id) { state.lastDeparted = report }
            state.statistics.pagesWatching = state.pages.count
        }
        wakeWaiters()
    }

    /// A page's writer took a sample off its queue (sent or skipped as stale). When that gives
    /// the page room, a producer waiting in ``requestMediaDataWhenReady()`` wakes: room comes
    /// back as the writer drains, and a page that never reports (or reports seldom) would
    /// otherwise leave the producer asleep until some other page came, went or reported.
    func taken(by page: PageConnection) {
        page.taken()
        let wakes = state.withLock { state -> Bool in
            guard !state.waiters.isEmpty else { return false }
            return page.hasRoom(lastPresentation: state.lastPresentation, ahead: aheadSeconds, live: options.isLive)
        }
        if wakes { wakeWaiters() }
    }

    /// A page's status or final report.
    func record(_ report: PageReport, from page: PageConnection) {
        state.withLock { state in
            guard state.pages[page.id] != nil else { return }  // (a late message from a page that went)
            state.reports[page.id] = report
            if report.ended { state.endedSeen = true }
        }
        page.noteStatus(report)
        wakeWaiters()
    }

    /// A page's control request: play, pause and rate here; seeks and steps to the application.
    func control(_ action: String, value: Double?) {
        switch action {
        case "play":
            let rate = value ?? 1
            guard rate.isFinite, (0.0625...16).contains(rate) else { return }
            setRate(rate)
        case "pause": setRate(0)
        case "rate":
            guard let value, value.isFinite, (0.0625...16).contains(value) else { return }
            setRate(value)
        case "seek":
            guard let value, value.isFinite, value >= 0 else { return }
            requestContinuation.yield(.seek(MediaTime(seconds: value, preferredTimescale: 90_000)))
        case "step":
            guard let value, value.isFinite else { return }
            let time = MediaTime(seconds: value, preferredTimescale: 90_000)
            setRate(0, time: time)  // every page watching is told, not only the one that stepped
            requestContinuation.yield(.step(time))
        default:
            return
        }
    }

    /// A PNG a page sent back; false (nothing kept) when no capture was asked for at that time.
    func captured(timestamp: Int64, png: [UInt8]) -> Bool {
        // Each capture asked for is taken once (a page cannot send one again and again).
        let asked = state.withLock { state -> Bool in
            guard let index = state.captureRequests.firstIndex(of: timestamp) else { return false }
            state.captureRequests.remove(at: index)
            return true
        }
        guard asked else { return false }
        captureContinuation.yield((timestamp, png))
        return true
    }

    private func broadcastTimebase() {
        let message = DisplayMessage.timebase(time: controlTimebase.time, rate: controlTimebase.rate)
        for page in state.withLock({ Array($0.pages.values) }) { page.sendTimebase(message) }
        wakeWaiters()
    }

    /// Ready when a page that keeps up has room: fewer than its limit of samples waiting, and
    /// less than `aheadOfPresentation` of media past its clock.
    private func readiness(_ state: State) -> Bool {
        for page in state.pages.values where page.hasRoom(lastPresentation: state.lastPresentation, ahead: aheadSeconds, live: options.isLive) {
            return true
        }
        return false
    }

    /// ``Options/aheadOfPresentation`` in seconds.
    private var aheadSeconds: Double {
        let limit = options.aheadOfPresentation
        return Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
    }

    /// Producers waiting in ``requestMediaDataWhenReady()`` now (for tests: a producer is parked).
    var waitingProducers: Int { state.withLock { $0.waiters.count } }

    /// Wakes a producer waiting in `requestMediaDataWhenReady(orWhen:)` to check its condition.
    func wakeProducer() { wakeWaiters() }

    private func wakeWaiters() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Wall-clock microseconds since 1970 (the page compares with `performance.timeOrigin + now()`).
    static func epochMicroseconds() -> Int64 {
        let (seconds, nanoseconds) = WallClock.now
        return seconds * 1_000_000 + nanoseconds / 1000
    }
}
