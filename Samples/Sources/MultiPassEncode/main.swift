// The multi-pass flow of seed 003 (VTMultiPassStorage and VTFrameSilo: a first pass analyses,
// a second encodes with what the first stored). The same pictures are encoded at the same
// average bit rate twice: in one pass, and in two. Each result is decoded again and compared
// with the pictures (PSNR, as ffmpeg's psnr filter averages it): the second pass spends the
// bits where the first found they matter.
//
//     swift run MultiPassEncode [PICTURES.y4m] [KBIT/S]
import H264Kit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let picturesPath = arguments.first { $0.hasSuffix(".y4m") }
let bitRate = arguments.compactMap { Int($0) }.first ?? 150

/// The pictures, from the .y4m or drawn: 150 frames of the moving test pattern (6 s at 25 fps).
func pictures() throws -> (pictures: [PixelBuffer], rate: FrameRate) {
    if let picturesPath {
        let y4m = try Y4MReader(path: picturesPath)
        var all: [PixelBuffer] = []
        while let picture = try y4m.next(), all.count < 300 { all.append(picture) }
        return (all, y4m.frameRate)
    }
    let pattern = TestPattern(width: 320, height: 240)
    return ((0..<150).map { pattern.picture($0) }, FrameRate(25, 1))
}

/// Encodes `pictures` in `passes` passes at `bitRate` kbit/s into `output`; returns its size.
func encode(_ pictures: [PixelBuffer], rate: FrameRate, passes: Int, into output: String) throws -> UInt64 {
    let settings = EncoderSettings(width: pictures[0].width, height: pictures[0].height, frameRate: rate, preset: "medium",
                                   rateControl: .averageBitRate(bitRate))
    // A synchronous session: the handler runs before `encode` returns. The writer is Sendable;
    // an error in the handler is kept and thrown after.
    let writer = try MovieWriter(path: output)
    let failure = Mutex<(any Error)?>(nil)
    let session = try CompressionSession(configuration: .init(settings: settings, passes: passes)) { frame in
        do { try writer.append(frame.sampleBuffer) } catch { failure.withLock { $0 = $0 ?? error } }
    }
    if passes == 1 {
        for (index, picture) in pictures.enumerated() { try session.encode(picture, presentationTime: rate.frameDuration * Int64(index)) }
        session.finish()
    } else {
        // Every pass sees every picture; the first one's frames are not delivered, only its
        // statistics are kept (x264's stats file: the VTMultiPassStorage of this session).
        repeat {
            try session.beginPass()
            for (index, picture) in pictures.enumerated() { try session.encode(picture, presentationTime: rate.frameDuration * Int64(index)) }
        } while try session.endPass()
    }
    if let error = failure.withLock({ $0 }) { throw error }
    let summary = try writer.finish()
    return summary.fileSize
}

/// The PSNR of the decoded movie against the pictures it was made from.
func psnr(of path: String, against pictures: [PixelBuffer]) async throws -> Double {
    var meter = PSNRMeter()
    var index = 0
    for try await frame in try FrameReader(path: path) {
        guard let decoded = frame.pixelBuffer, index < pictures.count else { continue }
        try meter.add(pictures[index], decoded)
        index += 1
    }
    return meter.average
}

do {
    let (source, rate) = try pictures()
    print("\(source.count) pictures, \(source[0].width)x\(source[0].height), at \(bitRate) kbit/s")
    for passes in [1, 2] {
        let output = "MultiPassEncode-\(passes)-pass.mp4"
        let size = try encode(source, rate: rate, passes: passes, into: output)
        let seconds = (rate.frameDuration * Int64(source.count)).seconds
        let quality = try await psnr(of: output, against: source)
        print("\(passes) pass\(passes == 1 ? " " : "es"): \(size) bytes (\(Int(Double(size) * 8 / seconds / 1000)) kbit/s), PSNR \(String(format: quality)) dB -> \(output)")
    }
} catch {
    print("MultiPassEncode: \(error)")
    exit(1)
}

extension String {
    /// `value` with two decimals.
    init(format value: Double) { self = String(Double(Int((value * 100).rounded())) / 100) }
}
