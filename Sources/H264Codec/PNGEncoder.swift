import CCodecs
public import MediaCore

/// Encodes pictures as PNG files with libavcodec's PNG encoder (no image encoder of ours),
/// converting them to RGB first.
///
/// The corresponding C functions are `avcodec_send_frame` and `avcodec_receive_packet`.
public struct PNGEncoder: ~Copyable {
    private var converter: PixelConverter
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let codec: UnsafePointer<AVCodec>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var size: (width: Int, height: Int) = (0, 0)

    /// An encoder writing pictures of `size` (nil: each picture's own size).
    public init(size: (width: Int, height: Int)? = nil) throws(CodecError) {
        let converter = try PixelConverter(format: .rgb24, size: size)  // loads the libraries
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else { throw CodecError(.unavailable, "this libavcodec has no PNG encoder") }
        var frame = av_frame_alloc(), packet = av_packet_alloc()
        guard let allocatedFrame = frame, let allocatedPacket = packet else {
            av_frame_free(&frame)
            av_packet_free(&packet)
            throw CodecError(.unavailable, "cannot allocate a frame and packet")
        }
        self.converter = converter
        self.codec = codec
        self.frame = allocatedFrame
        self.packet = allocatedPacket
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// The PNG file of one picture.
    public mutating func encode(_ picture: PixelBuffer) throws(CodecError) -> [UInt8] {
        let rgb = try converter.convert(picture)
        if context == nil || size != (rgb.width, rgb.height) { try open(width: rgb.width, height: rgb.height) }
        frame.pointee.format = AV_PIX_FMT_RGB24.rawValue
        frame.pointee.width = Int32(rgb.width)
        frame.pointee.height = Int32(rgb.height)
        frame.pointee.data.0 = rgb.planes[0].base.assumingMemoryBound(to: UInt8.self)
        frame.pointee.linesize.0 = Int32(rgb.planes[0].bytesPerRow)
        defer { av_frame_unref(frame) }
        try withExtendedLifetime(rgb) { () throws(CodecError) in
            try check(avcodec_send_frame(context, frame), .encodeFailed, "the PNG encoder rejected the picture")
        }
        try check(avcodec_receive_packet(context, packet), .encodeFailed, "the PNG encoder gave no image")
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }

    private mutating func open(width: Int, height: Int) throws(CodecError) {
        avcodec_free_context(&context)
        guard let context = avcodec_alloc_context3(codec) else { throw CodecError(.unavailable, "cannot allocate a PNG encoder") }
        self.context = context
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_RGB24
        context.pointee.time_base = AVRational(num: 1, den: 25)
        try check(avcodec_open2(context, codec, nil), .invalidConfiguration, "cannot open the PNG encoder for \(width)x\(height)")
        size = (width, height)
    }
}
