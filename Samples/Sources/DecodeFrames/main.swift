// Case study 2 of seed 003: decode H.264 and get at the decoded buffers. Samples come from a
// file (Annex-B, MP4 or MOV), a decompression session turns them into pictures, and for each
// picture the program reads the luma plane through its base address and stride (as
// `CVPixelBufferGetBaseAddressOfPlane` and `GetBytesPerRowOfPlane` give them), prints its
// statistics, and once a second writes the picture as a PNG thumbnail (seed 001's "sample
// buffer to image").
//
//     swift run DecodeFrames [IN.264|IN.mp4|IN.mov] [THUMBNAIL-DIRECTORY]
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let input = arguments.first ?? "Media/testsrc2-320x240-bframes.264"
let thumbnails = arguments.count > 1 ? arguments[1] : "DecodeFrames-thumbnails"

do {
    // 1. The samples, in decode order, and the format description the session needs.
    let source = try MediaSource(path: input)
    guard let first = try source.next() else { throw SampleError("\(input) has no video") }
    let format = first.videoFormatDescription!
    print("\(input): \(format.width)x\(format.height), profile \(format.profileIdc), level \(format.levelIdc), "
          + "\(format.bitDepthLuma)-bit, chroma format \(format.chromaFormatIdc)")

    // 2. The session (VTDecompressionSession): asynchronous, its pictures on `frames` in
    //    presentation order. It holds a bounded number in flight: `decode` waits when the
    //    consumer below falls behind.
    let session = try DecompressionSession(formatDescription: format)
    let frames = try session.frames
    let producer = Task {
        try await session.decode(first)
        while let sample = try source.next() { try await session.decode(sample) }
        await session.finish()   // the decoder's delayed pictures, then the end of `frames`
    }

    // 3. Each picture: its planes are memory the decoder owns, lent without a copy for as long
    //    as the `PixelBuffer` lives.
    mkdir(thumbnails, 0o755)
    var png = try PNGEncoder(size: (160, 120))
    var count = 0, nextThumbnail = MediaTime.zero
    for try await frame in frames {
        guard let picture = frame.pixelBuffer else {
            print("frame at \(frame.presentationTime): not shown (\(frame.error.map { "\($0)" } ?? "no picture"))")
            continue
        }
        let luma = picture.planes[0]
        let (mean, minimum, maximum) = lumaStatistics(luma, bytesPerSample: picture.format.bytesPerSample)
        print("frame \(count) pts \(frame.presentationTime.seconds) s: \(picture.format) \(picture.width)x\(picture.height), "
              + "luma stride \(luma.bytesPerRow) B, mean \(String(format2: mean)), min \(minimum), max \(maximum)")
        if frame.presentationTime >= nextThumbnail {
            // PNGEncoder converts (libswscale) and scales to the thumbnail size.
            let path = "\(thumbnails)/frame-\(count).png"
            try writeFile(path, try png.encode(picture))
            print("  thumbnail \(path)")
            nextThumbnail = frame.presentationTime + MediaTime(value: 1, timescale: 1)
        }
        count += 1
    }
    try await producer.value
    print("\(count) pictures decoded")
} catch {
    print("DecodeFrames: \(error)")
    exit(1)
}

/// Mean, minimum and maximum of a luma plane, read row by row through its stride (the rows may
/// be padded: `bytesPerRow` ≥ `rowBytes`). 8-bit samples are bytes; deeper ones 16-bit words.
func lumaStatistics(_ plane: PixelBuffer.Plane, bytesPerSample: Int) -> (Double, Int, Int) {
    var sum = 0, minimum = Int.max, maximum = 0
    for row in 0..<plane.height {
        let start = plane.base + row * plane.bytesPerRow
        for column in 0..<plane.width {
            let value = bytesPerSample == 1 ? Int(start.load(fromByteOffset: column, as: UInt8.self))
                                            : Int(start.loadUnaligned(fromByteOffset: column * 2, as: UInt16.self))
            sum += value
            minimum = min(minimum, value)
            maximum = max(maximum, value)
        }
    }
    return (Double(sum) / Double(plane.width * plane.height), minimum, maximum)
}

/// Writes `bytes` to `path`.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    guard let file = fopen(path, "wb") else { throw SampleError("\(path): cannot create (errno \(errno))") }
    defer { fclose(file) }
    guard fwrite(bytes, 1, bytes.count, file) == bytes.count else { throw SampleError("\(path): write failed") }
}

extension String {
    /// `value` with two decimals.
    init(format2 value: Double) { self = String(Double(Int((value * 100).rounded())) / 100) }
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
