import Dispatch
import H264Codec
public import H264Container
public import MediaCore
import MediaIO
import Synchronization

/// A transcode in chunks: the input split at clean sync samples (``MovieSplitter``), each chunk
/// transcoded on its own (``Transcoder``), the results joined (``MovieConcatenator``), as
/// encoding farms do. Frame count and presentation times are the one-piece transcode's; each
/// chunk starts with an IDR, so quality differs from the one-piece transcode by the extra
/// keyframes only. With a two-pass or average-bit-rate encode every chunk aims at the same
/// rate, spreading it evenly.
///
/// The chunks run on up to ``parallelism`` threads of this process, each with a single-thread
/// decoder; the same chunks can run anywhere else (`scripts/ray/transcode.py` runs them as Ray
/// tasks) and be joined with ``MovieConcatenator``: the result is the same bytes.
public struct ChunkedTranscoder: Sendable {
    /// The transcode of each chunk (its decoder threading is set to one thread, its movie data
    /// carried over once, by the join).
    public var options: Transcoder.Options
    /// Chunks to cut: the input's presentation span divided by this gives the chunk duration.
    public var chunks: Int
    /// Chunks transcoded at once.
    public var parallelism: Int

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
        DispatchQueue.concurrentPerform(iterations: lanes) { _ in
            while true {
                let chunk = next.add(1, ordering: .relaxed).oldValue
                guard chunk < inputs.count else { return }
                let result = Result { () throws(SessionError) in
                    try Transcoder(options: chunkOptions).run(path: inputs[chunk], into: .movie(path: outputs[chunk], options: MovieWriter.Options(keepsStartTime: true)))
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
        var warnings: [String] = []
        if options.carriesOverMovieData, MovieReader.looksLikeMovie(path: path) {
            do {
                let movie = try MovieReader(path: path, limits: options.source.movieLimits)
                if let track = movie.firstVideoTrackIndex { warnings = joinOptions.carryOver(from: movie, videoTrack: track) }
            } catch {
                throw .container(error)
            }
        }
        var join = try MovieConcatenator(options: joinOptions, carriesOverMovieData: false).concatenate(outputs, into: output)
        join.warnings += warnings
        return Summary(segments: index, chunks: summaries, join: join)
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
