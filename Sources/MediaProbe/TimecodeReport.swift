public import ISOBMFF
import MPEGTS
public import MediaCore
import H264Bitstream

/// A movie's timecode: the track's format, its start, its runs and, if asked, every video
/// frame's timecode (TN2310's model). `h264kit timecode FILE` prints it (as JSON with `--json`).
public struct TimecodeReport: Codable, Hashable, Sendable {
    /// One timecode sample: a run of frames counting on from its frame number.
    public struct Run: Codable, Hashable, Sendable {
        /// The frame number the sample stores (its first frame's label).
        public var frameNumber: Int64
        /// That frame number as a timecode (or a counter value).
        public var timecode: String
        /// Where the run starts in the movie, seconds.
        public var start: Double
        /// How long it lasts, seconds.
        public var duration: Double
    }

    /// One video frame's timecode.
    public struct Frame: Codable, Hashable, Sendable {
        /// The frame's place in presentation order, from 0.
        public var index: Int
        /// Its presentation time, seconds.
        public var time: Double
        /// Its timecode (or counter value).
        public var timecode: String
    }

    /// The movie's path.
    public var file: String
    /// The timecode track's ID.
    public var track: UInt32
    /// "tmcd" (32-bit) or "tc64".
    public var sampleFormat: String
    /// The first run's timecode.
    public var start: String?
    /// The rate ("30000/1001").
    public var frameRate: String
    /// Frames counted a second (30 for 29.97).
    public var frameQuanta: Int
    /// Drop-frame counting.
    public var dropFrame: Bool
    /// Timecodes wrap at 24 hours.
    public var twentyFourHourMax: Bool
    /// Negative times are allowed.
    public var negativeTimesOK: Bool
    /// The track counts frames rather than timecodes.
    public var counter: Bool
    /// The source reel's name.
    public var reel: String?
    /// The track's runs (its samples, JSON key `samples`).
    public var runs: [Run]
    /// Every video frame's timecode, in presentation order, when asked.
    public var frames: [Frame]?

    enum CodingKeys: String, CodingKey {
        case file, track, sampleFormat, start, frameRate, frameQuanta, dropFrame, twentyFourHourMax, negativeTimesOK, counter, reel, frames
        case runs = "samples"
    }

    /// The timecode of the movie `reader` has opened: the timecode track its first video track
    /// refers to (`tref`), else its first timecode track; with `includesFrames`, every frame of
    /// that video track. A movie without a timecode track, or a timecode its format cannot
    /// label, is an error.
    public init(_ reader: MovieReader, includesFrames: Bool = false) throws(ContainerError) {
        let video = reader.firstVideoTrackIndex
        guard let index = reader.timecodeTrackIndex(forVideoTrack: video) else {
            throw ContainerError(.invalidInput, "no timecode track (tmcd or tc64)", path: reader.path)
        }
        let info = try reader.timecodeTrack(index)
        let format = info.format
        func label(_ number: Int64) throws(ContainerError) -> String {
            if format.flags.contains(.counter) { return String(format.counterValue(forFrameNumber: number)) }
            do { return try format.timecode(forFrameNumber: number).description } catch {
                throw ContainerError(.invalidInput, "track \(info.trackID)", path: reader.path, cause: error)
            }
        }
        file = reader.path
        track = info.trackID
        sampleFormat = format.sampleFormat.fourCC.description
        start = try info.samples.first.map { (first) throws(ContainerError) in try label(first.frameNumber) }
        frameRate = "\(format.frameDuration.timescale)/\(format.frameDuration.value)"
        frameQuanta = format.frameQuanta
        dropFrame = format.isDropFrame
        twentyFourHourMax = format.flags.contains(.twentyFourHourMax)
        negativeTimesOK = format.flags.contains(.negativeTimesOK)
        counter = format.flags.contains(.counter)
        reel = format.sourceReference?.name
        runs = []
        for sample in info.samples {
            runs.append(Run(frameNumber: sample.frameNumber, timecode: try label(sample.frameNumber), start: sample.start.seconds, duration: sample.duration.seconds))
        }
        if includesFrames {
            var frames: [Frame] = []
            for (number, frame) in try reader.frameTimecodes(timecodeTrack: index, videoTrack: video).enumerated() {
                frames.append(Frame(index: number, time: frame.time.seconds, timecode: try label(frame.frameNumber)))
            }
            self.frames = frames
        }
    }

    /// The report as text: a line for the track, a line a run when there are several, and a
    /// tab-separated line a frame.
    public var text: String {
        var flags = [dropFrame ? "drop-frame" : "non-drop"]
        if twentyFourHourMax { flags.append("24-hour") }
        if negativeTimesOK { flags.append("negative times") }
        if counter { flags.append("counter") }
        var lines = ["\(file): track \(track) \(sampleFormat), start \(start ?? "none"), \(frameRate) fps, \(frameQuanta) frames/s, \(flags.joined(separator: ", "))"
            + (reel.map { ", reel \"\($0)\"" } ?? "")]
        if runs.count > 1 {
            for run in runs { lines.append("  run at \(run.start) s for \(run.duration) s: \(run.timecode) (frame \(run.frameNumber))") }
        }
        for frame in frames ?? [] { lines.append("\(frame.index)\t\(frame.time)\t\(frame.timecode)") }
        return lines.joined(separator: "\n")
    }
}
