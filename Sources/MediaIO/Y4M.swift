public import H264Bitstream
public import MediaCore
import SystemIO

/// A YUV4MPEG2 stream header: size, rate, aspect ratio, interlacing, colour space.
public struct Y4MHeader: Sendable, Hashable {
    /// Picture width in pixels (`W`).
    public var width: Int
    /// Picture height in pixels (`H`).
    public var height: Int
    /// The frame rate (`F`), or nil when the header has none.
    public var frameRate: FrameRate?
    /// The pixel aspect ratio (`A`); nil when absent or unknown (`0:0`).
    public var sampleAspectRatio: (width: Int, height: Int)?
    /// `p` (progressive), `t` (top field first), `b` (bottom field first), `m` (mixed), or nil.
    public var interlacing: Character?
    /// The `C` parameter (`420jpeg`, `422p10`, ...), or nil (4:2:0 by convention).
    public var colourSpace: String?
    /// `XCOLORRANGE=FULL` or `LIMITED`, when present.
    public var fullRange: Bool?

    /// Whether two headers have the same parameters.
    public static func == (a: Y4MHeader, b: Y4MHeader) -> Bool {
        a.width == b.width && a.height == b.height && a.frameRate == b.frameRate && a.sampleAspectRatio?.width == b.sampleAspectRatio?.width
            && a.sampleAspectRatio?.height == b.sampleAspectRatio?.height && a.interlacing == b.interlacing && a.colourSpace == b.colourSpace && a.fullRange == b.fullRange
    }

    /// Hashes the size and colour space (equal headers hash alike).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(width)
        hasher.combine(height)
        hasher.combine(colourSpace)
    }

    /// The Y4M colour spaces this module reads, and their pixel formats.
    static let formats: [String: PixelFormat] = [
        "420jpeg": .yuv420p, "420mpeg2": .yuv420p, "420paldv": .yuv420p, "420": .yuv420p, "422": .yuv422p, "444": .yuv444p, "mono": .gray,
        "420p10": .yuv(.yuv420, bitDepth: 10), "422p10": .yuv(.yuv422, bitDepth: 10), "444p10": .yuv(.yuv444, bitDepth: 10),
        "420p12": .yuv(.yuv420, bitDepth: 12), "422p12": .yuv(.yuv422, bitDepth: 12), "444p12": .yuv(.yuv444, bitDepth: 12),
        "mono10": .yuv(.monochrome, bitDepth: 10), "mono12": .yuv(.monochrome, bitDepth: 12),
    ]

    /// The pixel format of the pictures; nil for a colour space this module does not read.
    public var pixelFormat: PixelFormat? { Self.formats[colourSpace ?? "420jpeg"] }

    /// Parses a header line (without its newline). Sizes are capped at 16384 each way.
    public init(parsing line: [UInt8], path: String? = nil) throws(MediaIOError) {
        func fail(_ reason: String) -> MediaIOError { MediaIOError(.invalidData, "Y4M header: \(reason)", path: path, byteOffset: 0) }
        let fields = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard fields.first == "YUV4MPEG2" else { throw MediaIOError(.invalidData, "not a Y4M file (the header does not start with YUV4MPEG2)", path: path, byteOffset: 0) }
        var w: Int?, h: Int?
        for field in fields.dropFirst() {
            let value = String(field.dropFirst())
            switch field.first {
            case "W": w = Int(value)
            case "H": h = Int(value)
            case "F":
                let parts = value.split(separator: ":").compactMap { UInt64($0) }
                guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { throw fail("frame rate \"\(value)\" is not N:D") }
                frameRate = FrameRate(parts[0], parts[1])
            case "A":
                let parts = value.split(separator: ":").compactMap { Int($0) }
                if parts.count == 2, parts[0] > 0, parts[1] > 0 { sampleAspectRatio = (parts[0], parts[1]) }
            case "I": interlacing = value.first
            case "C": colourSpace = value
            case "X":
                if value == "COLORRANGE=FULL" { fullRange = true } else if value == "COLORRANGE=LIMITED" { fullRange = false }
            default: continue
            }
        }
        guard let w, let h, w > 0, h > 0, w <= 16384, h <= 16384 else { throw fail("width and height (W, H) missing or out of range (1 to 16384)") }
        width = w
        height = h
    }
}

/// Reads a YUV4MPEG2 (`.y4m`) file or stream: the header, then pictures after `FRAME` lines.
/// A mapped file's pictures borrow the mapping (no copy).
public final class Y4MReader: PictureReader {
    /// The stream header.
    public let header: Y4MHeader
    /// The pictures' pixel format, from the header's colour space.
    public let format: PixelFormat
    /// The rate the pictures are shown at: the one given, else the header's.
    public let frameRate: FrameRate
    /// The file's name ("-" for standard input).
    public let path: String
    private let input: PictureInput
    private let frameSize: Int
    private var offset = 0
    private var index = 0

    /// Picture width in pixels, from the header.
    public var width: Int { header.width }
    /// Picture height in pixels, from the header.
    public var height: Int { header.height }
    /// The pixel aspect ratio, from the header.
    public var sampleAspectRatio: (width: Int, height: Int)? { header.sampleAspectRatio }

    /// Opens `path` ("-" for standard input). `frameRate` replaces the header's rate (and is
    /// needed when the header has none); a header declaring pictures over `limits` is refused.
    public init(path: String, frameRate rate: FrameRate? = nil, limits: PictureLimits = PictureLimits()) throws(MediaIOError) {
        self.path = path
        input = try PictureInput.open(path)
        let line: [UInt8]
        switch input {
        case .mapped(let file):
            guard let newline = file.bytes.prefix(4096).firstIndex(of: 0x0A) else {
                throw MediaIOError(.invalidData, "not a Y4M file (no header line in the first 4 KB)", path: path, byteOffset: 0)
            }
            line = Array(file.bytes[..<newline])
            offset = newline + 1
        case .stream(let stream):
            guard let read = try Self.readLine(stream, limit: 4096) else {
                throw MediaIOError(.invalidData, "not a Y4M file (no header line in the first 4 KB)", path: path, byteOffset: 0)
            }
            line = read
        }
        header = try Y4MHeader(parsing: line, path: path)
        try PictureInput.check(width: header.width, height: header.height, limits: limits, declaredBy: "the Y4M header", path: path)
        guard let format = header.pixelFormat else {
            throw MediaIOError(.unsupported, "Y4M header: colour space C\(header.colourSpace ?? "") is not supported", path: path, byteOffset: 0)
        }
        self.format = format
        guard let chosen = rate ?? header.frameRate else { throw MediaIOError(.invalidArgument, "the Y4M header has no frame rate (F); give one", path: path) }
        frameRate = chosen
        frameSize = packedFrameSize(format, width: header.width, height: header.height)
    }

    /// A line from a stream (without its newline); nil at the end before any byte, an error
    /// past `limit` bytes.
    private static func readLine(_ input: ChunkedInput, limit: Int) throws(MediaIOError) -> [UInt8]? {
        var line: [UInt8] = []
        let byte = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { byte.deallocate() }
        while true {
            let n: Int
            do { n = try input.read(into: byte) } catch { throw MediaIOError(error) }
            if n == 0 { return line.isEmpty ? nil : line }
            if byte[0] == 0x0A { return line }
            line.append(byte[0])
            guard line.count < limit else { throw MediaIOError(.invalidData, "a header line longer than \(limit) bytes", path: input.path) }
        }
    }

    /// The next picture, or nil at the end; a mapped file's pictures borrow the mapping (no copy).
    public func next() throws(MediaIOError) -> PixelBuffer? {
        defer { index += 1 }
        switch input {
        case .mapped(let file):
            let bytes = file.bytes
            guard offset < bytes.count else { return nil }
            guard bytes.count - offset >= 6, bytes[offset..<(offset + 5)].elementsEqual("FRAME".utf8) else {
                throw MediaIOError(.invalidData, "frame \(index) does not start with FRAME", path: path, byteOffset: offset)
            }
            guard let newline = bytes[offset...].prefix(1024).firstIndex(of: 0x0A) else {
                throw MediaIOError(.invalidData, "frame \(index) header has no end", path: path, byteOffset: offset)
            }
            offset = newline + 1
            guard bytes.count - offset >= frameSize else {
                throw MediaIOError(.invalidData, "frame \(index) is cut off: \(bytes.count - offset) of \(frameSize) bytes", path: path, byteOffset: offset)
            }
            defer { offset += frameSize }
            return PictureInput.borrowedPicture(file, at: offset, format: format, width: width, height: height)
        case .stream(let stream):
            guard let line = try Self.readLine(stream, limit: 1024) else { return nil }
            guard line.starts(with: "FRAME".utf8) else { throw MediaIOError(.invalidData, "frame \(index) does not start with FRAME", path: path) }
            guard let picture = try PictureInput.readPicture(stream, format: format, width: width, height: height, index: index) else {
                throw MediaIOError(.invalidData, "frame \(index) is cut off (the input ended after its FRAME line)", path: path)
            }
            return picture
        }
    }
}

/// Opens a picture file: a `.y4m` (or a Y4M stream on standard input), or raw video when
/// `raw` gives the size, format and rate.
public func openPictureReader(path: String, raw: (width: Int, height: Int, format: PixelFormat, frameRate: FrameRate)? = nil,
                              frameRate: FrameRate? = nil, limits: PictureLimits = PictureLimits()) throws(MediaIOError) -> any PictureReader {
    if let raw { return try RawVideoReader(path: path, width: raw.width, height: raw.height, format: raw.format, frameRate: raw.frameRate, limits: limits) }
    return try Y4MReader(path: path, frameRate: frameRate, limits: limits)
}
