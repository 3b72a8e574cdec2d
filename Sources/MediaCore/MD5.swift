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

    /// floor(abs(sin(i + 1)) × 2^32), RFC 1321 §3.4: read from memory, so that the optimizer adds
    /// each to its message word off the steps' critical path (as an immediate it is added last).
    nonisolated(unsafe) private static let constants: UnsafePointer<UInt32> = {
        let table: [UInt32] = [0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391]
        let pointer = UnsafeMutablePointer<UInt32>.allocate(capacity: 64)
        pointer.initialize(from: table, count: 64)
        return UnsafePointer(pointer)
    }()

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
        let k = MD5.constants
        a = b &+ rotate(a &+ (m0 &+ k[0]) &+ (d ^ (b & (c ^ d))), 7)
        d = a &+ rotate(d &+ (m1 &+ k[1]) &+ (c ^ (a & (b ^ c))), 12)
        c = d &+ rotate(c &+ (m2 &+ k[2]) &+ (b ^ (d & (a ^ b))), 17)
        b = c &+ rotate(b &+ (m3 &+ k[3]) &+ (a ^ (c & (d ^ a))), 22)
        a = b &+ rotate(a &+ (m4 &+ k[4]) &+ (d ^ (b & (c ^ d))), 7)
        d = a &+ rotate(d &+ (m5 &+ k[5]) &+ (c ^ (a & (b ^ c))), 12)
        c = d &+ rotate(c &+ (m6 &+ k[6]) &+ (b ^ (d & (a ^ b))), 17)
        b = c &+ rotate(b &+ (m7 &+ k[7]) &+ (a ^ (c & (d ^ a))), 22)
        a = b &+ rotate(a &+ (m8 &+ k[8]) &+ (d ^ (b & (c ^ d))), 7)
        d = a &+ rotate(d &+ (m9 &+ k[9]) &+ (c ^ (a & (b ^ c))), 12)
        c = d &+ rotate(c &+ (m10 &+ k[10]) &+ (b ^ (d & (a ^ b))), 17)
        b = c &+ rotate(b &+ (m11 &+ k[11]) &+ (a ^ (c & (d ^ a))), 22)
        a = b &+ rotate(a &+ (m12 &+ k[12]) &+ (d ^ (b & (c ^ d))), 7)
        d = a &+ rotate(d &+ (m13 &+ k[13]) &+ (c ^ (a & (b ^ c))), 12)
        c = d &+ rotate(c &+ (m14 &+ k[14]) &+ (b ^ (d & (a ^ b))), 17)
        b = c &+ rotate(b &+ (m15 &+ k[15]) &+ (a ^ (c & (d ^ a))), 22)
        a = b &+ rotate(a &+ (m1 &+ k[16]) &+ (c ^ (d & (b ^ c))), 5)
        d = a &+ rotate(d &+ (m6 &+ k[17]) &+ (b ^ (c & (a ^ b))), 9)
        c = d &+ rotate(c &+ (m11 &+ k[18]) &+ (a ^ (b & (d ^ a))), 14)
        b = c &+ rotate(b &+ (m0 &+ k[19]) &+ (d ^ (a & (c ^ d))), 20)
        a = b &+ rotate(a &+ (m5 &+ k[20]) &+ (c ^ (d & (b ^ c))), 5)
        d = a &+ rotate(d &+ (m10 &+ k[21]) &+ (b ^ (c & (a ^ b))), 9)
        c = d &+ rotate(c &+ (m15 &+ k[22]) &+ (a ^ (b & (d ^ a))), 14)
        b = c &+ rotate(b &+ (m4 &+ k[23]) &+ (d ^ (a & (c ^ d))), 20)
        a = b &+ rotate(a &+ (m9 &+ k[24]) &+ (c ^ (d & (b ^ c))), 5)
        d = a &+ rotate(d &+ (m14 &+ k[25]) &+ (b ^ (c & (a ^ b))), 9)
        c = d &+ rotate(c &+ (m3 &+ k[26]) &+ (a ^ (b & (d ^ a))), 14)
        b = c &+ rotate(b &+ (m8 &+ k[27]) &+ (d ^ (a & (c ^ d))), 20)
        a = b &+ rotate(a &+ (m13 &+ k[28]) &+ (c ^ (d & (b ^ c))), 5)
        d = a &+ rotate(d &+ (m2 &+ k[29]) &+ (b ^ (c & (a ^ b))), 9)
        c = d &+ rotate(c &+ (m7 &+ k[30]) &+ (a ^ (b & (d ^ a))), 14)
        b = c &+ rotate(b &+ (m12 &+ k[31]) &+ (d ^ (a & (c ^ d))), 20)
        a = b &+ rotate(a &+ (m5 &+ k[32]) &+ (b ^ c ^ d), 4)
        d = a &+ rotate(d &+ (m8 &+ k[33]) &+ (a ^ b ^ c), 11)
        c = d &+ rotate(c &+ (m11 &+ k[34]) &+ (d ^ a ^ b), 16)
        b = c &+ rotate(b &+ (m14 &+ k[35]) &+ (c ^ d ^ a), 23)
        a = b &+ rotate(a &+ (m1 &+ k[36]) &+ (b ^ c ^ d), 4)
        d = a &+ rotate(d &+ (m4 &+ k[37]) &+ (a ^ b ^ c), 11)
        c = d &+ rotate(c &+ (m7 &+ k[38]) &+ (d ^ a ^ b), 16)
        b = c &+ rotate(b &+ (m10 &+ k[39]) &+ (c ^ d ^ a), 23)
        a = b &+ rotate(a &+ (m13 &+ k[40]) &+ (b ^ c ^ d), 4)
        d = a &+ rotate(d &+ (m0 &+ k[41]) &+ (a ^ b ^ c), 11)
        c = d &+ rotate(c &+ (m3 &+ k[42]) &+ (d ^ a ^ b), 16)
        b = c &+ rotate(b &+ (m6 &+ k[43]) &+ (c ^ d ^ a), 23)
        a = b &+ rotate(a &+ (m9 &+ k[44]) &+ (b ^ c ^ d), 4)
        d = a &+ rotate(d &+ (m12 &+ k[45]) &+ (a ^ b ^ c), 11)
        c = d &+ rotate(c &+ (m15 &+ k[46]) &+ (d ^ a ^ b), 16)
        b = c &+ rotate(b &+ (m2 &+ k[47]) &+ (c ^ d ^ a), 23)
        a = b &+ rotate(a &+ (m0 &+ k[48]) &+ (c ^ (b | ~d)), 6)
        d = a &+ rotate(d &+ (m7 &+ k[49]) &+ (b ^ (a | ~c)), 10)
        c = d &+ rotate(c &+ (m14 &+ k[50]) &+ (a ^ (d | ~b)), 15)
        b = c &+ rotate(b &+ (m5 &+ k[51]) &+ (d ^ (c | ~a)), 21)
        a = b &+ rotate(a &+ (m12 &+ k[52]) &+ (c ^ (b | ~d)), 6)
        d = a &+ rotate(d &+ (m3 &+ k[53]) &+ (b ^ (a | ~c)), 10)
        c = d &+ rotate(c &+ (m10 &+ k[54]) &+ (a ^ (d | ~b)), 15)
        b = c &+ rotate(b &+ (m1 &+ k[55]) &+ (d ^ (c | ~a)), 21)
        a = b &+ rotate(a &+ (m8 &+ k[56]) &+ (c ^ (b | ~d)), 6)
        d = a &+ rotate(d &+ (m15 &+ k[57]) &+ (b ^ (a | ~c)), 10)
        c = d &+ rotate(c &+ (m6 &+ k[58]) &+ (a ^ (d | ~b)), 15)
        b = c &+ rotate(b &+ (m13 &+ k[59]) &+ (d ^ (c | ~a)), 21)
        a = b &+ rotate(a &+ (m4 &+ k[60]) &+ (c ^ (b | ~d)), 6)
        d = a &+ rotate(d &+ (m11 &+ k[61]) &+ (b ^ (a | ~c)), 10)
        c = d &+ rotate(c &+ (m2 &+ k[62]) &+ (a ^ (d | ~b)), 15)
        b = c &+ rotate(b &+ (m9 &+ k[63]) &+ (d ^ (c | ~a)), 21)
        self.a &+= a
        self.b &+= b
        self.c &+= c
        self.d &+= d
    }
}
