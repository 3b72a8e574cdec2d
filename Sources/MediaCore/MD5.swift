/// MD5 (RFC 1321): the one digest of the library, for FFmpeg's `framemd5` lines (a hash per
/// decoded picture, compared with `ffmpeg -f framemd5`) and for RTSP Digest authentication
/// (RFC 2617). Pure Swift, the 64 steps unrolled: measured here as fast as libavutil's (the
/// `framemd5` of a decode used to go through `av_md5`).
///
/// Not for security: MD5 has been broken for collision resistance for decades; the formats
/// that ask for it are why it is here.
public struct MD5: Sendable {
    private var a: UInt32 = 0x6745_2301
    private var b: UInt32 = 0xefcd_ab89
    private var c: UInt32 = 0x98ba_dcfe
    private var d: UInt32 = 0x1032_5476
    /// Bytes of an incomplete block, waiting for more.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var length: UInt64 = 0

    /// A digest of nothing yet.
    public init() {}

    /// Adds `bytes` to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress, !bytes.isEmpty else { return }
        var count = bytes.count
        length &+= UInt64(count)
        if pendingCount > 0 {
            let take = min(64 - pendingCount, count)
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.advanced(by: pendingCount).copyMemory(from: base, byteCount: take) }
            pendingCount += take
            base += take
            count -= take
            guard pendingCount == 64 else { return }
            let block = pending
            withUnsafeBytes(of: block) { compress($0.baseAddress!) }
            pendingCount = 0
        }
        while count >= 64 {
            compress(base)
            base += 64
            count -= 64
        }
        if count > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
            pendingCount = count
        }
    }

    /// Adds the bytes of `bytes` to the digest.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The 16-byte digest of everything given; the digest then starts afresh.
    public mutating func finalizeBytes() -> [UInt8] {
        let bits = length &* 8
        var padding: [UInt8] = [0x80]
        padding += [UInt8](repeating: 0, count: (pendingCount < 56 ? 55 - pendingCount : 119 - pendingCount))
        for shift in stride(from: 0, to: 64, by: 8) { padding.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        padding.withUnsafeBytes { update($0) }
        var digest: [UInt8] = []
        digest.reserveCapacity(16)
        for word in [a, b, c, d] {
            for shift in stride(from: 0, to: 32, by: 8) { digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        self = MD5()
        return digest
    }

    /// The digest as 32 lowercase hexadecimal digits (as `framemd5` and RFC 2617 write it); the
    /// digest then starts afresh.
    public mutating func finalize() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for byte in finalizeBytes() {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The digest of `text`'s UTF-8 bytes as 32 lowercase hexadecimal digits.
    public static func hex(_ text: String) -> String {
        var digest = MD5()
        digest.update(text.utf8)
        return digest.finalize()
    }

    @inline(__always)
    private static func rotate(_ value: UInt32, _ shift: UInt32) -> UInt32 { value << shift | value >> (32 - shift) }

    /// One 64-byte block (RFC 1321 §3.4), its sixteen words read little-endian.
    @inline(__always)
    private mutating func compress(_ block: UnsafeRawPointer) {
        @inline(__always) func word(_ index: Int) -> UInt32 { UInt32(littleEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self)) }
        @inline(__always) func rotate(_ value: UInt32, _ shift: UInt32) -> UInt32 { Self.rotate(value, shift) }
        let m0 = word(0), m1 = word(1), m2 = word(2), m3 = word(3), m4 = word(4), m5 = word(5), m6 = word(6), m7 = word(7)
        let m8 = word(8), m9 = word(9), m10 = word(10), m11 = word(11), m12 = word(12), m13 = word(13), m14 = word(14), m15 = word(15)
        var a = self.a, b = self.b, c = self.c, d = self.d
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0xd76aa478 &+ m0, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0xe8c7b756 &+ m1, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0x242070db &+ m2, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0xc1bdceee &+ m3, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0xf57c0faf &+ m4, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0x4787c62a &+ m5, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xa8304613 &+ m6, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0xfd469501 &+ m7, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0x698098d8 &+ m8, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0x8b44f7af &+ m9, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xffff5bb1 &+ m10, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0x895cd7be &+ m11, 22)
        a = b &+ rotate(a &+ ((b & c) | (~b & d)) &+ 0x6b901122 &+ m12, 7)
        d = a &+ rotate(d &+ ((a & b) | (~a & c)) &+ 0xfd987193 &+ m13, 12)
        c = d &+ rotate(c &+ ((d & a) | (~d & b)) &+ 0xa679438e &+ m14, 17)
        b = c &+ rotate(b &+ ((c & d) | (~c & a)) &+ 0x49b40821 &+ m15, 22)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xf61e2562 &+ m1, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xc040b340 &+ m6, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0x265e5a51 &+ m11, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0xe9b6c7aa &+ m0, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xd62f105d &+ m5, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0x02441453 &+ m10, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0xd8a1e681 &+ m15, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0xe7d3fbc8 &+ m4, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0x21e1cde6 &+ m9, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xc33707d6 &+ m14, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0xf4d50d87 &+ m3, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0x455a14ed &+ m8, 20)
        a = b &+ rotate(a &+ ((d & b) | (~d & c)) &+ 0xa9e3e905 &+ m13, 5)
        d = a &+ rotate(d &+ ((c & a) | (~c & b)) &+ 0xfcefa3f8 &+ m2, 9)
        c = d &+ rotate(c &+ ((b & d) | (~b & a)) &+ 0x676f02d9 &+ m7, 14)
        b = c &+ rotate(b &+ ((a & c) | (~a & d)) &+ 0x8d2a4c8a &+ m12, 20)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xfffa3942 &+ m5, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0x8771f681 &+ m8, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0x6d9d6122 &+ m11, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xfde5380c &+ m14, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xa4beea44 &+ m1, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0x4bdecfa9 &+ m4, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0xf6bb4b60 &+ m7, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xbebfbc70 &+ m10, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0x289b7ec6 &+ m13, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0xeaa127fa &+ m0, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0xd4ef3085 &+ m3, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0x04881d05 &+ m6, 23)
        a = b &+ rotate(a &+ (b ^ c ^ d) &+ 0xd9d4d039 &+ m9, 4)
        d = a &+ rotate(d &+ (a ^ b ^ c) &+ 0xe6db99e5 &+ m12, 11)
        c = d &+ rotate(c &+ (d ^ a ^ b) &+ 0x1fa27cf8 &+ m15, 16)
        b = c &+ rotate(b &+ (c ^ d ^ a) &+ 0xc4ac5665 &+ m2, 23)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0xf4292244 &+ m0, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0x432aff97 &+ m7, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xab9423a7 &+ m14, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0xfc93a039 &+ m5, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0x655b59c3 &+ m12, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0x8f0ccc92 &+ m3, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xffeff47d &+ m10, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0x85845dd1 &+ m1, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0x6fa87e4f &+ m8, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0xfe2ce6e0 &+ m15, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0xa3014314 &+ m6, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0x4e0811a1 &+ m13, 21)
        a = b &+ rotate(a &+ (c ^ (b | ~d)) &+ 0xf7537e82 &+ m4, 6)
        d = a &+ rotate(d &+ (b ^ (a | ~c)) &+ 0xbd3af235 &+ m11, 10)
        c = d &+ rotate(c &+ (a ^ (d | ~b)) &+ 0x2ad7d2bb &+ m2, 15)
        b = c &+ rotate(b &+ (d ^ (c | ~a)) &+ 0xeb86d391 &+ m9, 21)
        self.a &+= a
        self.b &+= b
        self.c &+= c
        self.d &+= d
    }
}
