public import SampleFlow
import SystemIO
import H264Bitstream
public import H264Codec
import ISOBMFF
import MPEGTS
public import MediaCore
import MediaIO
import Synchronization

/// Decodes an input and encodes it again: a ``FrameReader`` (reader, decompression session,
/// scaling) into a ``CompressionSession`` into a `MovieWriter` or an Annex-B file, as
/// `ffmpeg -i IN -c:v libx264 OUT` does, in one call.
///
/// What carries over: every shown frame's presentation time, exactly (variable frame rates
/// kept; the output starts where the input starts, with an empty edit when that is after 0),
/// the colour description and sample aspect ratio of the stream (the ratio adjusted when the
/// size changes, as FFmpeg's scaler does), and from a movie its timecode track, metadata and
/// display transform. Damaged frames are what ``FrameReader`` makes of them: concealed frames
/// are encoded, frames that gave no picture are skipped; both are counted in the summary.
///
/// Sound is copied (``Options/audio``), as `ffmpeg -c:a copy` does: every audio track the
/// output can carry (AAC into any output; another codec into a movie when it came from one),
/// frame for frame with its times, the frames shown from the start to the end asked for;
/// a track that cannot go is left out and said in the warnings. An Annex-B output holds
/// the video alone.
///
/// Decoding and encoding overlap: the compression session is asynchronous, at most
/// ``Options/framesInFlight`` pictures ahead of x264, so memory is bounded by that many
/// pictures plus the decoder's own reorder and threading depth. The call checks
/// `Task.isCancelled` between frames and throws ``SessionError/cancelled``; nothing is left at
/// the output when it fails.
public struct Transcoder: Sendable {
    /// How to transcode.
    public struct Options: Sendable {
        /// x264's settings. The picture size, pixel format, frame rate, colour description and
        /// sample aspect ratio are taken from the input (the size from ``size`` when given, the
        /// pixel format from ``pixelFormat``); the rest is used as given.
        public var encoder: EncoderSettings
        /// 1, or 2 (at an average bit rate: the input is decoded twice).
        public var passes: Int
        /// Scale every picture to this size; nil keeps the first picture's size.
        public var size: (width: Int, height: Int)?
        /// Convert pictures to this pixel format; nil keeps the decoded format.
        public var pixelFormat: PixelFormat?
        /// Keep at most one picture per this much presentation time (`--fps`: frames are
        /// dropped to the rate, never repeated); nil keeps every picture.
        public var interval: MediaTime?
        /// Only frames shown at or after this time (the input's presentation time).
        public var start: MediaTime?
        /// Only frames shown before `start` (or the first frame) plus this long.
        public var duration: MediaTime?
        /// The decoder's threading.
        public var decoderThreading: H264Decoder.Threading
        /// How the input is read.
        public var source: MediaSource.Options
        /// The largest picture decoded.
        public var limits: PictureLimits
        /// Pictures queued for the encoder at most (x264 keeps its own lookahead besides; two
        /// keep decoding and encoding in step without holding more 1080p pictures than ffmpeg).
        public var framesInFlight: Int
        /// Take over a movie input's timecode track, metadata and display transform.
        public var carriesOverMovieData: Bool
        /// What becomes of the input's sound.
        public var audio: AudioHandling = .copy

        /// What a transcode does with the input's audio tracks.
        public enum AudioHandling: Sendable, Hashable {
            /// Copies every audio track the output can carry, frame for frame.
            case copy
            /// Leaves the sound out.
            case none
        }

        /// Options encoding with `encoder` (its size and rate are replaced by the input's).
        public init(encoder: EncoderSettings, passes: Int = 1, size: (width: Int, height: Int)? = nil, pixelFormat: PixelFormat? = nil,
                    interval: MediaTime? = nil, start: MediaTime? = nil, duration: MediaTime? = nil,
                    decoderThreading: H264Decoder.Threading = .init(), source: MediaSource.Options = .decoding,
                    limits: PictureLimits = PictureLimits(), framesInFlight: Int = 2, carriesOverMovieData: Bool = true) {
            self.encoder = encoder
            self.passes = passes
            self.size = size
            self.pixelFormat = pixelFormat
            self.interval = interval
            self.start = start
            self.duration = duration
            self.decoderThreading = decoderThreading
            self.source = source
            self.limits = limits
            self.framesInFlight = framesInFlight
            self.carriesOverMovieData = carriesOverMovieData
        }

        /// Options for x264's `preset` and rate control, the rest at x264's defaults.
        public init(preset: String = "medium", rateControl: EncoderSettings.RateControl = .constantQuality(23)) {
            self.init(encoder: EncoderSettings(width: 16, height: 16, frameRate: FrameRate(25, 1), preset: preset, rateControl: rateControl))
        }
    }

    /// How far a transcode has come.
    public struct Progress: Sendable, Hashable {
        /// The pass (1, or 1 and 2).
        public var pass: Int
        /// Pictures given to the encoder in this pass.
        public var frames: Int
        /// Bytes of encoded frames written.
        public var bytes: Int
        /// The part of the input read, 0...1, when the input's size is known.
        public var fraction: Double?
    }

    /// What a transcode did (`h264kit transcode --report` writes it as JSON).
    public struct Summary: Sendable, Hashable, Codable {
        /// Frames decoded with a picture (in the last pass).
        public var decodedFrames: Int
        /// Of those, frames concealed by the decoder (damaged, encoded anyway).
        public var concealedFrames: Int
        /// Samples that gave no picture (skipped).
        public var droppedFrames: Int
        /// Encoded frames written.
        public var encodedFrames: Int
        /// Bytes of encoded frame data written.
        public var bytes: Int
        /// The output picture size.
        public var width: Int
        /// The output picture height.
        public var height: Int
        /// The first and last presentation times encoded.
        public var firstPresentationTime: MediaTime?
        /// The last presentation time encoded.
        public var lastPresentationTime: MediaTime?
        /// What did not stop the transcode: the reader's and decoder's warnings (the first 100),
        /// and what could not be carried over.
        public var warnings: [String]
        /// Samples of audio tracks copied.
        public var audioSamples = 0

        /// A summary of these counts (the sum of a chunked transcode's, say).
        public init(decodedFrames: Int = 0, concealedFrames: Int = 0, droppedFrames: Int = 0, encodedFrames: Int = 0, bytes: Int = 0,
                    width: Int = 0, height: Int = 0, firstPresentationTime: MediaTime? = nil, lastPresentationTime: MediaTime? = nil,
                    warnings: [String] = []) {
            self.decodedFrames = decodedFrames
            self.concealedFrames = concealedFrames
            self.droppedFrames = droppedFrames
            self.encodedFrames = encodedFrames
            self.bytes = bytes
            self.width = width
            self.height = height
            self.firstPresentationTime = firstPresentationTime
            self.lastPresentationTime = lastPresentationTime
            self.warnings = warnings
        }
    }

    /// How to transcode.
    public var options: Options

    /// A transcoder with `options`.
    public init(options: Options) {
        self.options = options
    }

    /// Transcodes the input at `path` into `output`. `progress` is called after each picture.
    public func run(path: String, into output: SampleOutput, progress: (Progress) -> Void = { _ in }) throws(SessionError) -> Summary {
        try run(path: path, into: output, progress: progress, stopping: { false })
    }

    /// The transcode, stopped with ``SessionError/cancelled`` when the task is cancelled or
    /// `stopping` says so (a ``ChunkedTranscoder`` lane, which runs outside any task).
    func run(path: String, into output: SampleOutput, progress: (Progress) -> Void, stopping: () -> Bool) throws(SessionError) -> Summary {
        // Whatever failed after the stop was asked for failed because of it.
        do { return try transcode(path: path, into: output, progress: progress, stopping: stopping) } catch {
            if Task.isCancelled || stopping() { throw .cancelled }
            throw error
        }
    }

    private func transcode(path: String, into output: SampleOutput, progress: (Progress) -> Void, stopping: () -> Bool) throws(SessionError) -> Summary {
        if Task.isCancelled || stopping() { throw .cancelled }
        guard (1...2).contains(options.passes) else { throw .invalidOption("\(options.passes) passes: 1 or 2") }
        if let start = options.start, !start.isNumeric { throw .invalidOption("the start time \(start) is not a time") }
        if let duration = options.duration, !(duration.isNumeric && duration > .zero) {
            throw .invalidOption("the duration \(duration) is not a positive time")
        }
        var warnings: [String] = []
        var sink: CompressedFrameSink?
        var session: CompressionSession?
        var summary = Summary(decodedFrames: 0, concealedFrames: 0, droppedFrames: 0, encodedFrames: 0, bytes: 0, width: 0, height: 0, warnings: [])
        defer {
            session?.invalidate()
            sink?.cancel()
        }
        var sourceOptions = options.source
        let copiesAudio = options.audio == .copy && !Self.isAnnexB(output)
        if copiesAudio, sourceOptions.tracks == .firstVideo, sourceOptions.trackID == nil { sourceOptions.tracks = .allExcept([.timecode]) }
        for pass in 1...options.passes {
            let source = try flowing { () throws(SampleFlowError) in try MediaSource(path: path, options: sourceOptions) }
            // A movie starts decoding at the sync sample before the start, not at its beginning.
            if let start = options.start { source.seek(toPresentationTime: start) }
            // The sound, in the last pass: held here until the output is open, then by the sink
            // until the encoder's frames reach it.
            let sound = Locked<[SampleBuffer]>([])
            var readerOptions = FrameReader.Options(threading: options.decoderThreading, pixelFormat: options.pixelFormat,
                                                    size: options.size.map { .fixed(width: $0.width, height: $0.height) } ?? .first,
                                                    interval: options.interval, limits: options.limits)
            if copiesAudio && pass == options.passes { readerOptions.otherSamples = { sample in sound.withLock { $0.append(sample) } } }
            let reader = try FrameReader(source: source, options: readerOptions)
            summary = Summary(decodedFrames: 0, concealedFrames: 0, droppedFrames: 0, encodedFrames: 0, bytes: 0, width: summary.width, height: summary.height,
                              warnings: [])
            var end: MediaTime?
            var copier = AudioCopier(output: output, start: options.start)
            /// The sound read so far to the sink, once it is open (frames outside the range left out).
            func passSound() {
                guard let sink else { return }
                for sample in sound.withLock({ (queue) -> [SampleBuffer] in defer { queue.removeAll() }; return queue }) {
                    if let held = copier.place(sample, end: end, tracks: source.tracks) { sink.hold(held) }
                }
            }
            while let frame = try reader.next() {
                if Task.isCancelled || stopping() { throw .cancelled }
                passSound()
                guard let picture = frame.pixelBuffer else {
                    if !frame.flags.contains(.notDisplayed) { summary.droppedFrames += 1 }
                    continue
                }
                if frame.flags.contains(.notDisplayed) { continue }
                let time = frame.presentationTime
                if let start = options.start, time < start { continue }
                if end == nil, let duration = options.duration { end = (options.start ?? time) + duration }
                if let end, time >= end { break }  // frames come in presentation order: the rest is later still
                if session == nil {
                    let settings = try encoderSettings(for: picture, reader: reader)
                    let others = copiesAudio ? copier.tracks(of: source.tracks) : []
                    (session, sink) = try open(settings, output: output, reader: reader, firstTime: time, others: others, warnings: &warnings)
                    passSound()
                    summary.width = settings.width
                    summary.height = settings.height
                }
                if pass == 1, options.passes == 2, summary.decodedFrames == 0 { try session!.beginPass() }
                if pass == 2, summary.decodedFrames == 0 { try session!.beginPass() }
                summary.decodedFrames += 1
                if frame.flags.contains(.concealed) { summary.concealedFrames += 1 }
                summary.firstPresentationTime = summary.firstPresentationTime ?? time
                summary.lastPresentationTime = time
                try session!.encode(picture, presentationTime: time, duration: frame.duration.isNumeric && frame.duration > .zero ? frame.duration : nil)
                if let error = sink!.error { throw error }
                let read = reader.source.progress
                progress(Progress(pass: pass, frames: summary.decodedFrames, bytes: sink!.bytes,
                                  fraction: read.total.map { $0 > 0 ? min(1, Double(read.read) / Double($0)) : 1 }))
            }
            if pass == options.passes {
                // The sound to the video's end (a stream read to its end gives the rest now).
                passSound()
                warnings.append(contentsOf: reader.source.warnings.prefix(100))
                warnings += copier.leftOut.map { "not copied: \($0)" }
            }
            guard let session else {
                throw .mediaIO(MediaIOError(.invalidData, "\(reader.source.name): no picture to encode (\(summary.droppedFrames) samples gave none); nothing written"))
            }
            if options.passes == 2 { _ = try session.endPass() }
        }
        if options.passes == 1 { session!.finish() }  // a two-pass session's last endPass delivered everything
        if let error = sink!.error { throw error }
        summary.encodedFrames = sink!.frames
        summary.bytes = sink!.bytes
        try sink!.finish()
        summary.audioSamples = sink!.copiedSamples
        sink = nil
        summary.warnings = warnings
        return summary
    }

    /// x264's settings for pictures like `picture`: the options' settings with the input's
    /// size, format, rate, colour and aspect ratio.
    private func encoderSettings(for picture: PixelBuffer, reader: FrameReader) throws(SessionError) -> EncoderSettings {
        var settings = options.encoder
        settings.width = picture.width
        settings.height = picture.height
        settings.pixelFormat = picture.format
        // A movie's average rate (its first sample may last a tick, or two frames), as FFmpeg
        // gives the encoder; a stream's VUI timing.
        settings.frameRate = Self.fitting(reader.source.track?.nominalFrameRate ?? reader.source.frameRate ?? settings.frameRate)
        guard let description = reader.source.formatDescription else { return settings }
        if let colour = description.colour {
            settings.colour = ColourDescription(primaries: colour.primaries, transfer: colour.transfer, matrix: colour.matrix, fullRange: colour.fullRange)
        }
        if let sar = description.sampleAspectRatio, sar.width > 0, sar.height > 0 {
            // The display aspect ratio stays: a size change changes the sample aspect ratio.
            var width = sar.width * description.width * picture.height
            var height = sar.height * description.height * picture.width
            let divisor = Self.greatestCommonDivisor(width, height)
            width /= divisor
            height /= divisor
            while width > 65535 || height > 65535 { width /= 2; height /= 2 }
            if !(width == 1 && height == 1), width > 0, height > 0 { settings.sampleAspectRatio = (width, height) }
        }
        return settings
    }

    /// The rate, or the nearest thousandth of a frame a second when its terms do not fit
    /// x264's 32 bits (a long variable-rate movie's average).
    private static func fitting(_ rate: FrameRate) -> FrameRate {
        guard rate.numerator > UInt64(UInt32.max) || rate.denominator > UInt64(UInt32.max) else { return rate }
        let perSecond = Double(rate.numerator) / Double(rate.denominator)
        return FrameRate(UInt64(max(1, min(Double(UInt32.max), (perSecond * 1000).rounded()))), 1000)
    }

    private static func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (abs(a), abs(b))
        while b != 0 { (a, b) = (b, a % b) }
        return max(a, 1)
    }

    /// The session and the output, once the first picture says what to encode.
    private func open(_ settings: EncoderSettings, output: SampleOutput, reader: FrameReader, firstTime: MediaTime, others: [TrackDescription],
                      warnings: inout [String]) throws(SessionError) -> (CompressionSession, CompressedFrameSink) {
        var settings = settings
        var destination = output
        switch output {
        case .annexB:
            settings.annexB = true
            settings.repeatParameterSets = true
        case .movie(let path, var movieOptions):
            movieOptions.keepsStartTime = true
            if options.carriesOverMovieData, let movie = reader.source.movie, let track = reader.source.track,
               let index = movie.tracks.firstIndex(where: { $0.id == track.id }) {
                let ownTimecode = movieOptions.timecode != nil
                warnings += movieOptions.carryOver(from: movie, videoTrack: index).map { "not carried over: \($0)" }
                // The timecode runs count from the input's first shown frame; the output's first
                // frame is later with a start time.
                if !ownTimecode, case .movie(_, _, let samples) = reader.source.kind,
                   let origin = samples.lazy.filter({ !$0.attachments.doNotDisplay }).map(\.presentationTime).min(by: <), firstTime > origin {
                    movieOptions.timecode = movieOptions.timecode?.starting(at: firstTime - origin)
                }
            }
            destination = .movie(path: path, options: movieOptions)
        case .transportStream:
            // Length-prefixed samples: the muxer puts start codes, delimiters and the parameter
            // sets before every IDR picture.
            settings.annexB = false
        }
        let sink = try CompressedFrameSink(destination, annexB: settings.annexB, others: others)
        let session = try CompressionSession(configuration: .init(settings: settings, isAsynchronous: true, maximumFramesInFlight: max(1, options.framesInFlight),
                                                                  passes: options.passes),
                                             outputHandler: { sink.take($0) })
        return (session, sink)
    }

    private static func isAnnexB(_ output: SampleOutput) -> Bool {
        if case .annexB = output { true } else { false }
    }
}

/// Which of a transcode's audio samples are copied, under which track IDs: every audio track
/// the output can carry, renumbered from 2 (the encoded video is track 1), the frames shown
/// from the start on (the end is the video's).
struct AudioCopier {
    let output: SampleOutput
    let start: MediaTime?
    /// Source track ID to output track ID; nil for a track left out.
    private var numbering: [TrackID: TrackID?] = [:]
    private var next: UInt32 = 2
    /// The tracks left out, each with why.
    private(set) var leftOut: [String] = []

    init(output: SampleOutput, start: MediaTime?) {
        self.output = output
        self.start = start
    }

    /// The output's other tracks for the source's `tracks` known now, numbered as their samples will be.
    mutating func tracks(of tracks: [TrackDescription]) -> [TrackDescription] {
        tracks.compactMap { track in
            guard track.mediaType == .audio, let id = number(track.id, format: track.format, name: track.description) else { return nil }
            var renumbered = track
            renumbered.id = id
            return renumbered
        }
    }

    /// The sample renumbered, or nil when it is not copied (another kind, a track left out,
    /// outside the range).
    mutating func place(_ sample: SampleBuffer, end: MediaTime?, tracks: [TrackDescription]) -> SampleBuffer? {
        guard sample.mediaType == .audio else { return nil }
        let name = tracks.first { $0.id == sample.trackID }?.description ?? "track \(sample.trackID): \(sample.formatDescription.codecName)"
        guard let id = number(sample.trackID, format: sample.formatDescription, name: name) else { return nil }
        if let start, sample.presentationTime < start { return nil }
        if let end, sample.presentationTime >= end { return nil }
        var copied = sample
        copied.trackID = id
        return copied
    }

    private mutating func number(_ source: TrackID, format: FormatDescription, name: String) -> TrackID? {
        if let known = numbering[source] { return known }
        var reason: String?
        switch (format, output) {
        case (.audio(let audio), .movie): if !audio.isAAC && !audio.isG711 && audio.magicCookie.isEmpty { reason = "\(audio.codec) has no sample entry to write" }
        case (.audio(let audio), .transportStream): if !audio.isAAC { reason = "a transport stream carries AAC" }
        default: reason = "not audio"
        }
        if let reason {
            numbering[source] = .some(nil)
            if format.mediaType == .audio { leftOut.append("\(name): \(reason)") }
            return nil
        }
        let id = TrackID(rawValue: next)
        next += 1
        numbering[source] = id
        return id
    }
}
