// Case study 3 of seed 003: "Compressing a sequence of images into a movie file". Pictures (a
// moving test pattern, or the pictures of a .y4m file) go through a compression session —
// x264 with B-frames, so frames come out in decoding order, not the order they went in — and
// a movie writer stores them with their exact presentation times. Read back, the movie shows
// every picture at the time it was given.
//
//     swift run CompressToMovie [PICTURES.y4m] [OUT.mp4|OUT.mov]
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let picturesPath = arguments.first { $0.hasSuffix(".y4m") }
let output = arguments.first { $0.hasSuffix(".mp4") || $0.hasSuffix(".mov") } ?? "CompressToMovie.mp4"

do {
    // 1. The pictures: PixelBuffers, from a .y4m file or drawn (100 frames, 4 s at 25 fps).
    let y4m = try picturesPath.map { path throws(MediaIOError) in try Y4MReader(path: path) }
    let width = y4m?.width ?? 320, height = y4m?.height ?? 240
    let rate = y4m?.frameRate ?? FrameRate(25, 1)
    let pattern = TestPattern(width: width, height: height)

    // 2. The session (VTCompressionSession): constant quality 23, up to 3 B-frames, a keyframe
    //    at least every 2 seconds. Asynchronous: frames come out on `frames`.
    var settings = EncoderSettings(width: width, height: height, frameRate: rate, preset: "medium", rateControl: .constantQuality(23))
    settings.bFrames = 3
    settings.maximumKeyframeInterval = 2 * Int(rate.numerator / max(1, rate.denominator))
    let session = try CompressionSession(configuration: .init(settings: settings, isAsynchronous: true))
    let frames = try session.frames

    // 3. Pictures in, in presentation order, each with its time; `finish()` flushes the frames
    //    x264 holds back for reordering.
    let producer = Task {
        var times: [MediaTime] = []
        while true {
            let picture: PixelBuffer
            if let y4m {
                guard let next = try y4m.next() else { break }
                picture = next
            } else {
                guard times.count < 100 else { break }
                picture = pattern.picture(times.count)
            }
            let time = rate.frameDuration * Int64(times.count)
            try await session.encode(picture, presentationTime: time)
            times.append(time)
        }
        await session.finish()
        return times
    }

    // 4. Frames out, in decoding order, into the movie. A B-frame is shown before the P-frame
    //    decoded ahead of it: its presentation time is earlier than the previous frame's.
    let writer = try MovieWriter(path: output, options: .init(fileType: MovieFileType(path: output)))
    var types = ""
    for try await frame in frames {
        try writer.append(frame.sampleBuffer)
        let letter = switch frame.pictureType { case .idr: "I"; case .i: "i"; case .p: "P"; case .b: "b"; case .referenceB: "B" }
        types += letter
    }
    let given = try await producer.value
    let summary = try writer.finish()
    print("\(given.count) pictures -> \(summary.sampleCount) frames, \(summary.fileSize) bytes in \(output)")
    print("picture types in decoding order: \(types.prefix(40))\(types.count > 40 ? "…" : "")")

    // 5. Read back: every picture at the time it was given, exactly.
    let movie = try MovieReader(path: output)
    guard let track = movie.firstVideoTrackIndex else { throw SampleError("no video track in \(output)") }
    let shown = try movie.sampleBuffers(track: track).map(\.presentationTime).sorted { $0 < $1 }
    print("presentation times read back: \(shown == given ? "identical to those given" : "DIFFERENT")")
    if shown != given { throw SampleError("the times changed") }
} catch {
    print("CompressToMovie: \(error)")
    exit(1)
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
