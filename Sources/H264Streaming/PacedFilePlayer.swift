import SampleFlow
import H264Network
import MediaCore
import NIOCore

/// Reads a media file's samples and hands each to a fan-out when a ``Timebase`` reaches its
/// decode time, on one SwiftNIO event loop: the pacing runs on the loop's timers, off Swift's
/// cooperative pool, and a pause (rate 0) holds the next sample until the rate changes.
///
/// Unpaced (`paced` false), samples go as fast as the subscribers' sockets take them: with
/// `waitsForRoom` (a file played to one client) the player waits while a socket is over its
/// watermark and goes on when it has room (``roomAvailable()``, or a check each millisecond),
/// so the file's pace is the client's and nothing is dropped; a shared stream instead leaves a
/// slow client to skip to the next sync sample (``RTPSubscriber``), as a live source must.
///
/// Everything but `start`, `pause`, `resume`, `stop` and `roomAvailable` (which hop to the
/// loop) runs on the loop, so the reader is touched by one thread only.
final class PacedFilePlayer: @unchecked Sendable {
    let loop: any EventLoop
    let fanOut: RTPFanOut
    let paced: Bool
    let rate: Double
    let waitsForRoom: Bool
    private var reader: LoopingSampleReader
    private let timebase = Timebase()
    private var pending: SampleBuffer?
    private var scheduled: Scheduled<Void>?
    private var started = false
    private var stopped = false
    private var isFirst = true
    private var lastDuration: MediaTime?
    private var waitingForRoom = false
    private let onEnd: @Sendable ((any Error)?) -> Void

    /// A player of `reader` into `fanOut`; `onEnd` is called on the loop once, at the end of
    /// the file (nil) or at a read error.
    init(reader: LoopingSampleReader, fanOut: RTPFanOut, loop: any EventLoop, paced: Bool, rate: Double, waitsForRoom: Bool = false,
         onEnd: @escaping @Sendable ((any Error)?) -> Void) {
        self.reader = reader
        self.fanOut = fanOut
        self.loop = loop
        self.paced = paced
        self.rate = rate
        self.waitsForRoom = waitsForRoom && !paced
        self.onEnd = onEnd
    }

    func start() {
        loop.execute {
            guard !self.started, !self.stopped else { return }
            self.started = true
            self.pump()
        }
    }

    func pause() {
        loop.execute {
            self.timebase.setRate(0)
            self.scheduled?.cancel()
            self.scheduled = nil
        }
    }

    func resume() {
        loop.execute {
            guard self.started, !self.stopped, self.timebase.rate == 0, self.pending != nil || !self.reader.isFinished else { return }
            self.timebase.setRate(self.rate)
            self.scheduled?.cancel()
            self.scheduled = nil
            self.pump()
        }
    }

    /// A subscriber's socket has room again: an unpaced player waiting for it goes on.
    func roomAvailable() {
        loop.execute {
            guard self.waitingForRoom, !self.stopped else { return }
            self.waitingForRoom = false
            self.scheduled?.cancel()
            self.scheduled = nil
            self.pump()
        }
    }

    func stop() {
        loop.execute {
            self.stopped = true
            self.scheduled?.cancel()
            self.scheduled = nil
        }
    }

    /// Hands on every sample that is due, then sets a timer for the next one.
    private func pump() {
        loop.preconditionInEventLoop()
        var handed = 0
        while !stopped {
            let sample: SampleBuffer
            if let pending {
                sample = pending
            } else {
                do {
                    guard let next = try reader.next() else { return end(nil) }
                    sample = next
                } catch {
                    return end(error)
                }
                if isFirst {
                    // The clock starts at the first sample's decode time.
                    timebase.setRate(rate, time: sample.decodeTime)
                    isFirst = false
                }
            }
            if paced {
                switch timebase.schedule(for: sample.decodeTime) {
                case .after(let wait):
                    pending = sample
                    let nanoseconds = max(0, wait.converted(toTimescale: 1_000_000_000, rounding: .awayFromZero).value)
                    scheduled = loop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
                        scheduled = nil
                        pump()
                    }
                    return
                case .paused:
                    pending = sample
                    return
                case .due, .unreachable:
                    break
                }
            } else if waitsForRoom && !fanOut.hasRoom {
                // Unpaced to one client: its socket is full; wait until it has room again.
                pending = sample
                waitingForRoom = true
                scheduled = loop.scheduleTask(in: .milliseconds(1)) { [self] in
                    scheduled = nil
                    waitingForRoom = false
                    pump()
                }
                return
            } else if handed >= 8 {
                // Unpaced: a few at a time, then let the loop serve its other work.
                pending = sample
                loop.execute { [self] in pump() }
                return
            }
            pending = nil
            lastDuration = sample.duration
            do { try fanOut.deliver(sample) } catch { return end(error) }
            handed += 1
        }
    }

    /// The end of the file (or a read error): the stream ends once the last frame's time is
    /// over; each client's BYE then follows its last packets by half a second at least (see
    /// ``RTPSubscriber/goodbye()``), as ``RTPSender``'s does.
    private func end(_ error: (any Error)?) {
        guard !stopped else { return }
        stopped = true
        var linger = TimeAmount.zero
        if paced, let last = lastDuration, rate > 0 {
            linger = .nanoseconds(Int64(last.seconds / rate * 1e9))
        }
        let fanOut = fanOut, onEnd = onEnd
        loop.scheduleTask(in: linger) {
            fanOut.finish()
            onEnd(error)
        }
    }
}
