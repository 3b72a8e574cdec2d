// The first job users named: an Annex-B H.264 stream (what an encoder or a camera writes, start
// codes between NAL units) into an MP4 file, with exact timestamps, in a handful of lines.
//
//     swift run AnnexBToMP4 [IN.264] [OUT.mp4]
//
// The reader parses the stream as it goes: it groups NAL units into access units (one picture
// each), computes each picture's presentation time from its picture order count and the
// stream's VUI timing (25 fps when the stream gives none, as ffmpeg assumes), and hands out
// sample buffers in decode order, each with AVCC bytes, timing and sync flags, and the format
// description (the SPS and PPS) it needs. The writer puts them in an MP4; `.faststart` puts the
// index first, for playing while downloading.
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let input = arguments.first ?? "Media/testsrc2-320x240-bframes.264"
let output = arguments.count > 1 ? arguments[1] : "AnnexBToMP4.mp4"

do {
    // 1. Annex-B in, sample buffers out.
    let reader = try SampleBufferReader(path: input)
    // 2. The MP4 writer owns its file: it writes to a temporary name and renames it into
    //    place at `finish()`; if anything fails, nothing is left behind.
    let writer = try MovieWriter(path: output, options: .init(fileType: .mp4, layout: .faststart))
    var written: [MediaTime] = []
    while let sample = try reader.next() {
        try writer.append(sample)
        written.append(sample.presentationTime)
    }
    let summary = try writer.finish()
    print("\(input): \(summary.sampleCount) frames, \(summary.duration.seconds) s, \(summary.fileSize) bytes -> \(output)")

    // 3. Read it back: the movie's presentation times are the stream's, exactly (the edit list
    //    makes the first shown frame start at zero, as the stream's did).
    let movie = try MovieReader(path: output)
    guard let track = movie.firstVideoTrackIndex else { throw SampleError("\(output) has no video track") }
    let readBack = try movie.sampleBuffers(track: track).map(\.presentationTime)
    let exact = readBack.sorted { $0 < $1 } == written.sorted { $0 < $1 }
    print("presentation times read back: \(exact ? "identical" : "DIFFERENT") (\(readBack.count) frames, first \(readBack.sorted { $0 < $1 }.prefix(3).map(\.description)))")
    if !exact { throw SampleError("the times changed") }
} catch {
    print("AnnexBToMP4: \(error)")
    exit(1)
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
