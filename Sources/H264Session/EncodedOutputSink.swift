import SystemIO
import H264Container
import MediaCore
import MediaIO

/// Where a compression session's frames go (an Annex-B file or the movie writer), from the
/// session's thread or queue: ``PictureEncoder`` and ``Transcoder`` write through it. The first
/// failure is kept and later frames are dropped; nothing is left at the output until ``commit()``.
final class EncodedOutputSink: Sendable {
    private struct State {
        var movie: MovieWriter?
        var stream: OutputFile?
        var error: SessionError?
        var frames = 0
        var bytes = 0
    }

    private let state: Locked<State>

    init(_ output: EncodedOutput) throws(SessionError) {
        var state = State()
        do {
            switch output {
            case .movie(let path, let options): state.movie = try MovieWriter(path: path, options: options)
            case .annexB(let path): state.stream = try OutputFile(path: path)
            }
        } catch let error as ContainerError {
            throw .container(error)
        } catch let error as SystemError {
            throw .mediaIO(MediaIOError(.io, "\(error.operation.rawValue): \(error.errno)", path: error.path))
        } catch {
            throw .mediaIO(MediaIOError(.io, "\(error)"))
        }
        self.state = Locked(state)
    }

    var error: SessionError? { state.withLock { $0.error } }
    var frames: Int { state.withLock { $0.frames } }
    var bytes: Int { state.withLock { $0.bytes } }

    func take(_ frame: CompressedFrame) {
        state.withLock { state in
            guard state.error == nil else { return }
            state.frames += 1
            state.bytes += frame.sampleBuffer.data.count
            do {
                if let movie = state.movie { try movie.append(frame.sampleBuffer) }
                if let stream = state.stream {
                    try frame.sampleBuffer.data.forEachSegment { (raw) throws(SystemError) in try stream.write(raw) }
                }
            } catch let error as ContainerError {
                state.error = .container(error)
            } catch let error as SystemError {
                state.error = .mediaIO(MediaIOError(.io, "\(error.operation.rawValue): \(error.errno)", path: error.path))
            } catch {
                state.error = .mediaIO(MediaIOError(.io, "\(error)"))
            }
        }
    }

    func commit() throws(SessionError) {
        try state.withLock { (state) throws(SessionError) in
            do {
                if let movie = state.movie { _ = try movie.finish() }
                try state.stream?.commit()
                state.movie = nil
                state.stream = nil
            } catch let error as ContainerError {
                throw .container(error)
            } catch {
                throw .mediaIO(MediaIOError(.io, "\(error)"))
            }
        }
    }

    func cancel() {
        state.withLock { state in
            state.movie?.cancel()
            state.movie = nil
            state.stream = nil  // an uncommitted OutputFile removes its temporary file
        }
    }
}
