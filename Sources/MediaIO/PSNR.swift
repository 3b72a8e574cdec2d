public import MediaCore

/// A picture's size and pixel format (what PSNR compares across frames).
private struct PictureGeometry: Sendable, Hashable {
    var width: Int
    var height: Int
    var format: PixelFormat
    init(_ picture: PixelBuffer) {
        width = picture.width
        height = picture.height
        format = picture.format
    }
}

/// Sums of squared differences per plane over frames, for PSNR as ffmpeg's `psnr` filter
/// reports it: 10·log10(max² / MSE), the MSE taken over every sample of the planes counted
/// ("average" is all planes together, not the mean of the planes' PSNRs).
public struct PSNRMeter: Sendable {
    private(set) var sums: [Double] = []
    private(set) var counts: [Int] = []
    private(set) var maximum = 255.0
    private var first: PictureGeometry?
    /// Frames compared so far.
    public private(set) var frameCount = 0

    /// A meter with no frames compared.
    public init() {}

    /// Adds one pair of pictures; they must have the same format and size.
    public mutating func add(_ a: PixelBuffer, _ b: PixelBuffer) throws(MediaIOError) {
        guard a.format == b.format, a.width == b.width, a.height == b.height else {
            throw MediaIOError(.invalidArgument, "PSNR of a \(a.width)x\(a.height) \(a.format) picture against a \(b.width)x\(b.height) \(b.format) one")
        }
        if let first, first != PictureGeometry(a) {
            throw MediaIOError(.invalidArgument, "PSNR over pictures of one kind: \(first.width)x\(first.height) \(first.format) first, then \(a.width)x\(a.height) \(a.format)")
        }
        if sums.isEmpty {
            first = PictureGeometry(a)
            sums = Array(repeating: 0, count: a.planes.count)
            counts = Array(repeating: 0, count: a.planes.count)
            maximum = Double((1 << a.format.bitDepth) - 1)
        }
        let wide = a.format.bytesPerSample == 2
        for plane in a.planes.indices {
            let p = a.planes[plane], q = b.planes[plane]
            var sum: UInt64 = 0
            for row in 0..<p.height {
                let x = p.base + row * p.bytesPerRow, y = q.base + row * q.bytesPerRow
                var rowSum: UInt64 = 0
                if wide {
                    let u = x.assumingMemoryBound(to: UInt16.self), v = y.assumingMemoryBound(to: UInt16.self)
                    for i in 0..<(p.rowBytes / 2) { let d = Int64(u[i]) - Int64(v[i]); rowSum &+= UInt64(d * d) }
                } else {
                    let u = x.assumingMemoryBound(to: UInt8.self), v = y.assumingMemoryBound(to: UInt8.self)
                    var partial: UInt32 = 0  // 255² × a row of up to 16384 samples fits
                    for i in 0..<p.rowBytes { let d = Int32(u[i]) &- Int32(v[i]); partial &+= UInt32(d &* d) }
                    rowSum = UInt64(partial)
                }
                sum &+= rowSum
            }
            sums[plane] += Double(sum)
            counts[plane] += p.rowBytes / (wide ? 2 : 1) * p.height
        }
        withExtendedLifetime((a, b)) {}
        frameCount += 1
    }

    /// PSNR in dB over the given planes (all when nil): infinite when the pictures are
    /// identical, NaN before any frame.
    public func psnr(planes: Range<Int>? = nil) -> Double {
        let range = planes ?? sums.indices
        let total = range.reduce(0.0) { $0 + sums[$1] }, count = range.reduce(0) { $0 + counts[$1] }
        guard count > 0 else { return .nan }
        guard total > 0 else { return .infinity }
        return 10 * decimalLogarithm(maximum * maximum / (total / Double(count)))
    }

    /// ffmpeg's "average": every plane together.
    public var average: Double { psnr() }
    /// Luma alone.
    public var luma: Double { psnr(planes: 0..<1) }
}

/// log₁₀ `x` for a finite `x` > 0 in Swift alone (no C math library): `x` = m·2ᵉ with m in
/// [1, 2), so log₁₀ x = (e·ln 2 + ln m) / ln 10, and ln m = 2·atanh((m − 1)/(m + 1)) by its
/// series, whose argument stays below 1/3 (some twenty terms reach double precision).
func decimalLogarithm(_ x: Double) -> Double {
    guard x > 0 else { return x == 0 ? -.infinity : .nan }
    guard x.isFinite else { return x }
    let t = (x.significand - 1) / (x.significand + 1), t2 = t * t
    var sum = 0.0, power = t, denominator = 1.0
    while true {
        let term = power / denominator
        if abs(term) <= 1e-17 * abs(sum) || term == 0 { break }
        sum += term
        power *= t2
        denominator += 2
    }
    let ln2 = 0.693_147_180_559_945_309_417_232_121_458_176_568, ln10 = 2.302_585_092_994_045_684_017_991_454_684_364_208
    return (Double(x.exponent) * ln2 + 2 * sum) / ln10
}
