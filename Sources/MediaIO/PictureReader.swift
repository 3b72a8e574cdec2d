public import H264Bitstream
public import MediaCore
import SystemIO

/// A source of uncompressed pictures in order: a Y4M file or raw video.
public protocol PictureReader: AnyObject {
    /// Picture size and format, the same for every picture.
    var width: Int { get }
    /// Picture height, the same for every picture.
    var height: Int { get }
    /// Pixel format, the same for every picture.
    var format: PixelFormat { get }
    /// The rate the pictures are shown at.
    var frameRate: FrameRate { get }
    /// The pixel aspect ratio, when the file says.
    var sampleAspectRatio: (width: Int, height: Int)? { get }
    /// The next picture, or nil at the end. A mapped file's pictures borrow the mapping (no copy).
    func next() throws(MediaIOError) -> PixelBuffer?
}

extension PictureReader {
    /// One frame's duration.
    public var frameDuration: MediaTime { frameRate.frameDuration }
}

/// The bytes of one picture in `format` at `width`×`height`, planes one after another.
func packedFrameSize(_ format: PixelFormat, width: Int, height: Int) -> Int {
    (0..<format.planeCount).reduce(0) { total, plane in
        let size = format.planeSize(plane, width: width, height: height)
        return total + size.rowBytes * size.height
    }
}

/// Where pictures come from: a mapped file (planes borrowed from it), or a descriptor read
/// frame by frame into buffers of their own.
enum PictureInput {
    case mapped(MappedFile)
    case stream(ChunkedInput)

    static func open(_ path: String) throws(MediaIOError) -> PictureInput {
        do {
            if path != "-", let status = try FileStatus.of(path: path), status.kind == .regular, status.size > 0 {
                return .mapped(try MappedFile(path: path))
            }
            return .stream(try ChunkedInput(path: path))
        } catch {
            throw MediaIOError(error)
        }
    }

    /// A picture whose planes are `bytes` at `offset` of a mapping (no copy).
    static func borrowedPicture(_ file: MappedFile, at offset: Int, format: PixelFormat, width: Int, height: Int) -> PixelBuffer {
        var planes: [(base: UnsafeMutableRawPointer, bytesPerRow: Int)] = []
        var at = offset
        for plane in 0..<format.planeCount {
            let size = format.planeSize(plane, width: width, height: height)
            planes.append((UnsafeMutableRawPointer(mutating: file.bytes.baseAddress! + at), size.rowBytes))
            at += size.rowBytes * size.height
        }
        return PixelBuffer(format: format, width: width, height: height, borrowing: planes, release: { withExtendedLifetime(file) {} })
    }

    /// Reads a whole picture from a stream; nil at a clean end (before its first byte). The
    /// picture is allocated only once its first row has arrived, so a header alone cannot
    /// make the reader hold a picture's worth of memory.
    static func readPicture(_ input: ChunkedInput, format: PixelFormat, width: Int, height: Int, index: Int) throws(MediaIOError) -> PixelBuffer? {
        func cutOff() -> MediaIOError { MediaIOError(.invalidData, "frame \(index) is cut off (the input ended inside it)", path: input.path) }
        let firstRow = UnsafeMutableRawBufferPointer.allocate(byteCount: format.planeSize(0, width: width, height: height).rowBytes, alignment: 16)
        defer { firstRow.deallocate() }
        let n: Int
        do { n = try input.readFully(into: firstRow) } catch { throw MediaIOError(error) }
        if n == 0 { return nil }
        guard n == firstRow.count else { throw cutOff() }
        let picture = PixelBuffer(format: format, width: width, height: height)
        for (number, plane) in picture.planes.enumerated() {
            for row in 0..<plane.height {
                let target = UnsafeMutableRawBufferPointer(start: plane.base + row * plane.bytesPerRow, count: plane.rowBytes)
                if number == 0 && row == 0 { target.copyMemory(from: UnsafeRawBufferPointer(firstRow)); continue }
                let n: Int
                do { n = try input.readFully(into: target) } catch { throw MediaIOError(error) }
                guard n == target.count else { throw cutOff() }
            }
        }
        return picture
    }

    /// Checks a declared picture size against `limits` before anything is allocated for it.
    static func check(width: Int, height: Int, limits: PictureLimits, declaredBy source: String, path: String) throws(MediaIOError) {
        guard limits.allows(width: width, height: height) else {
            throw MediaIOError(.limitExceeded, limits.refusal(width: width, height: height, declaredBy: source) + " (PictureLimits.maximumPixels)", path: path)
        }
    }
}

/// Raw video: pictures of one size and pixel format one after another, no header (what
/// `ffmpeg -f rawvideo` writes).
public final class RawVideoReader: PictureReader {
    /// Picture width in pixels, as given.
    public let width: Int
    /// Picture height in pixels, as given.
    public let height: Int
    /// The pictures' pixel format, as given.
    public let format: PixelFormat
    /// The rate the pictures are shown at, as given.
    public let frameRate: FrameRate
    /// Always nil: raw video does not say.
    public let sampleAspectRatio: (width: Int, height: Int)? = nil
    /// The file's name ("-" for standard input).
    public let path: String
    private let input: PictureInput
    private let frameSize: Int
    private var offset = 0
    private var index = 0

    /// Opens `path` ("-" for standard input). A mapped file must hold a whole number of
    /// pictures; a size over `limits` is refused.
    public init(path: String, width: Int, height: Int, format: PixelFormat, frameRate: FrameRate, limits: PictureLimits = PictureLimits()) throws(MediaIOError) {
        guard width > 0, height > 0, width <= 16384, height <= 16384 else {
            throw MediaIOError(.invalidArgument, "picture size \(width)x\(height): expected 1 to 16384 each way", path: path)
        }
        try PictureInput.check(width: width, height: height, limits: limits, declaredBy: "the raw video size", path: path)
        self.path = path
        self.width = width
        self.height = height
        self.format = format
        self.frameRate = frameRate
        frameSize = packedFrameSize(format, width: width, height: height)
        input = try PictureInput.open(path)
        if case .mapped(let file) = input, file.count % frameSize != 0 {
            throw MediaIOError(.invalidArgument, "\(file.count) bytes is not a whole number of \(width)x\(height) \(format) frames (\(frameSize) bytes each): \(file.count / frameSize) frames and \(file.count % frameSize) bytes left over; check the size and pixel format", path: path)
        }
    }

    /// The next picture, or nil at the end; a mapped file's pictures borrow the mapping (no copy).
    public func next() throws(MediaIOError) -> PixelBuffer? {
        defer { index += 1 }
        switch input {
        case .mapped(let file):
            guard offset < file.count else { return nil }
            defer { offset += frameSize }
            return PictureInput.borrowedPicture(file, at: offset, format: format, width: width, height: height)
        case .stream(let stream):
            return try PictureInput.readPicture(stream, format: format, width: width, height: height, index: index)
        }
    }
}
