import CCodecs

/// An MD5 digest through libavutil, for `framemd5` output that compares with FFmpeg's.
///
/// The corresponding C functions are `av_md5_init`, `av_md5_update` and `av_md5_final`.
public struct MD5: ~Copyable {
    private let context: OpaquePointer

    /// A fresh MD5 context; throws when libavutil cannot be loaded.
    public init() throws(CodecError) {
        try loadFFmpeg()
        guard let context = av_md5_alloc() else { throw CodecError(.unavailable, "cannot allocate an MD5 context") }
        self.context = context
        av_md5_init(context)
    }

    deinit {
        av_free(UnsafeMutableRawPointer(context))
    }

    /// Adds `bytes` to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        av_md5_update(context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// The digest as 32 lowercase hex digits; the context starts afresh.
    public mutating func finalize() -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        av_md5_final(context, &digest)
        av_md5_init(context)
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest { text.append(digits[Int(byte >> 4)]); text.append(digits[Int(byte & 15)]) }
        return String(decoding: text, as: UTF8.self)
    }
}
