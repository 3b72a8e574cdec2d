// Case study 4 of the seeds: "Compressing a sequence of images into an H.264 stream for the
// network". Pictures come in (a moving test pattern, or the pictures of a .y4m file), a
// compression session turns them into H.264 sample buffers, and an RTP sender puts those on
// the network as RFC 6184 packets, paced in real time, with RTCP and a closing BYE. The session
// description a receiver needs is printed first.
//
//     swift run StreamToNetwork [rtp://HOST:PORT] [PICTURES.y4m] > stream.sdp
//     ffplay -protocol_whitelist file,udp,rtp stream.sdp      # or: h264kit receive stream.sdp out.mp4
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments.dropFirst()
let destinationText = arguments.first { $0.hasPrefix("rtp://") } ?? "rtp://127.0.0.1:5004"
let picturesPath = arguments.first { $0.hasSuffix(".y4m") }

do {
    // 1. Where the packets go: RTP to PORT, RTCP to PORT + 1.
    let destination = try RTPDestination(parsing: destinationText)

    // 2. The pictures: a .y4m file read picture by picture, or 100 frames of a test pattern
    //    (4 seconds at 25 fps). Each picture is a PixelBuffer with its planes and strides.
    let y4m = try picturesPath.map { path throws(MediaIOError) in try Y4MReader(path: path) }
    let width = y4m?.width ?? 640, height = y4m?.height ?? 360
    let rate = y4m?.frameRate ?? FrameRate(25, 1)
    let pattern = TestPattern(width: width, height: height)

    // 3. The compression session (VTCompressionSession): x264 with settings for live video,
    //    a keyframe every second so that a receiver can join, asynchronous with its output as
    //    an async sequence of frames in decoding order.
    var settings = EncoderSettings(width: width, height: height, frameRate: rate, preset: "veryfast", tune: "zerolatency")
    settings.maximumKeyframeInterval = Int(rate.numerator / max(1, rate.denominator))
    let session = try CompressionSession(configuration: .init(settings: settings, isAsynchronous: true))
    let frames = try session.frames

    // 4. The session description: its sprop-parameter-sets come from the session's format
    //    description (SPS and PPS), known as soon as the session exists.
    guard let format = session.formatDescription else { fatalError("the session has no format description") }
    print(destination.sessionDescription(for: H264PayloadFormat(formatDescription: format)).text, terminator: "")

    // 5. Feed the pictures from a task of their own: the session holds a few in flight and
    //    makes the producer wait when the network side falls behind.
    let producer = Task {
        var index: Int64 = 0
        while true {
            let picture: PixelBuffer
            if let y4m {
                guard let next = try y4m.next() else { break }
                picture = next
            } else {
                guard index < 100 else { break }
                picture = pattern.picture(Int(index))
            }
            try await session.encode(picture, presentationTime: MediaTime(value: index * rate.frameDuration.value, timescale: rate.frameDuration.timescale))
            index += 1
        }
        await session.finish()
        return index
    }

    // 6. Send every encoded frame as it comes out, paced at its decode time; the sender ends
    //    with an RTCP BYE, which tells receivers the stream is over.
    let sender = try RTPSender(destination: destination)
    let summary = try await sender.send(frames.map(\.sampleBuffer))
    let pictures = try await producer.value
    printToStandardError("\(pictures) pictures encoded, \(summary.samples) frames in \(summary.packets) RTP packets (\(summary.octets) bytes) to \(destination)")
} catch {
    printToStandardError("StreamToNetwork: \(error)")
    exit(1)
}

/// Writes a line to standard error (standard output carries the SDP).
func printToStandardError(_ line: String) {
    var standardError = StandardError()
    print(line, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var text = string
        text.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
    }
}
