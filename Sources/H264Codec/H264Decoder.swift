import CCodecs
import H264Bitstream
public import MediaCore

/// An H.264 decoder: libavcodec's `h264` decoder, owned by one value.
///
/// Feed it samples in decoding order with ``send(_:timestamp:duration:)`` and take pictures,
/// in presentation order, with ``receive()``; at the end, ``sendEndOfStream()`` and receive
/// until nil to get the pictures held back for reordering. Length-prefixed samples need the
/// format description the decoder was made with (its `avcC` goes to the decoder as extradata);
/// without one, samples are Annex-B. Pictures reference the decoder's buffers (reference
/// counted), so keeping one does not hold the decoder back or need a copy.
///
/// The corresponding C functions are `avcodec_send_packet` and `avcodec_receive_frame`.
public struct H264Decoder: ~Copyable {
    /// How libavcodec spreads the work over threads.
    public struct Threading: Sendable, Hashable {
        /// Threads to use; 0 lets libavcodec choose (one per core).
        public var count: Int
        /// Decode several frames at once (adds one frame of latency per thread).
        public var frames: Bool
        /// Decode the slices of one frame at once (only helps streams with several slices).
        public var slices: Bool

        /// Threading with `count` threads (0: one per core), frame and slice threading on by default.
        public init(count: Int = 0, frames: Bool = true, slices: Bool = true) {
            self.count = count
            self.frames = frames
            self.slices = slices
        }

        /// One thread: what `ffmpeg -threads 1` does.
        public static let single = Threading(count: 1)

        /// The largest picture (4096×2304) decoded with frame threads when the thread count is
        /// automatic. Each frame thread holds pictures of its own in flight: for an 8K picture
        /// (53 MB each) that is hundreds of megabytes on top of the 16-frame DPB, and on hostile
        /// streams declaring such pictures it made decode peak at 1.46× the memory of
        /// `ffmpeg -threads 1`. Larger pictures decode with slice threads only, unless a thread
        /// count is given.
        public static let largestFrameThreadedPicture = 4096 * 2304
    }

    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    /// The NAL length size of the samples (0 for Annex-B).
    public let nalUnitLengthSize: Int
    /// This decoder's messages in ``DecoderLog``.
    private let logToken: UInt

    /// - Parameters:
    ///   - formatDescription: the stream's parameter sets and NAL length size (nil: Annex-B
    ///     with parameter sets in band).
    ///   - threading: libavcodec's frame and slice threads.
    ///   - reorderDepth: how many pictures may come before one shown earlier; by default the
    ///     SPS's (`max_num_reorder_frames`, else the level's DPB size). libavcodec otherwise
    ///     starts with none and drops the pictures it meets out of order before it learns better
    ///     (the `ffmpeg` tool avoids that by probing the stream first).
    ///   - limits: libavcodec refuses pictures larger than these allow (its `max_pixels`),
    ///     whatever SPS a sample carries.
    public init(formatDescription: VideoFormatDescription?, threading: Threading = Threading(), reorderDepth: Int? = nil,
                limits: PictureLimits = PictureLimits()) throws(CodecError) {
        try loadFFmpeg()
        DecoderLog.installed
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_H264) else {
            throw CodecError(.unavailable, "this libavcodec has no H.264 decoder")
        }
        var owned = avcodec_alloc_context3(codec)
        var ownedPacket = av_packet_alloc()
        var ownedFrame = av_frame_alloc()
        func cleanUp() {
            avcodec_free_context(&owned)
            av_packet_free(&ownedPacket)
            av_frame_free(&ownedFrame)
        }
        guard let context = owned, let packet = ownedPacket, let frame = ownedFrame else {
            cleanUp()
            throw CodecError(.unavailable, "cannot allocate a decoder context, packet and frame")
        }
        if let formatDescription {
            let record = formatDescription.avcC
            guard let extradata = av_mallocz(record.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                cleanUp()
                throw CodecError(.unavailable, "cannot allocate extradata")
            }
            record.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            context.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
            context.pointee.extradata_size = Int32(record.count)
        }
        let logToken = DecoderLog.makeToken()
        context.pointee.opaque = UnsafeMutableRawPointer(bitPattern: logToken)  // copied into its frame threads' contexts
        context.pointee.has_b_frames = Int32(clamping: reorderDepth ?? formatDescription?.sps.reorderDepth ?? 0)
        if let size = formatDescription?.containerSize {
            // The container's size, as ffmpeg passes a demuxer's: libavcodec crops the pictures
            // to it where it is smaller than the SPS's and the SPS crops no top or left.
            context.pointee.width = Int32(clamping: size.width)
            context.pointee.height = Int32(clamping: size.height)
        }
        context.pointee.max_pixels = Int64(limits.maximumPixels)
        context.pointee.thread_count = Int32(clamping: threading.count)
        let large = formatDescription.map { $0.sps.codedWidth * $0.sps.codedHeight > Threading.largestFrameThreadedPicture } ?? false
        let frames = threading.frames && !(threading.count == 0 && large)
        context.pointee.thread_type = (frames ? FF_THREAD_FRAME : 0) | (threading.slices ? FF_THREAD_SLICE : 0)
        do {
            try check(avcodec_open2(context, codec, nil), .invalidConfiguration, "cannot open the H.264 decoder")
        } catch {
            cleanUp()
            _ = DecoderLog.take(logToken)  // what the failed open logged is nobody's to take
            throw error
        }
        self.context = context
        self.logToken = logToken
        self.packet = packet
        self.frame = frame
        nalUnitLengthSize = formatDescription?.nalUnitLengthSize ?? 0
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&frame)
        _ = DecoderLog.take(logToken)
    }

    /// Sends one sample (an access unit: length-prefixed, or Annex-B for a decoder made
    /// without a format description). `timestamp` comes back with the picture.
    ///
    /// Returns false, having taken nothing, when the decoder holds pictures that must be
    /// received first; then call ``receive()`` until nil and send again.
    public mutating func send(_ data: BlockBuffer, timestamp: Int64?, duration: Int64 = 0) throws(CodecError) -> Bool {
        // libavcodec sizes packets with an int, padding included.
        guard data.count <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
            throw CodecError(.decodeFailed, "a \(data.count)-byte sample is larger than libavcodec takes")
        }
        try check(av_new_packet(packet, Int32(data.count)), .decodeFailed, "cannot allocate a \(data.count)-byte packet")
        var offset = 0
        let destination = packet.pointee.data!
        data.forEachSegment { piece in
            (destination + offset).update(from: piece.bindMemory(to: UInt8.self).baseAddress!, count: piece.count)
            offset += piece.count
        }
        packet.pointee.pts = timestamp ?? Int64.min  // AV_NOPTS_VALUE
        packet.pointee.dts = Int64.min
        packet.pointee.duration = duration
        let result = avcodec_send_packet(context, packet)
        av_packet_unref(packet)
        if result == AVError.tryAgain.rawValue { return false }
        try check(result, .decodeFailed, "the decoder rejected the sample")
        return true
    }

    /// Tells the decoder no more samples come: receiving then yields every picture it still holds.
    public mutating func sendEndOfStream() throws(CodecError) {
        let result = avcodec_send_packet(context, nil)
        if result == AVError.endOfFile.rawValue { return }
        try check(result, .decodeFailed, "cannot drain the decoder")
    }

    /// The next picture, or nil when the decoder needs more input (or, after
    /// ``sendEndOfStream()``, has given everything).
    public mutating func receive() throws(CodecError) -> DecodedPicture? {
        let result = avcodec_receive_frame(context, frame)
        if result == AVError.tryAgain.rawValue || result == AVError.endOfFile.rawValue { return nil }
        try check(result, .decodeFailed, "decoding failed")
        guard let picture = av_frame_alloc() else { throw CodecError(.decodeFailed, "cannot allocate a frame") }
        av_frame_move_ref(picture, frame)
        let timestamp = picture.pointee.best_effort_timestamp
        let duration = picture.pointee.pkt_duration
        let isKeyFrame = picture.pointee.key_frame != 0
        let errorFlags = DecodeErrorFlags(rawValue: picture.pointee.decode_error_flags)
        let isCorrupt = picture.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0
        let isInterlaced = picture.pointee.interlaced_frame != 0, topFieldFirst = picture.pointee.top_field_first != 0
        return DecodedPicture(
            pixelBuffer: try pixelBuffer(adopting: picture), timestamp: timestamp == Int64.min ? nil : timestamp,
            duration: duration, isKeyFrame: isKeyFrame, errorFlags: errorFlags, isCorrupt: isCorrupt,
            isInterlaced: isInterlaced, topFieldFirst: topFieldFirst)
    }

    /// The error messages libavcodec logged since the last call (damage it met and concealed:
    /// "error while decoding MB", "reference picture missing"): this decoder's only, however
    /// many decode at once in the process.
    public mutating func takeMessages() -> [String] {
        DecoderLog.take(logToken)
    }

    /// Drops everything held and starts afresh (after ``sendEndOfStream()``, or for a seek):
    /// the next sample should be a sync sample. The corresponding C function is `avcodec_flush_buffers`.
    public mutating func reset() {
        avcodec_flush_buffers(context)
    }
}
