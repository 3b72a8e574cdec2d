public import H264Network
public import H264Session
import H264Container
import MediaCore
import SystemIO

extension RTPReceiver {
    /// Receives into a file: a movie (MP4 or MOV, through `MovieWriter`) or an Annex-B
    /// stream (`"-"`: standard output, for `ffplay -`), parameter sets before every IDR. The
    /// file is finished however receiving ends, and holds every whole access unit received;
    /// nothing is left at `output` when receiving fails before its end.
    public func record(to output: EncodedOutput) async throws(NetworkError) -> Report {
        let recording = try Recording(output)
        let report: Report
        do { report = try await receive { sample in try recording.append(sample) } } catch {
            recording.cancel()
            throw error
        }
        guard report.samples > 0 else {
            recording.cancel()
            throw NetworkError(.output, "no whole access unit received on \(endpoint) (it ended: \(report.ending.rawValue)); nothing written")
        }
        try recording.finish()
        return report
    }
}

/// A movie or Annex-B file being written from received samples.
final class Recording {
    let path: String
    var movie: MovieWriter?
    var stream: OutputFile?
    var annexB = AnnexBWriter()
    var buffer: [UInt8] = []

    init(_ output: EncodedOutput) throws(NetworkError) {
        switch output {
        case .movie(let path, let options):
            self.path = path
            do { movie = try MovieWriter(path: path, options: options) } catch { throw NetworkError(.output, "\(error)") }
        case .annexB(let path):
            self.path = path
            do { stream = try OutputFile(path: path) } catch { throw NetworkError(.output, "\(path): \(error)") }
        }
    }

    func append(_ sample: SampleBuffer) throws {
        if let movie { try movie.append(sample) }
        if let stream {
            buffer.removeAll(keepingCapacity: true)
            try annexB.append(sample, to: &buffer)
            try stream.write(buffer)
        }
    }

    func finish() throws(NetworkError) {
        do {
            if let movie { _ = try movie.finish() }
            try stream?.commit()
        } catch {
            throw NetworkError(.output, "\(error)")
        }
    }

    func cancel() {
        movie?.cancel()
        stream = nil
    }
}
