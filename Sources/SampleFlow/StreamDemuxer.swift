public import ISOBMFF
import MPEGTS
import MediaCore

/// Extracts a movie's H.264 track, or a transport stream's H.264 stream, as an Annex-B
/// elementary stream, or an AAC track as an ADTS stream: `h264kit demux` as one call.
///
/// Length prefixes become start codes, and the sample description's SPS and PPS go before
/// every IDR picture that lacks them (what FFmpeg's `h264_mp4toannexb` does), so the stream
/// plays from any IDR picture. AAC frames each get a 7-byte ADTS header, as FFmpeg's ADTS
/// muxer writes them; every frame is written, an encoder's priming too (an ADTS stream has no
/// edit list to trim it). The output is written under a temporary name and renamed when
/// complete: a failure leaves nothing. Memory is a megabyte of output at a time.
public struct StreamDemuxer: Sendable {
    /// Which elementary stream to write.
    public enum Stream: Sendable, Hashable {
        /// The H.264 track, as an Annex-B stream.
        case video
        /// An AAC track, as an ADTS stream.
        case audio

        /// The stream an output's name asks for: `.aac` and `.adts` are audio, anything else
        /// video.
        public init(path: String) {
            let lowered = path.lowercased()
            self = lowered.hasSuffix(".aac") || lowered.hasSuffix(".adts") ? .audio : .video
        }
    }

    /// What a demux did.
    public struct Summary: Sendable {
        /// Samples written.
        public var samples: Int
        /// Bytes written.
        public var bytes: Int
        /// The movie reader's warnings.
        public var warnings: [String]
        /// What the movie holds that an elementary stream cannot carry (its timecode track,
        /// its metadata), a line each with how to carry it to a new movie.
        public var notCarried: [String]
        /// Whether the demux stopped early because its task was cancelled: the stream written
        /// holds the samples read until then.
        public var interrupted = false
    }

    /// How the movie is read (its track and limits). The edit list is never applied: every
    /// sample is written, whatever ``MediaSource/Options/editList`` says.
    public var options: MediaSource.Options
    /// Which stream to write: nil, the one the output's name asks for (``Stream/init(path:)``).
    public var stream: Stream?

    /// A demuxer of the track `options` choose (``MediaSource/Options/trackID``; by default the
    /// first H.264 video track, or for audio the first AAC track).
    public init(options: MediaSource.Options = .init(editList: .shift), stream: Stream? = nil) {
        self.options = options
        self.stream = stream
    }

    /// Writes the H.264 track of the movie (or the H.264 stream of the transport stream) at
    /// `path` to `output` ("-": standard output), or its AAC track for ``Stream/audio``. Every
    /// sample is written, those before its first sync sample too, as `ffmpeg -c copy` does.
    /// Cancelling the calling task stops it early with the samples read until then written (or,
    /// before the first, nothing).
    public func run(path: String, to output: String) throws(SampleFlowError) -> Summary {
        var options = options
        options.editList = .shift
        options.annexB.startsAtSyncSample = false
        let stream = stream ?? Stream(path: output)
        if stream == .audio {
            options.tracks = options.trackID.map { .ids([TrackID(rawValue: $0)]) } ?? .allExcept([.video])
            options.trackID = nil
        }
        let source = try MediaSource(path: path, options: options)
        var notCarried: [String] = []
        if let reader = source.movie {
            if let index = reader.timecodeTrackIndex(), let start = try? reader.timecodeTrack(index).startTimecode() {
                notCarried.append("the timecode track (start \(start); mux --timecode \"\(start)\" restores it)")
            }
            if !reader.metadata.isEmpty { notCarried.append("\(reader.metadata.count) metadata item(s) (inspect lists them; mux --meta writes them)") }
        } else if case .annexB = source.kind {
            throw .container(ContainerError(.invalidInput, "not an MP4/MOV file or a transport stream (demux reads a movie's track or a transport stream's video; an Annex-B stream is one already)", path: path))
        } else if case .adts = source.kind {
            throw .container(ContainerError(.invalidInput, "an ADTS stream (demux reads a movie's track or a transport stream's; an ADTS stream is one already)", path: path))
        }
        var summary = Summary(samples: 0, bytes: 0, warnings: [], notCarried: notCarried)
        let sink: any SampleSink = stream == .audio ? try ADTSSink(path: output) : try AnnexBSink(path: output)
        do throws(SampleFlowError) {
            var chosen: TrackID?
            var appended = 0
            while let sample = try source.next() {
                if Task.isCancelled {
                    summary.interrupted = true
                    break
                }
                if stream == .audio {
                    // The first AAC track (or the one asked for); the others' samples pass by.
                    if chosen == nil {
                        chosen = self.options.trackID != nil ? sample.trackID
                            : source.tracks.first { $0.format.audio?.isAAC == true }?.id ?? (sample.audioFormatDescription?.isAAC == true ? sample.trackID : nil)
                    }
                    guard sample.trackID == chosen else { continue }
                }
                try sink.append(sample)
                appended += 1
            }
            if stream == .audio && chosen == nil && !summary.interrupted {
                let listing = source.tracks.map { "\($0.id) \($0.mediaType) \($0.format.codecName)" }.joined(separator: ", ")
                throw .noSamples(input: source.name, reason: "no AAC track (tracks: \(listing.isEmpty ? "none read" : listing)); nothing written")
            }
            if summary.interrupted && appended == 0 { throw .cancelled }  // nothing to finish, nothing is left
            let written = try sink.finish()
            summary.warnings = source.warnings
            summary.samples = written.samples
            summary.bytes = written.bytes
            return summary
        } catch {
            sink.cancel()
            throw error
        }
    }
}
