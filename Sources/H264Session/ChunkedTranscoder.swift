import Dispatch
import H264Codec
public import H264Container
public import MediaCore
import MediaIO
import Synchronization
import SystemIO

/// A transcode in chunks: the input split at clean sync samples (``MovieSplitter``), each chunk
/// transcoded on its own (``Transcoder``), the results joined (``MovieConcatenator``), as
/// encoding farms do. Frame count and presentation times are the one-piece transcode's; each
/// chunk starts with an IDR, so quality differs from the one-piece transcode by the extra
/// keyframes only. With a two-pass or average-bit-rate encode every chunk aims at the same
/// rate, spreading it evenly.
///
/// The chunks run on up to ``parallelism`` threads of this process, each with a single-thread
/// decoder, or in as many child processes (``Execution-swift.enum/processes(command:)``: a chunk
/// that crashes its process fails that chunk only); the same chunks can run anywhere else
/// (`scripts/ray/transcode.py` runs them as Ray tasks) and be joined with
/// ``MovieConcatenator``: the result is the same bytes.
public struct ChunkedTranscoder: Sendable {
    /// The transcode of each chunk (its decoder threading is set to one thread, its movie data
    /// carried over once, by the join).
    public var options: Transcoder.Options
    /// Chunks to cut: the input's presentation span divided by this gives the chunk duration.
    public var chunks: Int
    /// Chunks transcoded at once.
    public var parallelism: Int
    /// Where the chunks run.
    public var execution: Execution = .threads

    /// Where the chunks of a ``ChunkedTranscoder`` run.
    public enum Execution: Sendable {
        /// On threads of this process, each chunk through a ``Transcoder`` with ``ChunkedTranscoder/options``.
        case threads
        /// Each chunk in a child process: `command(input, output)` is the argument vector (the
        /// executable's path first) of a program that transcodes the chunk movie at `input` into
        /// the movie at `output` with the same settings, keeping its presentation times, and exits
        /// with 0 when it did (`h264kit transcode INPUT OUTPUT --decoder-threads 1 …`). What it
        /// prints on standard error becomes the chunk's warnings, except lines about `output` (its
        /// summary).
        case processes(command: @Sendable (_ input: String, _ output: String) -> [String])
    }

    /// Chunked transcodes of `chunks` chunks, `parallelism` at once (by default all).
    public init(options: Transcoder.Options, chunks: Int, parallelism: Int? = nil) {
        self.options = options
        self.chunks = chunks
        self.parallelism = parallelism ?? chunks
    }

    /// What a chunked transcode did.
    public struct Summary: Sendable {
        /// The split.
        public var segments: SegmentIndex
        /// Each chunk's transcode, in order.
        public var chunks: [Transcoder.Summary]
        /// The join.
        public var join: MovieConcatenator.Summary
    }

    /// Transcodes the input at `path` into the movie at `output`, keeping its pieces in
    /// `workDirectory` (which must exist; the caller removes it).
    public func run(path: String, into output: String, movieOptions: MovieWriter.Options = MovieWriter.Options(),
                    workDirectory: String) throws(SessionError) -> Summary {
        guard chunks >= 1 else { throw .invalidOption("\(chunks) chunks: at least 1") }
        let splitter = MovieSplitter(segmentDuration: try Self.chunkDuration(path: path, chunks: chunks, options: options.source),
                                     fileType: .mp4, namePrefix: "chunk-")
        let index = try splitter.split(path: path, into: workDirectory, sourceOptions: options.source)
        var perChunk = options
        perChunk.decoderThreading = .init(count: 1)
        perChunk.carriesOverMovieData = false
        let results = Mutex<[Int: Result<Transcoder.Summary, SessionError>]>([:])
        let inputs = index.segments.map { workDirectory + "/" + $0.file }
        let outputs = inputs.indices.map { workDirectory + "/encoded-" + index.segments[$0].file }
        let lanes = max(1, min(parallelism, inputs.count))
        let next = Atomic<Int>(0)
        let chunkOptions = perChunk
        let execution = execution
        DispatchQueue.concurrentPerform(iterations: lanes) { _ in
            while true {
                let chunk = next.add(1, ordering: .relaxed).oldValue
                guard chunk < inputs.count else { return }
                let result = Result { () throws(SessionError) in
                    switch execution {
                    case .threads:
                        try Transcoder(options: chunkOptions).run(path: inputs[chunk], into: .movie(path: outputs[chunk], options: MovieWriter.Options(keepsStartTime: true)))
                    case .processes(let command):
                        try Self.runProcess(command(inputs[chunk], outputs[chunk]), chunk: chunk, output: outputs[chunk])
                    }
                }
                results.withLock { $0[chunk] = result }
            }
        }
        var summaries: [Transcoder.Summary] = []
        for chunk in inputs.indices {
            switch results.withLock({ $0[chunk] }) {
            case .success(let summary): summaries.append(summary)
            case .failure(let error): throw error
            case nil: throw .invalidated
            }
        }
        var joinOptions = movieOptions
        joinOptions.keepsStartTime = true
        let movieData: MovieConcatenator.MovieDataSource = options.carriesOverMovieData && MovieReader.looksLikeMovie(path: path) ? .movie(path: path) : .none
        let join = try MovieConcatenator(options: joinOptions, movieData: movieData).concatenate(outputs, into: output)
        return Summary(segments: index, chunks: summaries, join: join)
    }

    /// Runs one chunk's child process and summarizes the movie it wrote (its decoder counts are
    /// the encoded frames; its diagnostics are the warnings).
    static func runProcess(_ arguments: [String], chunk: Int, output: String) throws(SessionError) -> Transcoder.Summary {
        let errorPath = output + ".stderr"
        defer { removeFile(errorPath) }
        let status: Int32
        do { status = try ChildProcess.run(arguments, standardError: errorPath) } catch {
            throw .chunkFailed(chunk: chunk, reason: "\(error)")
        }
        let diagnostics = String(decoding: (try? filePrefix(errorPath, count: 1 << 16)) ?? [], as: UTF8.self)
            .split(separator: "\n").map(String.init).filter { !$0.hasPrefix(output + ":") }
        guard status == 0 else {
            throw .chunkFailed(chunk: chunk, reason: "\(arguments.first ?? "") exited with \(status)" + (diagnostics.last.map { ": \($0)" } ?? ""))
        }
        do {
            let movie = try MovieReader(path: output)
            guard let track = movie.firstVideoTrackIndex else { throw SessionError.chunkFailed(chunk: chunk, reason: "\(output) has no video track") }
            let samples = try movie.sampleBuffers(track: track)
            var summary = Transcoder.Summary(decodedFrames: samples.count, concealedFrames: 0, droppedFrames: 0, encodedFrames: samples.count,
                                             bytes: 0, width: 0, height: 0, firstPresentationTime: nil, lastPresentationTime: nil, warnings: diagnostics)
            for sample in samples {
                summary.bytes += sample.data.count
                summary.width = sample.formatDescription.width
                summary.height = sample.formatDescription.height
                if summary.firstPresentationTime.map({ sample.presentationTime < $0 }) ?? true { summary.firstPresentationTime = sample.presentationTime }
                if summary.lastPresentationTime.map({ sample.presentationTime > $0 }) ?? true { summary.lastPresentationTime = sample.presentationTime }
            }
            return summary
        } catch let error as SessionError {
            throw error
        } catch {
            throw .chunkFailed(chunk: chunk, reason: "its output does not read: \(error)")
        }
    }

    /// The chunk duration that cuts the input at `path` into `chunks` chunks (fewer when sync
    /// samples are rare): its presentation span divided by `chunks`. The same chunking
    /// anywhere else (`h264kit split --chunks N`, the Ray driver) gives the same chunks.
    public static func chunkDuration(path: String, chunks: Int, options: MediaSource.Options = .decoding) throws(SessionError) -> MediaTime {
        guard chunks >= 1 else { throw .invalidOption("\(chunks) chunks: at least 1") }
        let span = try presentationSpan(path: path, options: options)
        return MediaTime(value: max(1, span.value / Int64(chunks)), timescale: span.timescale)
    }

    /// From the first shown frame to the end of the last, reading the samples (no decoding).
    static func presentationSpan(path: String, options: MediaSource.Options) throws(SessionError) -> MediaTime {
        let source = try MediaSource(path: path, options: options)
        var first: MediaTime?
        var end: MediaTime?
        while let sample = try source.next() {
            if first.map({ sample.presentationTime < $0 }) ?? true { first = sample.presentationTime }
            let sampleEnd = sample.presentationTime + sample.duration
            if end.map({ sampleEnd > $0 }) ?? true { end = sampleEnd }
        }
        guard let first, let end else { throw .mediaIO(MediaIOError(.invalidData, "\(source.name): no samples")) }
        return end - first
    }
}
