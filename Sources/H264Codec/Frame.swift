import CCodecs
public import MediaCore

/// What libavcodec says about a decoded picture's errors (`AVFrame.decode_error_flags`).
public struct DecodeErrorFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The `decode_error_flags` bits.
    public let rawValue: Int32
    /// Flags with bits `rawValue`.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The bitstream had errors (`FF_DECODE_ERROR_INVALID_BITSTREAM`).
    public static let invalidBitstream = DecodeErrorFlags(rawValue: 1)
    /// A reference picture was missing (`FF_DECODE_ERROR_MISSING_REFERENCE`).
    public static let missingReference = DecodeErrorFlags(rawValue: 2)
    /// Some macroblocks were concealed (copied or predicted, not decoded).
    public static let concealmentActive = DecodeErrorFlags(rawValue: 4)
    /// Some slices could not be decoded (`FF_DECODE_ERROR_DECODE_SLICES`).
    public static let decodeSlices = DecodeErrorFlags(rawValue: 8)

    /// The flags in words, comma-separated ("invalid bitstream, missing reference").
    public var description: String {
        var names: [String] = []
        if contains(.invalidBitstream) { names.append("invalid bitstream") }
        if contains(.missingReference) { names.append("missing reference") }
        if contains(.concealmentActive) { names.append("concealment active") }
        if contains(.decodeSlices) { names.append("slices failed") }
        return names.joined(separator: ", ")
    }
}

/// A picture out of the decoder: its pixels (the decoder's own buffer, not a copy), its
/// timestamp and what went wrong decoding it.
public struct DecodedPicture: Sendable {
    /// The picture's pixels, in the decoder's buffer.
    public var pixelBuffer: PixelBuffer
    /// The timestamp given with the packet the picture came from, in the caller's units.
    public var timestamp: Int64?
    /// The duration given with the packet, in the caller's units; 0 when none was given.
    public var duration: Int64
    /// Whether libavcodec marks the picture a keyframe (`key_frame`).
    public var isKeyFrame: Bool
    /// The decode errors libavcodec reports for the picture.
    public var errorFlags: DecodeErrorFlags
    /// libavcodec marks the picture corrupt (`AV_FRAME_FLAG_CORRUPT`).
    public var isCorrupt: Bool
    /// Two fields; `topFieldFirst` says which is shown first.
    public var isInterlaced = false
    /// Whether the top field is shown first, for an interlaced picture.
    public var topFieldFirst = false

    /// Whether some of the picture is concealment rather than decoded data.
    public var isConcealed: Bool { isCorrupt || !errorFlags.isEmpty }
}

extension PixelFormat {
    init?(_ format: AVPixelFormat) {
        guard let name = av_get_pix_fmt_name(format) else { return nil }
        self.init(name: String(cString: name))
    }

    var avPixelFormat: AVPixelFormat {
        av_get_pix_fmt(name)
    }
}

/// Wraps a frame the caller hands over (it is freed when the last view goes) as a pixel buffer
/// over its planes: no copy.
func pixelBuffer(adopting frame: UnsafeMutablePointer<AVFrame>) throws(CodecError) -> PixelBuffer {
    nonisolated(unsafe) let owned = frame
    let release: @Sendable () -> Void = {
        var pointer: UnsafeMutablePointer<AVFrame>? = owned
        av_frame_free(&pointer)
    }
    let avFormat = AVPixelFormat(frame.pointee.format)
    guard let format = PixelFormat(avFormat) else {
        let name = av_get_pix_fmt_name(avFormat).map { String(cString: $0) } ?? "\(frame.pointee.format)"
        release()
        throw CodecError(.unsupportedFormat, "the decoder produced \(name) pictures, which this library does not handle")
    }
    let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
    var planes: [(base: UnsafeMutableRawPointer, bytesPerRow: Int)] = []
    withUnsafePointer(to: frame.pointee.data) { data in
        withUnsafePointer(to: frame.pointee.linesize) { linesize in
            data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                linesize.withMemoryRebound(to: Int32.self, capacity: 8) { linesize in
                    for plane in 0..<format.planeCount {
                        planes.append((UnsafeMutableRawPointer(data[plane]!), Int(linesize[plane])))
                    }
                }
            }
        }
    }
    let colour = ColourDescription(
        primaries: Int(frame.pointee.color_primaries.rawValue), transfer: Int(frame.pointee.color_trc.rawValue),
        matrix: Int(frame.pointee.colorspace.rawValue), fullRange: frame.pointee.color_range == AVCOL_RANGE_JPEG)
    return PixelBuffer(format: format, width: width, height: height, borrowing: planes, colour: colour, release: release)
}
