import CCodecs
import H264Bitstream
public import MediaCore

/// An x264 encoder (`x264_t`): pictures in presentation order, encoded frames out in decoding
/// order, each with its presentation and decoding timestamps in the encoder's timebase (one
/// tick per frame, as the x264 CLI uses for y4m input).
///
/// Settings go through `x264_param_parse`, the function the x264 CLI uses for its options, so
/// the same settings give the same stream as the CLI. The corresponding C functions are
/// `x264_param_default_preset`, `x264_param_parse`, `x264_param_apply_profile`,
/// `x264_encoder_open`, `x264_encoder_encode` and `x264_encoder_close`.
public struct H264Encoder: ~Copyable {
    /// The settings the encoder was made with, validated.
    public let settings: EncoderSettings
    /// The SPS and PPS (and x264's SEI) from `x264_encoder_headers`, without start codes.
    public let headers: [[UInt8]]
    /// The format of the encoded samples: the SPS and PPS, 4-byte NAL lengths.
    public let formatDescription: VideoFormatDescription
    private let handle: OpaquePointer
    private let csp: Int32

    /// One encoded picture: its NAL units (4-byte length prefixes, or start codes when the
    /// settings ask for Annex-B), in decoding order.
    public struct EncodedFrame: Sendable {
        /// The kind of picture x264 coded: IDR, I, P, non-reference B or reference B.
        public enum PictureType: Sendable, Hashable { case idr, i, p, b, referenceB }
        /// The frame's NAL units, framed as the settings say.
        public var data: [UInt8]
        /// Timestamps in ticks of ``EncoderSettings/frameRate``'s frame duration.
        public var presentationTimestamp: Int64
        /// The decoding timestamp, in the same ticks; below the presentation timestamp when frames are reordered.
        public var decodeTimestamp: Int64
        /// Whether the frame is a keyframe (an IDR, or an I frame with open GOP).
        public var isKeyframe: Bool
        /// How x264 coded the picture.
        public var pictureType: PictureType
        /// x264's quantiser for the frame,.
        public var quantizer: Int
    }

    /// An encoder with validated `settings`; throws when x264 is missing or refuses them.
    public init(settings: EncoderSettings) throws(CodecError) {
        try settings.validate()
        try loadX264()
        var param = x264_param_t()
        guard x264_param_default_preset(&param, settings.preset, settings.tuneString) == 0 else {
            throw CodecError(.invalidConfiguration, "x264 does not know preset \(settings.preset)\(settings.tune.map { " with tune \($0)" } ?? "")")
        }
        param.i_log_level = X264_LOG_ERROR
        param.i_width = Int32(settings.width)
        param.i_height = Int32(settings.height)
        guard let (csp, depth) = Self.colourSpace(settings.pixelFormat) else {
            throw CodecError(.unsupportedFormat, "x264 takes yuv420p, nv12, yuv422p, yuv444p and their 10-bit forms, not \(settings.pixelFormat)")
        }
        param.i_csp = csp
        param.i_bitdepth = Int32(depth)
        param.i_fps_num = UInt32(settings.frameRate.numerator)
        param.i_fps_den = UInt32(settings.frameRate.denominator)
        param.i_timebase_num = UInt32(settings.frameRate.denominator)
        param.i_timebase_den = UInt32(settings.frameRate.numerator)
        param.b_vfr_input = 0
        param.b_annexb = settings.annexB ? 1 : 0
        param.b_repeat_headers = settings.repeatParameterSets ? 1 : 0
        param.b_aud = settings.accessUnitDelimiters ? 1 : 0
        if let sar = settings.sampleAspectRatio {
            param.vui.i_sar_width = Int32(sar.width)
            param.vui.i_sar_height = Int32(sar.height)
        }
        if let colour = settings.colour {
            param.vui.i_colorprim = Int32(colour.primaries)
            param.vui.i_transfer = Int32(colour.transfer)
            param.vui.i_colmatrix = Int32(colour.matrix)
            param.vui.b_fullrange = colour.fullRange ? 1 : 0
        }
        defer { x264_param_cleanup(&param) }
        for (name, value) in settings.x264Options {
            let result = x264_param_parse(&param, name, value)
            guard result == 0 else {
                throw CodecError(.invalidConfiguration, result == -1 ? "x264 has no option \(name)" : "x264 option \(name): bad value \(value)")
            }
        }
        if case .first = settings.pass { x264_param_apply_fastfirstpass(&param) }
        if let profile = settings.profile {
            guard x264_param_apply_profile(&param, profile) == 0 else {
                throw CodecError(.invalidConfiguration, "x264 cannot apply profile \(profile) to these settings")
            }
        }
        guard let handle = cx264_encoder_open(&param) else {
            throw CodecError(.invalidConfiguration, "x264 refused the settings (x264_encoder_open failed)")
        }
        // Parameter sets and x264's SEI, for the format description.
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        guard x264_encoder_headers(handle, &nals, &count) >= 0, let nals else {
            x264_encoder_close(handle)
            throw CodecError(.encodeFailed, "x264_encoder_headers failed")
        }
        var units: [[UInt8]] = []
        for i in 0..<Int(count) {
            let nal = nals[i]
            // Both framings put a 4-byte prefix (start code or length) before each NAL unit.
            units.append(Array(UnsafeRawBufferPointer(start: nal.p_payload + 4, count: Int(nal.i_payload) - 4)))
        }
        let sps = units.filter { $0.first.map { $0 & 0x1F == 7 } ?? false }
        let pps = units.filter { $0.first.map { $0 & 0x1F == 8 } ?? false }
        do {
            formatDescription = try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps)
        } catch {
            x264_encoder_close(handle)
            throw CodecError(.encodeFailed, "x264's parameter sets do not parse", cause: error)
        }
        self.headers = units
        self.handle = handle
        self.csp = csp
        self.settings = settings
    }

    deinit {
        x264_encoder_close(handle)
    }

    /// Whether x264 takes pictures in `format` as they are (others need converting).
    public static func takes(_ format: PixelFormat) -> Bool { colourSpace(format) != nil }

    /// The format to encode pictures of `format` in: `format` itself when x264 takes it,
    /// else 4:2:0 at 10 bits for deeper pictures and at 8 bits for the rest (gray, RGB, NV21…),
    /// which the pictures are converted to.
    public static func encodingFormat(for format: PixelFormat) -> PixelFormat {
        takes(format) ? format : (format.bitDepth > 8 ? .yuv(.yuv420, bitDepth: 10) : .yuv420p)
    }

    static func colourSpace(_ format: PixelFormat) -> (Int32, Int)? {
        let high = format.bitDepth > 8 ? X264_CSP_HIGH_DEPTH : 0
        guard format.bitDepth == 8 || format.bitDepth == 10 else { return nil }
        switch format.layout {
        case .planar(.yuv420): return (X264_CSP_I420 | high, format.bitDepth)
        case .planar(.yuv422): return (X264_CSP_I422 | high, format.bitDepth)
        case .planar(.yuv444): return (X264_CSP_I444 | high, format.bitDepth)
        case .semiPlanar420 where format.bitDepth == 8: return (X264_CSP_NV12, 8)
        default: return nil
        }
    }

    /// Pictures x264 holds for lookahead and reordering.
    public var delayedFrames: Int { Int(x264_encoder_delayed_frames(handle)) }

    /// Encodes one picture (in presentation order) at `timestamp`, forced to be an IDR when
    /// asked; returns the frame x264 lets out, if any (it holds some for lookahead).
    public mutating func encode(_ picture: borrowing PixelBuffer, timestamp: Int64, forceKeyframe: Bool = false) throws(CodecError) -> EncodedFrame? {
        guard picture.width == settings.width, picture.height == settings.height, picture.format == settings.pixelFormat else {
            throw CodecError(.encodeFailed, "the encoder takes \(settings.width)x\(settings.height) \(settings.pixelFormat); this picture is \(picture.width)x\(picture.height) \(picture.format)")
        }
        var input = x264_picture_t()
        x264_picture_init(&input)
        input.i_pts = timestamp
        input.i_type = forceKeyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        input.img.i_csp = csp
        input.img.i_plane = Int32(picture.planes.count)
        withUnsafeMutableBytes(of: &input.img.plane) { pointers in
            let typed = pointers.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            for (index, plane) in picture.planes.enumerated() { typed[index] = plane.base.assumingMemoryBound(to: UInt8.self) }
        }
        withUnsafeMutableBytes(of: &input.img.i_stride) { strides in
            let typed = strides.bindMemory(to: Int32.self)
            for (index, plane) in picture.planes.enumerated() { typed[index] = Int32(plane.bytesPerRow) }
        }
        return try encode(&input)
    }

    /// Takes out one delayed frame; nil when none is left. Call until nil at the end.
    public mutating func flush() throws(CodecError) -> EncodedFrame? {
        // A flush call may give nothing while frames are still in flight (frame threads).
        while delayedFrames > 0 {
            if let frame = try encode(nil) { return frame }
        }
        return nil
    }

    private mutating func encode(_ input: UnsafeMutablePointer<x264_picture_t>?) throws(CodecError) -> EncodedFrame? {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(handle, &nals, &count, input, &output)
        guard size >= 0 else { throw CodecError(.encodeFailed, "x264_encoder_encode failed (\(size))") }
        guard size > 0, let nals else { return nil }
        // x264 writes a frame's NAL units back to back: one copy of the whole payload.
        let data = Array(UnsafeRawBufferPointer(start: nals[0].p_payload, count: Int(size)))
        let type: EncodedFrame.PictureType = switch output.i_type {
        case X264_TYPE_IDR: .idr
        case X264_TYPE_I: .i
        case X264_TYPE_P: .p
        case X264_TYPE_BREF: .referenceB
        default: .b
        }
        return EncodedFrame(data: data, presentationTimestamp: output.i_pts, decodeTimestamp: output.i_dts,
                            isKeyframe: output.b_keyframe != 0, pictureType: type, quantizer: Int(output.i_qpplus1) - 1)
    }

    /// Changes what x264 can change while encoding: the rate (bit rate, CRF, VBV). The
    /// corresponding C function is `x264_encoder_reconfig`.
    public mutating func reconfigure(_ options: [(String, String)]) throws(CodecError) {
        var param = x264_param_t()
        x264_encoder_parameters(handle, &param)
        defer { x264_param_cleanup(&param) }
        for (name, value) in options {
            guard EncoderSettings.liveOptions.contains(name) else { throw CodecError(.invalidConfiguration, "\(name) cannot change while encoding") }
            guard x264_param_parse(&param, name, value) == 0 else { throw CodecError(.invalidConfiguration, "x264 option \(name): bad value \(value)") }
        }
        guard x264_encoder_reconfig(handle, &param) >= 0 else { throw CodecError(.invalidConfiguration, "x264 refused the new settings") }
    }
}


// One owner at a time (it is ~Copyable), and x264 is not tied to the thread that opened it:
// an encoder can move to the queue that uses it.
extension H264Encoder: @unchecked Sendable {}
