import MediaCore
import SampleFlow
import SystemIO

/// A compression session's frames into a ``SampleSink`` (a movie, an Annex-B stream), from
/// the session's thread or queue: what ``PictureEncoder`` and ``Transcoder`` write through.
/// The sink is SampleFlow's; this adds the lock and keeps the first failure (later frames are
/// dropped). Nothing is left at the output until ``finish()``.
final class CompressedFrameSink: Sendable {
    private struct State {
        var sink: (any SampleSink)?
        var error: SessionError?
        var frames = 0
        var bytes = 0
    }

    private let state: Locked<State>

    /// Opens `output`; `annexB`: the encoder frames its output with start codes.
    init(_ output: SampleOutput, annexB: Bool) throws(SessionError) {
        do { state = Locked(State(sink: try output.makeSink(samplesInAnnexB: annexB))) } catch { throw .source(error) }
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
                state.frames += 1
                state.bytes += frame.sampleBuffer.size
            } catch {
                state.error = .source(error)
            }
        }
    }

    /// Completes the output, once.
    func finish() throws(SessionError) {
        try state.withLock { (state) throws(SessionError) in
            guard let sink = state.sink else { return }
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
