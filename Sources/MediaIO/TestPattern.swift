public import H264Bitstream
public import MediaCore

/// A moving test picture that keeps an encoder busy: a sliding diagonal gradient, a textured
/// square crossing it, colour ramps moving the other way, and a little deterministic noise.
/// The same index gives the same picture, so encodes of it compare.
public struct TestPattern: Sendable {
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int

    /// A pattern of `width`×`height` 4:2:0 8-bit pictures.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "a picture needs a positive size")
        self.width = width
        self.height = height
    }

    /// Picture `t` (a new buffer).
    public func picture(_ t: Int) -> PixelBuffer {
        let picture = PixelBuffer(format: .yuv420p, width: width, height: height)
        let luma = picture.planes[0], cb = picture.planes[1], cr = picture.planes[2]
        var seed = UInt32(truncatingIfNeeded: t &* 2_654_435_761) | 1
        let squareX = (100 + 9 * t) % max(1, width - 256), squareY = (200 + 4 * t) % max(1, height - 256)
        for y in 0..<height {
            let row = (luma.base + y * luma.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            let inSquareRow = y >= squareY && y < squareY + 256
            for x in 0..<width {
                seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5
                var value = (x + y + 3 * t) & 255
                if inSquareRow && x >= squareX && x < squareX + 256 {
                    value = ((x - squareX) >> 4 ^ (y - squareY) >> 4) & 1 == 0 ? 40 : 215
                }
                row[x] = UInt8(clamping: value + Int(seed & 7) - 3)
            }
        }
        for y in 0..<cb.height {
            let u = (cb.base + y * cb.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            let v = (cr.base + y * cr.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            for x in 0..<cb.width {
                u[x] = UInt8(96 + ((x - t) & 63))
                v[x] = UInt8(96 + ((y + 2 * t) & 63))
            }
        }
        return picture
    }

    /// Writes `frames` pictures to a `.y4m` file at `frameRate`.
    public func writeY4M(to path: String, frames: Int, frameRate: FrameRate) throws(MediaIOError) {
        let writer = try Y4MWriter(path: path, frameRate: frameRate)
        for t in 0..<frames { try writer.write(picture(t), at: frameRate.time(ofFrame: Int64(t)), fieldOrder: .progressive) }
        try writer.finish()
    }
}
