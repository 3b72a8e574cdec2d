public import H264Bitstream
public import ISOBMFF
public import MPEGTS
public import MediaCore
import MPEG4Audio

/// Puts streams into an MP4 or MOV file or an MPEG-2 transport stream without decoding them:
/// `h264kit mux` as one call.
///
/// The input is anything ``MediaSource`` reads, told apart by content: an Annex-B stream (each
/// access unit one sample, timed from the stream's VUI timing or the rate the reader options
/// give), an ADTS stream, a transport stream (timed by its PES timestamps), or a movie; or
/// several of them at once (``run(paths:to:progress:onDiagnostic:)``: an H.264 stream and an
/// ADTS stream, say), their tracks one after another. Every track is carried by default
/// (``Options/tracks``): H.264 and AAC into either container, and a track of another codec
/// where the pair of containers allows it as it was (a movie's into a movie with its sample
/// entry, a transport stream's into a transport stream with its PMT entry); a track that cannot
/// go is left out and said (``Summary/tracksLeftOut``), never dropped in silence. The output is
/// a movie written by a `MovieWriter` in the layout its options give, or a transport stream
/// (``Options/output``). Damaged NAL units are copied as they are and counted in the
/// summary (as `ffmpeg -c copy` does: a decoder conceals them); anything that stops the mux
/// (slices before their parameter sets, an unwritable output) is an error and leaves nothing
/// at the output. Memory is the writer's index: samples are read and written one at a time.
public struct StreamMuxer: Sendable {
    /// A timecode track to add, starting at a timecode: its rate is the stream's, known once
    /// the first sample is read.
    public struct TimecodeStart: Sendable, Hashable {
        /// The first frame's timecode (drop-frame when written with `;`).
        public var start: Timecode
        /// `tmcd` (32-bit) or `tc64`.
        public var sampleFormat: TimecodeFormatDescription.SampleFormat
        /// The source reel's name.
        public var reel: String?

        /// A timecode track starting at `start`.
        public init(start: Timecode, sampleFormat: TimecodeFormatDescription.SampleFormat = .timeCode32, reel: String? = nil) {
            self.start = start
            self.sampleFormat = sampleFormat
            self.reel = reel
        }
    }

    /// What the mux writes.
    public enum Output: Sendable, Hashable {
        /// A movie, as ``Options/movie`` says.
        case movie
        /// A transport stream.
        case transportStream(TransportStreamWriter.Options)
    }

    /// How to read and write.
    public struct Options: Sendable {
        /// How an Annex-B stream becomes samples (NAL length size, parameter sets in band, the
        /// rate); the framing applies to every input.
        public var reader: SampleBufferReader.Options
        /// How a transport stream input is read (the program, the damage policy).
        public var transportStream: TransportStreamReader.Options
        /// What is written: a movie or a transport stream.
        public var output: Output
        /// How the movie is written (file type, layout, metadata).
        public var movie: MovieWriter.Options
        /// A timecode track to add (replacing any `MovieWriter.Options.timecode`).
        public var timecode: TimecodeStart?
        /// Which tracks of the input to carry: all of them by default.
        public var tracks: MediaSource.TrackSelection = .all

        /// Options: the reader's and writer's defaults, a movie, no timecode.
        public init(reader: SampleBufferReader.Options = .init(), movie: MovieWriter.Options = .init(), timecode: TimecodeStart? = nil,
                    transportStream: TransportStreamReader.Options = .init(), output: Output = .movie) {
            self.reader = reader
            self.movie = movie
            self.timecode = timecode
            self.transportStream = transportStream
            self.output = output
        }
    }

    /// How far a mux has come.
    public struct Progress: Sendable, Hashable {
        /// Bytes of the stream read.
        public var bytesRead: Int
        /// The stream's size, when known (not for standard input).
        public var totalBytes: Int?
        /// Samples written.
        public var samples: Int
    }

    /// What a mux did.
    public struct Summary: Sendable {
        /// What the sink wrote: samples and bytes, with the writer's own account.
        public var output: SampleSinkSummary
        /// What the movie writer wrote, for a movie.
        public var movie: MovieWriter.Summary? { output.movie }
        /// What the transport stream writer wrote, for a transport stream.
        public var transportStream: TransportStreamWriter.Summary? { output.transportStream }
        /// The rate the samples were timed at.
        public var frameRate: FrameRate
        /// What the Annex-B reader warned of (an assumed or overridden rate).
        public var warnings: [SampleBufferReader.Warning]
        /// What the reader of a transport stream or movie found wrong (damage, lost sync,
        /// corrected times), as sentences.
        public var inputWarnings: [String] = []
        /// What the stream parser found wrong (the first of them), where (each also told to
        /// `onDiagnostic` as it was found).
        public var diagnostics: [StreamDiagnostic]
        /// Problems found in all (errors and warnings), of which ``diagnostics`` lists the first.
        public var problemCount: Int
        /// NAL units that could not be parsed, copied as they were.
        public var damagedNALUnits: Int
        /// Whether the mux stopped early because its task was cancelled (SIGINT in the tool):
        /// the movie holds the samples read until then, finished as a whole file.
        public var interrupted = false
        /// The tracks written, as the input described them.
        public var tracks: [TrackDescription] = []
        /// The input's tracks that were not written, each with why.
        public var tracksLeftOut: [LeftOutTrack] = []
    }

    /// A track of the input a mux did not write, and why.
    public struct LeftOutTrack: Sendable, Hashable, CustomStringConvertible {
        /// The track.
        public var track: TrackDescription
        /// Why it was left out.
        public var reason: String

        /// The reason of a track the options did not choose (`--track`, `--no-audio`).
        public static let notChosen = "not chosen"

        /// `track`, left out for `reason`.
        public init(track: TrackDescription, reason: String) {
            self.track = track
            self.reason = reason
        }

        /// "track 3 (audio, AC-3): left out: ...".
        public var description: String {
            "track \(track.id) (\(track.mediaType), \(track.format.codecName)\(track.language.map { ", \($0)" } ?? "")): left out: \(reason)"
        }
    }

    /// How to read and write.
    public var options: Options

    /// A muxer with `options`.
    public init(options: Options = Options()) { self.options = options }

    /// Muxes the stream at `path` ("-": standard input) into the movie at `output` ("-":
    /// standard output, fragmented layouts only), calling `progress` after each sample and
    /// once more when the whole stream is read, and `onDiagnostic` with each problem the stream
    /// parser finds (damaged NAL units, units cut off), as it finds it, a failure's too.
    /// A failure leaves nothing at `output`; its error carries where it stopped (the stream's
    /// byte and NAL unit, the sample, the movie's box). Cancelling the calling task stops the
    /// reading within 16 samples and finishes the movie with what was read
    /// (``Summary/interrupted``), as ffmpeg does at `q`; a task cancelled before the first
    /// sample writes nothing and ends in ``SampleFlowError/cancelled``.
    public func run(path: String, to output: String, progress: (Progress) -> Void = { _ in },
                    onDiagnostic: (StreamDiagnostic) -> Void = { _ in }) throws(SampleFlowError) -> Summary {
        try run(paths: [path], to: output, progress: progress, onDiagnostic: onDiagnostic)
    }

    /// Muxes the inputs at `paths` (at most one of them standard input) into one output, their
    /// tracks in the order of the inputs, their samples in the order of their decoding times;
    /// see ``run(path:to:progress:onDiagnostic:)``. ``Options/tracks`` applies to each input (a
    /// track ID names the track of the merged inputs' numbering only for one input).
    public func run(paths: [String], to output: String, progress: (Progress) -> Void = { _ in },
                    onDiagnostic: (StreamDiagnostic) -> Void = { _ in }) throws(SampleFlowError) -> Summary {
        guard !paths.isEmpty else { throw .invalidOption("no input to mux") }
        guard paths.filter({ $0 == "-" }).count <= 1 else { throw .invalidOption("standard input (-) given twice") }
        var sourceOptions = MediaSource.Options(annexB: options.reader, editList: .shift, transportStream: options.transportStream)
        sourceOptions.tracks = options.tracks
        let inputs = try paths.map { (path) throws(SampleFlowError) in try MediaSource(path: path, options: sourceOptions) }
        let source: any SampleSource = inputs.count == 1 ? inputs[0] : MergedSource(inputs)
        // One input is read without the protocol's witness (which copies every sample once more).
        let single = inputs.count == 1 ? inputs[0] : nil
        var leftOut: [LeftOutTrack] = []
        for input in inputs {
            for track in input.unselectedTracks where options.tracks != .firstVideo {
                leftOut.append(LeftOutTrack(track: track, reason: LeftOutTrack.notChosen))
            }
        }
        var decided: [TrackID: Bool] = [:]
        var lastDecision: (track: TrackID, carried: Bool)?
        var sink: (any SampleSink)?
        var told = 0
        var written = 0
        func tell() {
            // The count first: the parser is copied only when it has something new to say.
            // (One input, asked directly: a key path through a lazy map costs more than the
            // rest of a small sample's loop.)
            let count = single.map { $0.diagnosticCount } ?? inputs.lazy.compactMap(\.diagnosticCount).first
            guard let count, count != told,
                  let parser = inputs.lazy.compactMap(\.parser).first else { return }
            let diagnostics = parser.diagnostics
            for diagnostic in diagnostics.dropFirst(told) { onDiagnostic(diagnostic) }
            told = diagnostics.count
        }
        func state() -> Progress {
            let read = single?.progress ?? source.progress
            return Progress(bytesRead: read.read, totalBytes: read.total, samples: written)
        }
        defer { tell() }
        do throws(SampleFlowError) {
            var interrupted = false
            var read = 0
            func nextSample() throws(SampleFlowError) -> SampleBuffer? {
                if let single { return try single.next() }
                return try source.next()
            }
            while let sample = try nextSample() {
                read &+= 1
                // (At the first sample and every 16th after: asking the task costs as much as the rest of a
                // small sample's loop.)
                if read & 15 == 1, Task.isCancelled {
                    interrupted = true
                    break
                }
                tell()
                if sink == nil {
                    sink = try makeSink(output, frameRate: source.frameRate, inputSize: source.progress.total)
                    try sink!.prepare(source.tracks.filter { carries($0.format) == nil })
                }
                let carried: Bool
                if let last = lastDecision, last.track == sample.trackID {
                    carried = last.carried  // (no hashing for a run of one track's samples)
                } else if let known = decided[sample.trackID] {
                    carried = known
                } else {
                    let track = source.tracks.first { $0.id == sample.trackID } ?? TrackDescription(id: sample.trackID, format: sample.formatDescription)
                    let refusal = carries(sample.formatDescription)
                    if let refusal { leftOut.append(LeftOutTrack(track: track, reason: refusal)) }
                    carried = refusal == nil
                    decided[sample.trackID] = carried
                }
                lastDecision = (sample.trackID, carried)
                if carried {
                    try sink?.append(sample)
                    written += 1
                }
                progress(state())
            }
            guard let sink else {
                throw interrupted ? .cancelled : .noSamples(input: source.name, reason: "no samples; nothing written")
            }
            guard written > 0 || interrupted else {
                throw .noSamples(input: source.name, reason: "no track this output can carry (\(leftOut.map(\.description).joined(separator: "; "))); nothing written")
            }
            progress(state())  // the whole read
            let finished = try sink.finish()
            var summary = Summary(output: finished, frameRate: source.frameRate ?? .assumedWithoutTiming, warnings: [], diagnostics: [], problemCount: 0,
                                  damagedNALUnits: 0, interrupted: interrupted)
            for input in inputs {
                if case .annexB(let reader) = input.kind { summary.warnings += reader.warnings } else {
                    summary.inputWarnings += inputs.count == 1 ? input.warnings : input.warnings.map { "\(input.name): \($0)" }
                }
            }
            summary.tracks = source.tracks.filter { decided[$0.id] == true }
            summary.tracksLeftOut = leftOut
            if let parser = inputs.lazy.compactMap(\.parser).first {
                summary.diagnostics = parser.diagnostics
                summary.problemCount = parser.errorCount + parser.warningCount
                summary.damagedNALUnits = parser.errorCount
            }
            return summary
        } catch {
            sink?.cancel()
            throw error
        }
    }

    /// Why the output cannot carry samples of `format`, nil when it can: H.264 and AAC go
    /// anywhere; a carried codec only into the container it came from (a movie's sample entry
    /// into a movie, a transport stream's PMT entry into a transport stream).
    func carries(_ format: FormatDescription) -> String? {
        switch (format, options.output) {
        case (.video, _): return nil
        case (.audio(let audio), .movie): return audio.isAAC || audio.isG711 || !audio.magicCookie.isEmpty ? nil : "\(audio.codec) has no sample entry to write"
        case (.audio(let audio), .transportStream):
            guard let config = audio.audioSpecificConfig, (1...4).contains(config.audioObjectType.rawValue), config.channelConfiguration < 8 else {
                return "\(audio.codecString) cannot be written as ADTS, AAC's form in a transport stream"
            }
            return nil
        case (.opaque(let opaque), .movie):
            return opaque.sampleEntry == nil ? "a movie carries \(opaque.name) only as it came from a movie (this came from a transport stream, with no sample entry)" : nil
        case (.opaque(let opaque), .transportStream):
            return opaque.transportStream == nil ? "a transport stream carries \(opaque.name) only as it came from one (this came from a movie)" : nil
        case (.timecode, _): return "a timecode track is written from --timecode, not copied"
        }
    }

    /// The sink for `output`, made at the first sample (when a timecode track's rate is known).
    /// The output's disk is reserved from the inputs' size (when known and the caller did not
    /// say): a remux's output is about its input's size, a transport stream's a tenth more.
    private func makeSink(_ output: String, frameRate: FrameRate?, inputSize: Int?) throws(SampleFlowError) -> any SampleSink {
        let size = inputSize.map { UInt64(max(0, $0)) }
        switch options.output {
        case .movie:
            var movieOptions = try movieOptions(frameRate: frameRate)
            if movieOptions.expectedSize == nil { movieOptions.expectedSize = size }
            return try MovieSink(path: output, options: movieOptions)
        case .transportStream(var writerOptions):
            if options.timecode != nil { throw .invalidOption("a timecode track cannot be written in a transport stream") }
            if writerOptions.expectedSize == nil { writerOptions.expectedSize = size.map { $0 + $0 / 10 } }
            return try TransportStreamSink(path: output, options: writerOptions)
        }
    }

    /// The movie's options, known at the first sample (when a timecode track's rate is known).
    private func movieOptions(frameRate: FrameRate?) throws(SampleFlowError) -> MovieWriter.Options {
        var movieOptions = options.movie
        if let timecode = options.timecode, let rate = frameRate {
            guard rate.numerator <= UInt64(Int32.max), rate.denominator <= UInt64(Int32.max) else {
                throw .invalidOption("the timecode \(timecode.start) at \(rate) fps: the rate is too precise for a timecode track")
            }
            do {
                let format = try TimecodeFormatDescription(frameRate: (Int32(rate.numerator), Int32(rate.denominator)), dropFrame: timecode.start.isDropFrame,
                                                           sampleFormat: timecode.sampleFormat, sourceReference: timecode.reel.map { .init(name: $0) })
                movieOptions.timecode = try MovieWriter.TimecodeTrack(format: format, start: timecode.start)
            } catch {
                throw .container(ContainerError(.invalidInput, "the timecode \(timecode.start) at \(rate) fps", cause: error))
            }
        }
        return movieOptions
    }
}
