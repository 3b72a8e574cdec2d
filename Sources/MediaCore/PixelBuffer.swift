/// How a picture's samples are laid out in memory, named as FFmpeg names pixel formats
/// (`AVPixelFormat`): planar YUV 4:0:0 to 4:4:4 and planar GBR at 8 to 16 bits
/// (little-endian 16-bit words above 8), NV12, and packed RGB24/BGRA.
public struct PixelFormat: Hashable, Sendable, CustomStringConvertible {
    /// How the components are arranged in planes.
    public enum Layout: Hashable, Sendable {
        /// One plane per component, chroma subsampled as the chroma format says.
        case planar(ChromaFormat)
        /// Planar G, B, R (FFmpeg's `gbrp`: H.264 4:4:4 with the RGB matrix).
        case planarGBR
        /// Luma plane, then one plane of interleaved Cb/Cr at 4:2:0 (NV12).
        case semiPlanar420
        /// One plane of interleaved 8-bit components, in this order ("RGB", "BGRA").
        case packed(String)
    }

    /// How the components are arranged in planes.
    public let layout: Layout
    /// Bits per component sample: 8 to 16.
    public let bitDepth: Int

    /// A format of `layout` at `bitDepth` bits (8...16); packed RGB and NV12 must be 8-bit.
    public init(layout: Layout, bitDepth: Int = 8) {
        precondition((8...16).contains(bitDepth), "bit depth \(bitDepth) outside 8...16")
        if case .packed = layout { precondition(bitDepth == 8, "packed RGB formats are 8-bit") }
        if case .semiPlanar420 = layout { precondition(bitDepth == 8, "NV12 is 8-bit") }
        self.layout = layout
        self.bitDepth = bitDepth
    }

    /// Planar YUV with `chroma` subsampling at `bitDepth` bits (`yuv420p`, `yuv422p10le`, ...).
    public static func yuv(_ chroma: ChromaFormat, bitDepth: Int = 8) -> PixelFormat { PixelFormat(layout: .planar(chroma), bitDepth: bitDepth) }
    /// 8-bit planar YUV 4:2:0 (`yuv420p`).
    public static let yuv420p = yuv(.yuv420)
    /// 8-bit planar YUV 4:2:2 (`yuv422p`).
    public static let yuv422p = yuv(.yuv422)
    /// 8-bit planar YUV 4:4:4 (`yuv444p`).
    public static let yuv444p = yuv(.yuv444)
    /// 8-bit luma only (`gray`, H.264 4:0:0).
    public static let gray = yuv(.monochrome)
    /// 8-bit 4:2:0 with interleaved chroma (`nv12`).
    public static let nv12 = PixelFormat(layout: .semiPlanar420)
    /// 8-bit packed R, G, B (`rgb24`).
    public static let rgb24 = PixelFormat(layout: .packed("RGB"))
    /// 8-bit packed B, G, R, A (`bgra`).
    public static let bgra = PixelFormat(layout: .packed("BGRA"))

    /// Bytes per component sample in a plane: 1 at 8 bits, 2 above.
    public var bytesPerSample: Int { bitDepth > 8 ? 2 : 1 }

    /// The number of planes: 1 for gray and packed RGB, 2 for NV12, 3 otherwise.
    public var planeCount: Int {
        switch layout {
        case .planar(let chroma): chroma == .monochrome ? 1 : 3
        case .planarGBR: 3
        case .semiPlanar420: 2
        case .packed: 1
        }
    }

    /// The chroma format, for YUV layouts.
    public var chromaFormat: ChromaFormat? {
        switch layout {
        case .planar(let chroma): chroma
        case .semiPlanar420: .yuv420
        case .planarGBR, .packed: nil
        }
    }

    /// A plane's size for a picture of `width` × `height`: samples across, rows, and the bytes
    /// one row of samples takes (no padding).
    public func planeSize(_ plane: Int, width: Int, height: Int) -> (width: Int, height: Int, rowBytes: Int) {
        precondition(plane >= 0 && plane < planeCount, "plane \(plane) of a \(planeCount)-plane format")
        switch layout {
        case .planar(let chroma) where plane > 0:
            let w = (width + chroma.horizontalSubsampling - 1) / chroma.horizontalSubsampling
            let h = (height + chroma.verticalSubsampling - 1) / chroma.verticalSubsampling
            return (w, h, w * bytesPerSample)
        case .semiPlanar420 where plane == 1:
            let w = (width + 1) / 2, h = (height + 1) / 2
            return (w, h, 2 * w)
        case .packed(let order):
            return (width, height, width * order.count)
        default:
            return (width, height, width * bytesPerSample)
        }
    }

    /// The FFmpeg name: "yuv420p", "yuv422p10le", "gray", "gbrp12le", "nv12", "rgb24", "bgra".
    public var name: String {
        let suffix = bitDepth == 8 ? "" : "\(bitDepth)le"
        switch layout {
        case .planar(.monochrome): return bitDepth == 8 ? "gray" : "gray\(suffix)"
        case .planar(let chroma): return "yuv\(chroma.digits)p\(suffix)"
        case .planarGBR: return "gbrp\(suffix)"
        case .semiPlanar420: return "nv12"
        case .packed(let order): return order == "RGB" ? "rgb24" : order.lowercased()
        }
    }

    /// Parses an FFmpeg pixel format name this type can describe.
    public init?(name: String) {
        switch name {
        case "nv12": self = .nv12; return
        case "rgb24": self = .rgb24; return
        case "bgra": self = .bgra; return
        default: break
        }
        var base = Substring(name)
        var depth = 8
        if base.hasSuffix("le") {
            base = base.dropLast(2)
            let digits = base.reversed().prefix { $0.isNumber }
            guard let value = Int(String(digits.reversed())), (9...16).contains(value) else { return nil }
            depth = value
            base = base.dropLast(digits.count)
        }
        switch base {
        case "gray": self = .yuv(.monochrome, bitDepth: depth)
        case "yuv420p", "yuvj420p": self = .yuv(.yuv420, bitDepth: depth)
        case "yuv422p", "yuvj422p": self = .yuv(.yuv422, bitDepth: depth)
        case "yuv444p", "yuvj444p": self = .yuv(.yuv444, bitDepth: depth)
        case "gbrp": self = PixelFormat(layout: .planarGBR, bitDepth: depth)
        default: return nil
        }
    }

    /// The FFmpeg ``name``.
    public var description: String { name }
}

/// Chroma subsampling (chroma_format_idc, ITU-T H.264 Table 6-1).
public enum ChromaFormat: Int, Hashable, Sendable, CaseIterable {
    /// 4:0:0 (luma only), 4:2:0, 4:2:2 and 4:4:4, numbered as chroma_format_idc.
    case monochrome = 0, yuv420 = 1, yuv422 = 2, yuv444 = 3
    /// Luma samples per chroma sample across: 2 for 4:2:0 and 4:2:2, else 1.
    public var horizontalSubsampling: Int { self == .yuv420 || self == .yuv422 ? 2 : 1 }
    /// Luma rows per chroma row: 2 for 4:2:0, else 1.
    public var verticalSubsampling: Int { self == .yuv420 ? 2 : 1 }
    var digits: String {
        switch self {
        case .monochrome: "400"
        case .yuv420: "420"
        case .yuv422: "422"
        case .yuv444: "444"
        }
    }
}

/// Colour signal description (the VUI's, ITU-T H.273 code points).
public struct ColourDescription: Hashable, Sendable, Codable {
    /// colour_primaries (ITU-T H.273 Table 2); 2 = unspecified.
    public var primaries: Int
    /// transfer_characteristics (ITU-T H.273 Table 3); 2 = unspecified.
    public var transfer: Int
    /// matrix_coefficients (ITU-T H.273 Table 4); 2 = unspecified, 0 = RGB.
    public var matrix: Int
    /// Whether samples use the full range (video_full_range_flag) rather than video range.
    public var fullRange: Bool
    /// A description with the given code points; by default all unspecified, video range.
    public init(primaries: Int = 2, transfer: Int = 2, matrix: Int = 2, fullRange: Bool = false) {
        self.primaries = primaries
        self.transfer = transfer
        self.matrix = matrix
        self.fullRange = fullRange
    }
}

/// A decoded picture or a picture to encode: planes with strides, in memory the buffer owns or
/// borrows (a decoder's frame), the `CVPixelBuffer` analogue.
///
/// Plane memory is shared by reference: ``cropped(left:top:width:height:)`` gives a view of
/// part of the picture without copying, as libavcodec applies frame cropping. Write a buffer's
/// planes before handing it to another thread; after that, treat it as read-only.
public final class PixelBuffer: @unchecked Sendable {
    /// One plane's geometry and memory.
    public struct Plane: @unchecked Sendable {
        /// Samples across (component samples; pixels for packed formats).
        public var width: Int
        /// Rows.
        public var height: Int
        /// Bytes from the start of one row to the next (≥ the row's bytes).
        public var bytesPerRow: Int
        /// Bytes of one row's samples, without padding.
        public var rowBytes: Int
        /// The first byte of the first row (`CVPixelBufferGetBaseAddressOfPlane`), for handing
        /// the plane to C. Valid only while the buffer (or a view of it) is alive.
        public let base: UnsafeMutableRawPointer
    }

    /// Memory the planes live in; released when the last buffer viewing it goes away.
    final class Storage: @unchecked Sendable {
        let release: (@Sendable () -> Void)?
        init(release: (@Sendable () -> Void)?) { self.release = release }
        deinit { release?() }
    }

    /// How the samples are laid out.
    public let format: PixelFormat
    /// Picture width and height in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// The planes, in the format's order (Y, Cb, Cr; G, B, R; or one packed plane).
    public let planes: [Plane]
    /// The colour signal description, when known.
    public var colour: ColourDescription?
    private let storage: Storage

    /// The alignment of rows and planes in buffers this type allocates (enough for AVX-512).
    public static let alignment = 64

    /// A buffer with its own memory, rows padded to ``alignment``, zero-filled.
    public init(format: PixelFormat, width: Int, height: Int, colour: ColourDescription? = nil) {
        precondition(width > 0 && height > 0, "a picture needs a positive size")
        var layout: [(width: Int, height: Int, rowBytes: Int, stride: Int, offset: Int)] = []
        var total = 0
        for plane in 0..<format.planeCount {
            let size = format.planeSize(plane, width: width, height: height)
            let stride = (size.rowBytes + Self.alignment - 1) / Self.alignment * Self.alignment
            layout.append((size.width, size.height, size.rowBytes, stride, total))
            total += stride * size.height
        }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: Self.alignment)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: max(total, 1))
        self.format = format
        self.width = width
        self.height = height
        self.colour = colour
        self.planes = layout.map { Plane(width: $0.width, height: $0.height, bytesPerRow: $0.stride, rowBytes: $0.rowBytes, base: memory + $0.offset) }
        nonisolated(unsafe) let owned = memory
        self.storage = Storage(release: { owned.deallocate() })
    }

    /// A buffer over planes someone else owns (a decoder's frame): no copy. `release` runs
    /// once, when the last buffer viewing this memory is gone.
    public init(format: PixelFormat, width: Int, height: Int, borrowing planes: [(base: UnsafeMutableRawPointer, bytesPerRow: Int)],
                colour: ColourDescription? = nil, release: (@Sendable () -> Void)?) {
        precondition(planes.count == format.planeCount, "\(format) has \(format.planeCount) planes, \(planes.count) given")
        self.format = format
        self.width = width
        self.height = height
        self.colour = colour
        self.planes = planes.enumerated().map { index, plane in
            let size = format.planeSize(index, width: width, height: height)
            precondition(plane.bytesPerRow >= size.rowBytes, "plane \(index): \(plane.bytesPerRow) bytes per row, \(size.rowBytes) needed")
            return Plane(width: size.width, height: size.height, bytesPerRow: plane.bytesPerRow, rowBytes: size.rowBytes, base: plane.base)
        }
        self.storage = Storage(release: release)
    }

    private init(format: PixelFormat, width: Int, height: Int, planes: [Plane], colour: ColourDescription?, storage: Storage) {
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.colour = colour
        self.storage = storage
    }

    /// The bytes of a plane, `bytesPerRow × height` of them (the last row's padding included).
    public func withUnsafeBytes<R, E: Error>(ofPlane index: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let plane = planes[index]
        return try body(UnsafeRawBufferPointer(start: plane.base, count: plane.bytesPerRow * (plane.height - 1) + plane.rowBytes))
    }

    /// The writable bytes of a plane (for filling a picture before encoding it).
    public func withUnsafeMutableBytes<R, E: Error>(ofPlane index: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let plane = planes[index]
        return try body(UnsafeMutableRawBufferPointer(start: plane.base, count: plane.bytesPerRow * (plane.height - 1) + plane.rowBytes))
    }

    /// A view of a rectangle of the picture, sharing memory. Offsets and sizes must keep
    /// chroma samples whole (even for subsampled directions).
    public func cropped(left: Int, top: Int, width newWidth: Int, height newHeight: Int) -> PixelBuffer {
        precondition(left >= 0 && top >= 0 && newWidth > 0 && newHeight > 0 && left + newWidth <= width && top + newHeight <= height,
                     "crop outside the \(width)x\(height) picture")
        let (sx, sy): (Int, Int) = switch format.layout {
        case .planar(let chroma): (chroma.horizontalSubsampling, chroma.verticalSubsampling)
        case .semiPlanar420: (2, 2)
        default: (1, 1)
        }
        precondition(left % sx == 0 && top % sy == 0, "a crop of \(format) must start on a chroma sample")
        let views = planes.indices.map { index -> Plane in
            let plane = planes[index]
            let size = format.planeSize(index, width: newWidth, height: newHeight)
            let chroma = index > 0 && format.chromaFormat != nil
            let x = chroma ? left / sx : left, y = chroma ? top / sy : top
            let bytesPerPixel = plane.rowBytes / max(plane.width, 1)
            return Plane(width: size.width, height: size.height, bytesPerRow: plane.bytesPerRow, rowBytes: size.rowBytes,
                         base: plane.base + y * plane.bytesPerRow + x * bytesPerPixel)
        }
        return PixelBuffer(format: format, width: newWidth, height: newHeight, planes: views, colour: colour, storage: storage)
    }

    /// Bytes of the picture packed without row padding: FFmpeg's `rawvideo` frame size.
    public var packedSize: Int { planes.reduce(0) { $0 + $1.rowBytes * $1.height } }

    /// Appends the picture packed as FFmpeg's `rawvideo` writes it: plane after plane, rows
    /// without padding, samples above 8 bits as little-endian 16-bit words.
    public func appendPacked(to output: inout [UInt8]) {
        output.reserveCapacity(output.count + packedSize)
        for plane in planes {
            for row in 0..<plane.height {
                output.append(contentsOf: UnsafeRawBufferPointer(start: plane.base + row * plane.bytesPerRow, count: plane.rowBytes))
            }
        }
    }

    /// Calls `body` with each row of each plane, packed bytes in order (for writing to a file
    /// without building one large array).
    public func forEachPackedRow<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        for plane in planes {
            for row in 0..<plane.height {
                try body(UnsafeRawBufferPointer(start: plane.base + row * plane.bytesPerRow, count: plane.rowBytes))
            }
        }
    }
}
