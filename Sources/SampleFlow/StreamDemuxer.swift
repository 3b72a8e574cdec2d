public import ISOBMFF
public import MPEGTS
import MediaCore

/// Extracts a movie's H.264 track, or a transport stream's H.264 stream, as an Annex-B
/// elementary stream: `h264kit demux` as one call.
///
/// Length prefixes become start codes, and the sample description's SPS and PPS go before
/// every IDR picture that lacks them (what FFmpeg's `h264_mp4toannexb` does), so the stream
/// plays from any IDR picture. The output is written under a temporary name and renamed when
/// complete: a failure leaves nothing. Memory is a megabyte of output at a time.
public struct StreamDemuxer: Sendable {
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

    /// A demuxer of the track `options` choose (the first H.264 video track by default).
    public init(options: MediaSource.Options = .init(editList: .shift)) { self.options = options }

    /// Writes the H.264 track of the movie (or the H.264 stream of the transport stream) at
    /// `path` to `output` ("-": standard output). Every picture of a transport stream is
    /// written, those before its first sync sample too, as `ffmpeg -c copy` does. Cancelling
    /// the calling task stops it early with the samples read until then written (or, before
    /// the first, nothing).
    public func run(path: String, to output: String) throws(SampleFlowError) -> Summary {
        var options = options
        options.editList = .shift
        options.annexB.startsAtSyncSample = false
        let source = try MediaSource(path: path, options: options)
        var notCarried: [String] = []
        if let reader = source.movie {
            if let index = reader.timecodeTrackIndex(), let start = try? reader.timecodeTrack(index).startTimecode() {
                notCarried.append("the timecode track (start \(start); mux --timecode \"\(start)\" restores it)")
            }
            if !reader.metadata.isEmpty { notCarried.append("\(reader.metadata.count) metadata item(s) (inspect lists them; mux --meta writes them)") }
        } else if case .annexB = source.kind {
            throw .container(ContainerError(.invalidInput, "not an MP4/MOV file or a transport stream (demux reads a movie's track or a transport stream's video; an Annex-B stream is one already)", path: path))
        }
        var summary = Summary(samples: 0, bytes: 0, warnings: [], notCarried: notCarried)
        let sink = try AnnexBSink(path: output)
        do throws(SampleFlowError) {
            while let sample = try source.next() {
                if Task.isCancelled {
                    summary.interrupted = true
                    break
                }
                try sink.append(sample)
            }
            if summary.interrupted && sink.sampleCount == 0 { throw .cancelled }  // nothing to finish, nothing is left
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
