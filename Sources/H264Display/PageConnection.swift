import MediaCore
import SystemIO

/// A sample on its way to a page.
struct OutgoingSample: Sendable {
    var sample: SampleBuffer
    var number: Int
    var hidden: Bool
    var afterFlush: Bool
    /// When the layer got it, wall-clock microseconds (a live page reports the latency from here).
    var arrival: Int64
    /// Parameter sets to send in band before the sample's NAL units (new ones that arrived
    /// between sync samples: a decoder is configured again only at a sync sample).
    var inBand: [[UInt8]] = []
}

/// One page watching a layer: the messages waiting for its WebSocket (drained by the server's
/// writer for that socket), and what the page last reported.
///
/// Samples wait in order, at most the layer's `maximumQueuedSamples`; one that does not fit is
/// dropped with everything up to the next sync sample (counted): the page fell behind. A page
/// starts at a sync sample. A flush makes the samples still waiting stale (the writer skips
/// them) and sends the page a `flush`.
final class PageConnection: Sendable {
    enum Outgoing: Sendable {
        case text(String)
        case sample(OutgoingSample, generation: Int)
        /// The latest timebase (one waits at most: a newer one replaces it).
        case timebase
    }

    private struct State {
        var queued = 0
        var waitingForSync = true
        var fellBehind = false
        var dropped = 0
        var generation = 0
        var configured: VideoFormatDescription?
        var soundConfigured: AudioFormatDescription?
        var status: PageReport?
        var statusReceived: ContinuousClock.Instant?
        var lastQueuedPresentation: MediaTime?
        var textsQueued = 0
        var closedForBacklog = false
        /// The writer has stopped (the socket failed or closed): nothing is counted any more.
        var writerStopped = false
        var pendingTimebase: String?
    }

    let id: Int
    let messages: AsyncStream<Outgoing>
    private let continuation: AsyncStream<Outgoing>.Continuation
    private let limit: Int
    private let textLimit: Int
    private let onBacklog: @Sendable () -> Void
    private let state = Locked(State())

    /// A page whose queue holds at most `maximumQueuedSamples` samples and `maximumQueuedTexts`
    /// text messages; past the second, `onBacklog` is called once (the server closes it).
    init(id: Int, maximumQueuedSamples: Int, maximumQueuedTexts: Int = 1024, onBacklog: @escaping @Sendable () -> Void = {}) {
        self.id = id
        limit = maximumQueuedSamples
        textLimit = maximumQueuedTexts
        self.onBacklog = onBacklog
        (messages, continuation) = AsyncStream.makeStream()
    }

    /// Counts a text message queued; true when that puts the page past its backlog for the
    /// first time (lock held).
    private func queueText(_ state: inout State) -> Bool {
        guard !state.writerStopped else { return false }
        state.textsQueued += 1
        guard state.textsQueued > textLimit, !state.closedForBacklog else { return false }
        state.closedForBacklog = true
        return true
    }

    /// Samples dropped because the page fell behind.
    var droppedSamples: Int { state.withLock { $0.dropped } }

    /// Queues a sample (its decoder configuration first when it changes); false when dropped.
    /// A sound's sample (AAC) is queued beside the pictures (none while the page has fallen
    /// behind; a sound a page cannot decode is not sent).
    func send(_ outgoing: OutgoingSample, live: Bool) -> Bool {
        if let sound = outgoing.sample.audioFormatDescription { return send(outgoing, sound: sound) }
        var overflowed = false
        let (messages, accepted) = state.withLock { state -> ([Outgoing], Bool) in
            if state.waitingForSync, !outgoing.sample.isSync { return ([], false) }
            guard state.queued < limit else {
                state.waitingForSync = true
                state.fellBehind = true
                state.dropped += 1
                return ([], false)
            }
            state.waitingForSync = false
            state.fellBehind = false
            var messages: [Outgoing] = []
            var outgoing = outgoing
            // The page shows pictures: a sample of another track has nothing to show.
            guard let description = outgoing.sample.videoFormatDescription else { return ([], false) }
            if state.configured != description {
                if outgoing.sample.isSync || state.configured == nil {
                    messages.append(.text(DisplayMessage.configuration(description, live: live)))
                    overflowed = queueText(&state)
                } else {
                    // New parameter sets between sync samples (a stream that sends a PPS with
                    // every picture): WebCodecs wants a key frame after configure(), so they go
                    // in band, where the decoder takes them as it would in an Annex-B stream.
                    outgoing.inBand = description.sequenceParameterSets + description.sequenceParameterSetExtensions + description.pictureParameterSets
                }
                state.configured = description
            }
            state.queued += 1
            state.lastQueuedPresentation = outgoing.sample.presentationTime
            messages.append(.sample(outgoing, generation: state.generation))
            return (messages, true)
        }
        for message in messages { continuation.yield(message) }
        if overflowed { onBacklog() }
        return accepted
    }

    private func send(_ outgoing: OutgoingSample, sound: AudioFormatDescription) -> Bool {
        var overflowed = false
        let (messages, accepted) = state.withLock { state -> ([Outgoing], Bool) in
            guard !state.fellBehind, state.queued < limit else { return ([], false) }
            var messages: [Outgoing] = []
            if state.soundConfigured != sound {
                guard let text = DisplayMessage.audioConfiguration(sound) else { return ([], false) }
                messages.append(.text(text))
                overflowed = queueText(&state)
                state.soundConfigured = sound
            }
            state.queued += 1
            messages.append(.sample(outgoing, generation: state.generation))
            return (messages, true)
        }
        for message in messages { continuation.yield(message) }
        if overflowed { onBacklog() }
        return accepted
    }

    /// Queues a control message.
    func sendText(_ text: String) {
        let overflowed = state.withLock { queueText(&$0) }
        continuation.yield(.text(text))
        if overflowed { onBacklog() }
    }

    /// The writer took a text message off the queue.
    func textTaken() {
        state.withLock { $0.textsQueued -= 1 }
    }

    /// Queues the control timebase: at most one waits for the writer, the newest (what any
    /// number of play, pause and rate changes while the page does not read come to).
    func sendTimebase(_ text: String) {
        let queue = state.withLock { state -> Bool in
            defer { state.pendingTimebase = text }
            return state.pendingTimebase == nil
        }
        if queue { continuation.yield(.timebase) }
    }

    /// The timebase to send now (the writer took its place in the queue).
    func takeTimebase() -> String? {
        state.withLock { state in
            defer { state.pendingTimebase = nil }
            return state.pendingTimebase
        }
    }

    /// The writer has stopped: what is still queued is never taken, and counts for nothing.
    func writerStopped() {
        state.withLock { $0.writerStopped = true }
    }

    /// Whether a sample of this generation should still go out (not flushed since).
    func isCurrent(_ generation: Int) -> Bool { state.withLock { $0.generation == generation } }

    /// The writer took a sample off the queue (sent or skipped). A page that fell behind has
    /// room again once its queue has drained below half (it still starts again at a sync
    /// sample): without that, a page left alone after the faster pages went would never be
    /// fed again.
    func taken() {
        state.withLock { state in
            state.queued -= 1
            if state.fellBehind, state.queued < limit / 2 { state.fellBehind = false }
        }
    }

    /// Drops what is waiting; the page is told to drop what it holds.
    func flush() {
        let overflowed = state.withLock { state in
            state.generation += 1
            state.waitingForSync = true
            state.lastQueuedPresentation = nil
            return queueText(&state)
        }
        continuation.yield(.text(DisplayMessage.flush))
        if overflowed { onBacklog() }
    }

    /// The page's latest status.
    func noteStatus(_ report: PageReport) {
        state.withLock { state in
            state.status = report
            state.statusReceived = .now
        }
    }

    /// Room for more: not fallen behind, queue not full, and (a file) less than `ahead` seconds
    /// of media past the page's clock (its last report, moved on at its rate since).
    func hasRoom(lastPresentation: MediaTime?, ahead: Double, live: Bool) -> Bool {
        state.withLock { state in
            guard !state.fellBehind, state.queued < limit / 2 else { return false }
            if live { return true }
            guard let status = state.status, let received = state.statusReceived else {
                return state.queued < 30  // the page has not reported yet
            }
            guard let last = lastPresentation ?? state.lastQueuedPresentation, last.isNumeric else { return true }
            let elapsed = ContinuousClock.now - received
            let clock = status.time + (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * status.rate
            return last.seconds - clock < ahead
        }
    }

    /// No more messages (the socket closed).
    func finish() {
        continuation.finish()
    }
}
