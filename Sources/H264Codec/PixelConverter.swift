import CCodecs
public import MediaCore

/// Converts pictures to another pixel format and size with libswscale, with the settings the
/// `ffmpeg` tool uses by default (bicubic, the source's matrix and range).
///
/// The corresponding C function is `sws_scale`.
public struct PixelConverter: ~Copyable {
    /// The output pixel format.
    public let format: PixelFormat
    /// The output size; nil keeps each picture's size.
    public let size: (width: Int, height: Int)?
    private var context: OpaquePointer?

    /// A converter to `format`, and to `size` when given; throws when libswscale cannot write the format.
    public init(format: PixelFormat, size: (width: Int, height: Int)? = nil) throws(CodecError) {
        try loadFFmpeg()
        guard sws_isSupportedOutput(format.avPixelFormat) > 0 else {
            throw CodecError(.unsupportedFormat, "libswscale cannot write \(format)")
        }
        if let size, size.width <= 0 || size.height <= 0 {
            throw CodecError(.invalidConfiguration, "output size \(size.width)x\(size.height) is not positive")
        }
        self.format = format
        self.size = size
    }

    deinit {
        if let context { sws_freeContext(context) }
    }

    /// A new picture in the output format and size; the source when it already is one.
    public mutating func convert(_ source: PixelBuffer) throws(CodecError) -> PixelBuffer {
        let width = size?.width ?? source.width, height = size?.height ?? source.height
        if source.format == format && source.width == width && source.height == height { return source }
        let sourceFormat = source.format.avPixelFormat
        context = sws_getCachedContext(context, Int32(source.width), Int32(source.height), sourceFormat,
                                       Int32(width), Int32(height), format.avPixelFormat, SWS_BICUBIC, nil, nil, nil)
        guard let context else {
            throw CodecError(.unsupportedFormat, "libswscale cannot convert \(source.format) \(source.width)x\(source.height) to \(format) \(width)x\(height)")
        }
        if let colour = source.colour {
            let matrix = sws_getCoefficients(colour.matrix == 2 ? SWS_CS_DEFAULT : Int32(colour.matrix))
            let table = sws_getCoefficients(SWS_CS_DEFAULT)
            _ = sws_setColorspaceDetails(context, matrix, colour.fullRange ? 1 : 0, table, 0, 0, 1 << 16, 1 << 16)
        }
        let output = PixelBuffer(format: format, width: width, height: height, colour: source.colour)
        var sourcePlanes: [UnsafePointer<UInt8>?] = source.planes.map { UnsafePointer($0.base.assumingMemoryBound(to: UInt8.self)) }
        var sourceStrides: [Int32] = source.planes.map { Int32($0.bytesPerRow) }
        var outputPlanes: [UnsafeMutablePointer<UInt8>?] = output.planes.map { $0.base.assumingMemoryBound(to: UInt8.self) }
        var outputStrides: [Int32] = output.planes.map { Int32($0.bytesPerRow) }
        while sourcePlanes.count < 4 { sourcePlanes.append(nil); sourceStrides.append(0) }
        while outputPlanes.count < 4 { outputPlanes.append(nil); outputStrides.append(0) }
        let rows = withExtendedLifetime(source) {
            sws_scale(context, sourcePlanes, sourceStrides, 0, Int32(source.height), outputPlanes, outputStrides)
        }
        guard rows > 0 else { throw CodecError(.decodeFailed, "libswscale converted nothing", underlying: rows < 0 ? AVError(rawValue: rows) : nil) }
        return output
    }
}
