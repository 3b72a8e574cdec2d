/// How large a picture an input may declare before anything is allocated for it, so a damaged
/// or hostile header (an SPS, a Y4M header) cannot make a reader or decoder allocate more than
/// real pictures need. FFmpeg's `max_pixels` option plays this part there.
///
/// The default is the largest frame any H.264 level allows: MaxFS of level 6.2 (ITU-T H.264
/// Table A-1), 139,264 macroblocks or 35,651,584 pixels (8192×4352). A caller who means to
/// handle larger pictures (raw video for another codec, say) raises it.
public struct PictureLimits: Sendable, Hashable {
    /// The most pixels (width × height, luma samples) a picture may have.
    public var maximumPixels: Int

    /// MaxFS of H.264 level 6.2 in pixels: the largest frame a conforming stream carries.
    public static let h264MaximumPixels = 139_264 * 256

    /// Limits allowing pictures of up to `maximumPixels` pixels.
    public init(maximumPixels: Int = PictureLimits.h264MaximumPixels) {
        self.maximumPixels = maximumPixels
    }

    /// Whether a `width`×`height` picture is within the limits (sizes not above 0 are not).
    public func allows(width: Int, height: Int) -> Bool {
        guard width > 0, height > 0 else { return false }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        return !overflow && pixels <= maximumPixels
    }

    /// Why a `width`×`height` picture is refused, naming `source` (what declared the size):
    /// "SPS 0 declares 32768x4080 (133693440 pixels), over the limit of 35651584 pixels".
    public func refusal(width: Int, height: Int, declaredBy source: String) -> String {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        return "\(source) declares \(width)x\(height) (\(overflow ? "more than \(Int.max)" : "\(pixels)") pixels), over the limit of \(maximumPixels) pixels"
    }
}
