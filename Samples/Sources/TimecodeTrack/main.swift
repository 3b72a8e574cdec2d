// Technical Note TN2310, "Timecode tracks in QuickTime movies": a MOV whose video (29.97 fps)
// has a timecode track, drop-frame, starting just before a minute boundary so that the dropped
// frame numbers show (01:00:59;29 is followed by 01:01:00;02). The movie is written, read back,
// and each frame's timecode printed: first with a `tmcd` (32-bit frame number) sample, then
// the same with `tc64` (64-bit).
//
//     swift run TimecodeTrack [IN.264 at 29.97 fps] [START TIMECODE]
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let input = arguments.first ?? "Media/testsrc2-320x240-bframes.264"
let startText = arguments.count > 1 ? arguments[1] : "01:00:59;28"

do {
    let start = try Timecode(parsing: startText)   // ';' before the frames: drop-frame
    for sampleFormat in [TimecodeFormatDescription.SampleFormat.timeCode32, .timeCode64] {
        // 1. The timecode's format: 30000/1001 fps counted as 30 frames a second, two frame
        //    numbers dropped at each minute but every tenth (SMPTE 12M drop-frame).
        let format = try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: start.isDropFrame, sampleFormat: sampleFormat,
                                                   sourceReference: .init(name: "Reel 1"))
        // 2. The writer takes a timecode track with the video: one sample holding the frame
        //    number of the first shown frame, lasting as long as the video.
        let output = "TimecodeTrack-\(sampleFormat.fourCC).mov"
        let writer = try MovieWriter(path: output, options: .init(fileType: .mov, timecode: try .init(format: format, start: start)))
        let reader = try SampleBufferReader(path: input)
        while let sample = try reader.next() { try writer.append(sample) }
        let summary = try writer.finish()

        // 3. Read back: the timecode track the video refers to (`tref`/`tmcd`), its start, and
        //    each shown frame's timecode: the start's frame number plus the frames since.
        let movie = try MovieReader(path: output)
        guard let video = movie.firstVideoTrackIndex, let timecodeIndex = movie.timecodeTrackIndex(forVideoTrack: video) else {
            throw SampleError("\(output): no timecode track")
        }
        let track = try movie.timecodeTrack(timecodeIndex)
        print("\(output): \(summary.sampleCount) frames, \(track.format.sampleFormat.fourCC) track, start \(try track.startTimecode().map(\.description) ?? "none")")
        let frames = try movie.frameTimecodes(timecodeTrack: timecodeIndex, videoTrack: video)
        let shown = frames.prefix(8).map { "\(String(format: "%.3f", $0.time.seconds)) s \((try? track.format.timecode(forFrameNumber: $0.frameNumber))?.description ?? "?")" }
        for line in shown { print("  \(line)") }
        if let last = frames.last { print("  … \(frames.count) frames, the last at \(try track.format.timecode(forFrameNumber: last.frameNumber))") }
    }
} catch {
    print("TimecodeTrack: \(error)")
    exit(1)
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    /// printf-style formatting of one Double.
    init(format: String, _ value: Double) {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) }
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
