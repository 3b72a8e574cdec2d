public import SampleFlow
import Dispatch
import FoundationEssentials
import H264Codec
public import ISOBMFF
import MPEGTS
public import MediaCore
import MediaIO
import Synchronization
import SystemIO

/// A transcode in chunks: the input split at clean sync samples (`MovieSplitter`), each chunk
/// transcoded on its own (``Transcoder``), the results joined (`MovieConcatenator`), as
/// encoding farms do. Frame count and presentation times are the one-piece transcode's; each
/// chunk starts with an IDR, so quality differs from the one-piece transcode by the extra
/// keyframes only. With a two-pass or average-bit-rate encode every chunk aims at the same
/// rate, spreading it evenly.
///
/// The chunks run on up to ``parallelism`` threads of this process, each with a single-thread
/// decoder, or in as many child processes (``Execution-swift.enum/processes(command:)``: a chunk
/// that crashes its process fails that chunk only); the same chunks can run anywhere else
/// (`scripts/ray/transcode.py` runs them as Ray tasks) and be joined with
/// `MovieConcatenator`: the result is the same bytes.
///
/// The first chunk that fails stops the others (their transcodes are cancelled, their
/// processes terminated) and is the error. Cancelling the task that calls
/// ``run(path:into:movieOptions:workDirectory:progress:)`` stops it in whatever phase it is
/// (measuring, splitting, transcoding, joining: ``Progress/phase``) and throws
/// ``SessionError/cancelled``, never an error of the cut-short phase; the output is not
/// written and the chunk files it made in the work directory are removed.
public struct ChunkedTranscoder: Sendable {
    /// The transcode of each chunk (its decoder threading is set to one thread, its movie data
    /// carried over once, by the join).
    public var options: Transcoder.Options
    /// Chunks to cut: the input's presentation span divided by this gives the chunk duration.
    public var chunks: Int
    /// Cut every this long instead (at the first clean sync sample after each multiple of it);
    /// nil divides the input into ``chunks``.
    public var chunkDuration: MediaTime?
    /// Chunks transcoded at once.
    public var parallelism: Int
    /// Where the chunks run.
    public var execution: Execution = .threads

    /// Where the chunks of a ``ChunkedTranscoder`` run.
    public enum Execution: Sendable {
        /// On threads of this process, each chunk through a ``Transcoder`` with ``ChunkedTranscoder/options``.
        case threads
        /// Each chunk in a child process: `command(input, output, report)` is the argument
        /// vector (the executable's path first) of a program that transcodes the chunk movie at
        /// `input` into the movie at `output` with the same settings, keeping its presentation
        /// times, writes its ``Transcoder/Summary`` as JSON at `report`, and exits with 0 when it
        /// did (`h264kit transcode INPUT OUTPUT --report REPORT --decoder-threads 1 …`). Without a
        /// report the summary is read from the movie (its damage counts then zero). What it
        /// prints on standard error becomes the chunk's warnings, except lines about `output`
        /// (its summary). It is sent SIGTERM when the transcode stops early.
        case processes(command: @Sendable (_ input: String, _ output: String, _ report: String) -> [String])
    }

    /// How far a chunked transcode has come.
    public struct Progress: Sendable, Hashable {
        /// Chunks done.
        public var finishedChunks: Int
        /// Chunks in all (0 until the split is done).
        public var chunks: Int
        /// The phase the transcode is in.
        public var phase: Phase = .transcoding

        /// A chunked transcode's phases, in order.
        public enum Phase: Sendable, Hashable {
            /// Reading the input's samples to divide its span into chunks (with a chunk count).
            case measuring
            /// Cutting the input into chunk movies; `chunks` have been written so far.
            case splitting(chunks: Int)
            /// Transcoding the chunks.
            case transcoding
            /// Joining the transcoded chunks into the output.
            case joining
        }
    }

    /// Chunked transcodes of `chunks` chunks, `parallelism` at once (by default as many as the
    /// machine has cores, at most `chunks`).
    public init(options: Transcoder.Options, chunks: Int, parallelism: Int? = nil) {
        self.options = options
        self.chunks = chunks
        self.parallelism = parallelism ?? max(1, min(chunks, Self.cores))
    }

    /// Chunked transcodes of chunks of about `chunkDuration` each, `parallelism` at once (by
    /// default as many as the machine has cores).
    public init(options: Transcoder.Options, chunkDuration: MediaTime, parallelism: Int? = nil) {
        self.options = options
        chunks = 1
        self.chunkDuration = chunkDuration
        self.parallelism = parallelism ?? Self.cores
    }

    private static var cores: Int { onlineProcessorCount }

    /// What a chunked transcode did.
    public struct Summary: Sendable {
        /// The split.
        public var segments: SegmentIndex
        /// Each chunk's transcode, in order.
        public var chunks: [Transcoder.Summary]
        /// The join.
        public var join: MovieConcatenator.Summary

        /// The chunks' transcodes as one: the counts summed, the first and last times, every
        /// chunk's warnings and then the join's.
        public var total: Transcoder.Summary {
            var total = Transcoder.Summary(width: chunks.first?.width ?? 0, height: chunks.first?.height ?? 0,
                                           firstPresentationTime: chunks.first?.firstPresentationTime, lastPresentationTime: chunks.last?.lastPresentationTime,
                                           warnings: chunks.flatMap(\.warnings) + join.warnings)
            for chunk in chunks {
                total.decodedFrames += chunk.decodedFrames
                total.concealedFrames += chunk.concealedFrames
                total.droppedFrames += chunk.droppedFrames
                total.encodedFrames += chunk.encodedFrames
                total.bytes += chunk.bytes
            }
            return total
        }
    }

    /// Transcodes the input at `path` into the movie at `output`, keeping its pieces in
    /// `workDirectory` (which must exist; the caller removes it). `progress` is called on the
    /// calling thread as each phase starts, as the split writes each chunk and as chunks finish.
    /// A cancelled task throws ``SessionError/cancelled`` whatever the phase.
    public func run(path: String, into output: String, movieOptions: MovieWriter.Options = MovieWriter.Options(),
                    workDirectory: String, progress: (Progress) -> Void = { _ in }) throws(SessionError) -> Summary {
        guard chunks >= 1 else { throw .invalidOption("\(chunks) chunks: at least 1") }
        guard parallelism >= 1 else { throw .invalidOption("parallelism \(parallelism): at least 1") }
        if let chunkDuration, !(chunkDuration.isNumeric && chunkDuration > .zero) {
            throw .invalidOption("the chunk duration \(chunkDuration) is not a positive time")
        }
        // A phase cut short by the cancellation fails in its own terms (a split that read no
        // sample, a join that lost its inputs): the caller asked to stop, and that is the answer.
        var chunkFiles: [String] = []
        do throws(SessionError) {
            return try run(path: path, into: output, movieOptions: movieOptions, workDirectory: workDirectory, chunkFiles: &chunkFiles, progress: progress)
        } catch {
            if Task.isCancelled {
                for file in chunkFiles { removeFile(file) }
                throw .cancelled
            }
            throw error
        }
    }

    private func run(path: String, into output: String, movieOptions: MovieWriter.Options, workDirectory: String, chunkFiles: inout [String],
                     progress: (Progress) -> Void) throws(SessionError) -> Summary {
        func checkCancellation() throws(SessionError) { if Task.isCancelled { throw .cancelled } }
        try checkCancellation()
        let duration: MediaTime
        if let chunkDuration {
            duration = chunkDuration
        } else {
            progress(Progress(finishedChunks: 0, chunks: 0, phase: .measuring))
            duration = try Self.chunkDuration(path: path, chunks: chunks, options: options.source)
        }
        try checkCancellation()
        progress(Progress(finishedChunks: 0, chunks: 0, phase: .splitting(chunks: 0)))
        var splitter = MovieSplitter(segmentDuration: duration, fileType: .mp4, namePrefix: "chunk-")
        splitter.keepsSegmentsWhenCancelled = false
        let index = try flowing { () throws(SampleFlowError) in
            try splitter.split(path: path, into: workDirectory, sourceOptions: options.source) { segment in
                progress(Progress(finishedChunks: 0, chunks: 0, phase: .splitting(chunks: segment + 1)))
            }
        }
        let inputs = index.segments.map { workDirectory + "/" + $0.file }
        let outputs = inputs.indices.map { workDirectory + "/encoded-" + index.segments[$0].file }
        chunkFiles = inputs + outputs
        try checkCancellation()
        progress(Progress(finishedChunks: 0, chunks: inputs.count, phase: .transcoding))
        var perChunk = options
        perChunk.decoderThreading = .init(count: 1)
        perChunk.carriesOverMovieData = false
        let results = Self.transcode(inputs: inputs, outputs: outputs, options: perChunk, execution: execution,
                                     lanes: max(1, min(parallelism, inputs.count)), progress: progress)
        var summaries: [Transcoder.Summary] = []
        var failure: SessionError?
        for chunk in inputs.indices {
            switch results[chunk] {
            case .success(let summary): summaries.append(summary)
            // The first real failure, not the cancellations it caused.
            case .failure(let error):
                if failure == nil { failure = error } else if case .cancelled? = failure { failure = error }
            case nil: if failure == nil { failure = .cancelled }
            }
        }
        try checkCancellation()
        if let failure { throw failure }
        progress(Progress(finishedChunks: inputs.count, chunks: inputs.count, phase: .joining))
        var joinOptions = movieOptions
        joinOptions.keepsStartTime = true
        let movieData: MovieConcatenator.MovieDataSource = options.carriesOverMovieData && MovieReader.looksLikeMovie(path: path) ? .movie(path: path) : .none
        let join = try flowing { () throws(SampleFlowError) in try MovieConcatenator(options: joinOptions, movieData: movieData).concatenate(outputs, into: output) }
        return Summary(segments: index, chunks: summaries, join: join)
    }

    /// Transcodes each input into its output on `lanes` threads; the calling thread watches for
    /// cancellation and reports progress. A failure stops the lanes. Returns each chunk's result
    /// (nil for a chunk never started).
    private static func transcode(inputs: [String], outputs: [String], options: Transcoder.Options, execution: Execution, lanes: Int,
                                  progress: (Progress) -> Void) -> [Result<Transcoder.Summary, SessionError>?] {
        let state = Lanes(chunks: inputs.count)
        let group = DispatchGroup()
        for _ in 0..<lanes {
            DispatchQueue.global().async(group: group) {
                while !state.isStopping {
                    let chunk = state.next.add(1, ordering: .relaxed).oldValue
                    guard chunk < inputs.count else { return }
                    let result = Result { () throws(SessionError) in
                        switch execution {
                        case .threads:
                            try Transcoder(options: options).run(path: inputs[chunk], into: .movie(path: outputs[chunk], options: MovieWriter.Options(keepsStartTime: true)),
                                                                 progress: { _ in }, stopping: { state.isStopping })
                        case .processes(let command):
                            try runProcess(command(inputs[chunk], outputs[chunk], outputs[chunk] + ".json"), chunk: chunk, output: outputs[chunk],
                                           stopping: { state.isStopping })
                        }
                    }
                    state.finish(chunk, result)
                }
            }
        }
        var reported = 0
        // Every chunk's end is reported, one call each, even when several ended between looks.
        func report() {
            let done = state.finished.load(ordering: .relaxed)
            while reported < done {
                reported += 1
                progress(Progress(finishedChunks: reported, chunks: inputs.count))
            }
        }
        while group.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            if Task.isCancelled { state.stop.store(true, ordering: .relaxed) }
            report()
        }
        report()
        return state.results.withLock { $0 }
    }

    /// What the lanes of a chunked transcode share.
    private final class Lanes: Sendable {
        let results: Locked<[Result<Transcoder.Summary, SessionError>?]>
        /// The next chunk to take.
        let next = Atomic<Int>(0)
        /// Chunks done, well or not.
        let finished = Atomic<Int>(0)
        /// Set by a failure or a cancellation: no chunk is started, running ones are stopped.
        let stop = Atomic<Bool>(false)

        init(chunks: Int) { results = Locked(Array(repeating: nil, count: chunks)) }

        var isStopping: Bool { stop.load(ordering: .relaxed) }

        func finish(_ chunk: Int, _ result: Result<Transcoder.Summary, SessionError>) {
            if case .failure = result { stop.store(true, ordering: .relaxed) }
            results.withLock { $0[chunk] = result }
            finished.add(1, ordering: .relaxed)
        }
    }

    /// Runs one chunk's child process and summarizes what it did: the report it wrote, or the
    /// movie it wrote (then with no damage counts); its diagnostics are the warnings.
    static func runProcess(_ arguments: [String], chunk: Int, output: String, stopping: @escaping () -> Bool) throws(SessionError) -> Transcoder.Summary {
        let errorPath = output + ".stderr"
        let reportPath = output + ".json"
        defer {
            removeFile(errorPath)
            removeFile(reportPath)
        }
        let status: Int32
        do { status = try ChildProcess.run(arguments, standardError: errorPath, stopping: stopping) } catch {
            throw .chunkError(chunk: chunk, underlying: error)
        }
        if stopping() { throw .cancelled }
        let diagnostics = String(decoding: (try? filePrefix(errorPath, count: 1 << 16)) ?? [], as: UTF8.self)
            .split(separator: "\n").map(String.init).filter { !$0.hasPrefix(output + ":") }
        guard status == 0 else {
            throw .chunkFailed(chunk: chunk, reason: "\(arguments.first ?? "") exited with \(status)" + (diagnostics.last.map { ": \($0)" } ?? ""))
        }
        if let bytes = try? filePrefix(reportPath, count: 1 << 20), !bytes.isEmpty {
            do {
                var summary = try JSONDecoder().decode(Transcoder.Summary.self, from: Data(bytes))
                summary.warnings = diagnostics
                return summary
            } catch {
                throw .chunkError(chunk: chunk, underlying: error)  // (a DecodingError naming the field of the report)
            }
        }
        do {
            let movie = try MovieReader(path: output)
            guard let track = movie.firstVideoTrackIndex else { throw SessionError.chunkFailed(chunk: chunk, reason: "\(output) has no video track") }
            let samples = try movie.sampleBuffers(track: track)
            var summary = Transcoder.Summary(decodedFrames: samples.count, concealedFrames: 0, droppedFrames: 0, encodedFrames: samples.count,
                                             bytes: 0, width: 0, height: 0, firstPresentationTime: nil, lastPresentationTime: nil, warnings: diagnostics)
            for sample in samples {
                summary.bytes += sample.data.count
                summary.width = sample.videoFormatDescription?.width ?? summary.width
                summary.height = sample.videoFormatDescription?.height ?? summary.height
                if summary.firstPresentationTime.map({ sample.presentationTime < $0 }) ?? true { summary.firstPresentationTime = sample.presentationTime }
                if summary.lastPresentationTime.map({ sample.presentationTime > $0 }) ?? true { summary.lastPresentationTime = sample.presentationTime }
            }
            return summary
        } catch let error as SessionError {
            throw error
        } catch {
            throw .chunkError(chunk: chunk, underlying: error)  // (a ContainerError naming the movie and box)
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
        let source = try flowing { () throws(SampleFlowError) in try MediaSource(path: path, options: options) }
        var first: MediaTime?
        var end: MediaTime?
        while let sample = try flowing({ () throws(SampleFlowError) in try source.next() }) {
            if Task.isCancelled { throw .cancelled }
            if first.map({ sample.presentationTime < $0 }) ?? true { first = sample.presentationTime }
            let sampleEnd = sample.presentationTime + sample.duration
            if end.map({ sampleEnd > $0 }) ?? true { end = sampleEnd }
        }
        guard let first, let end else { throw .source(.noSamples(input: source.name, reason: "no samples")) }
        return end - first
    }
}
