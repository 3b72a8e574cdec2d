import MediaCore
import SampleFlow
import SystemIO

/// A compression session's frames into a ``SampleSink`` (a movie, an Annex-B stream), from
/// the session's thread or queue: what ``PictureEncoder`` and ``Transcoder`` write through.
/// The sink is SampleFlow's; this adds the lock and keeps the first failure (later frames are
/// dropped). Nothing is left at the output until ``finish()``.
///
/// Samples of other tracks copied beside the frames (a transcode's sound) are held until the
/// encoder's frames reach their decoding time and written between them, so that the output
/// interleaves as the input did although x264 gives its frames a lookahead late (at most
/// ``maximumHeld`` are held; past that the oldest go at once).
final class CompressedFrameSink: Sendable {
    private struct State {
        var sink: (any SampleSink)?
        var error: SessionError?
        var frames = 0
        var bytes = 0
        var held: [SampleBuffer] = []
        var heldStart = 0
        var copied = 0
        var others: [TrackDescription]
    }

    private let state: Locked<State>

    /// The most samples of other tracks held for the frames to catch up.
    static let maximumHeld = 16_384

    /// Opens `output`; `annexB`: the encoder frames its output with start codes. `others`: the
    /// other tracks whose samples ``hold(_:)`` takes, declared to the sink after the first frame
    /// (the video is the first track).
    init(_ output: SampleOutput, annexB: Bool, others: [TrackDescription] = []) throws(SessionError) {
        do { state = Locked(State(sink: try output.makeSink(samplesInAnnexB: annexB), others: others)) } catch { throw .source(error) }
    }

    /// Samples of other tracks written.
    var copiedSamples: Int { state.withLock { $0.copied } }

    /// Takes a sample of another track, written once the frames reach its decoding time.
    func hold(_ sample: SampleBuffer) {
        state.withLock { state in
            state.held.append(sample)
            if state.held.count - state.heldStart > Self.maximumHeld, state.frames > 0 { Self.write(&state, upTo: nil, count: 1) }
        }
    }

    /// Writes held samples decoded at or before `time` (all with nil), or the first `count`.
    private static func write(_ state: inout State, upTo time: MediaTime?, count: Int = .max) {
        guard state.error == nil, let sink = state.sink else { return }
        var written = 0
        while state.heldStart < state.held.count, written < count {
            let sample = state.held[state.heldStart]
            if let time, sample.decodeTime > time { break }
            do throws(SampleFlowError) { try sink.append(sample) } catch {
                state.error = .source(error)
                return
            }
            state.heldStart += 1
            state.copied += 1
            written += 1
        }
        if state.heldStart == state.held.count || state.heldStart > 4096 {
            state.held.removeFirst(state.heldStart)
            state.heldStart = 0
        }
    }

    /// The first failure, if any.
    var error: SessionError? { state.withLock { $0.error } }
    /// Frames written.
    var frames: Int { state.withLock { $0.frames } }
    /// Bytes of frame data written.
    var bytes: Int { state.withLock { $0.bytes } }

    /// Writes a frame (after a failure, drops it).
    func take(_ frame: CompressedFrame) {
        state.withLock { state in
            guard state.error == nil, let sink = state.sink else { return }
            do throws(SampleFlowError) {
                try sink.append(frame.sampleBuffer)
                if state.frames == 0 { try sink.prepare(state.others) }
                state.frames += 1
                state.bytes += frame.sampleBuffer.size
            } catch {
                state.error = .source(error)
            }
            Self.write(&state, upTo: frame.sampleBuffer.decodeTime)
        }
    }

    /// Completes the output, once.
    func finish() throws(SessionError) {
        try state.withLock { (state) throws(SessionError) in
            guard state.sink != nil else { return }
            Self.write(&state, upTo: nil)
            if let error = state.error { throw error }
            let sink = state.sink!
            state.sink = nil
            do throws(SampleFlowError) { _ = try sink.finish() } catch { throw .source(error) }
        }
    }

    /// Gives up: nothing is left at the output. Harmless after ``finish()``.
    func cancel() {
        state.withLock { state in
            state.sink?.cancel()
            state.sink = nil
        }
    }
}
