/// A media timeline mapped onto the wall clock, recovered from when its samples came or went:
/// the dates of a live stream's segments (`EXT-X-PROGRAM-DATE-TIME`), and the RTP clock a
/// sender report pairs with the wall clock (RFC 3550 §6.4.1) when nothing paces the samples.
///
/// A sample's arrival (or sending) is its media time plus a delay that varies: a pacer or a
/// network late by a few hundred milliseconds under load, then catching up. Dating each sample
/// by its own arrival moves the date by that delay (the parts of a segment whose first sample
/// came late would seem to end after they were served; a sender report read at a late moment
/// would shift the receiver's lip sync). This mapping keeps the smallest offset between arrival
/// and media time over the last ``window`` seconds (the least-delayed recent sample), so dates
/// advance with the media and lie at or before every recent arrival, as ffmpeg's HLS muxer
/// dates from one start plus durations. Over the window the offset follows a source whose
/// clock drifts from the wall clock, or a delay that stays; a sample later than the mapping by
/// more than ``resynchronizeAfter`` (a jump in the timestamps) restarts it from its arrival.
/// Memory: one entry per sample in the window at most (each an offset that is a new minimum).
struct WallClockMapping {
    /// How late a sample may arrive against the mapping before the mapping restarts from it.
    static let resynchronizeAfter = 1.0
    /// Seconds of arrivals whose least delay sets the mapping.
    static let window = 10.0

    /// The candidates for the smallest offset (arrival minus media time) in the window: in order
    /// of arrival, offsets increasing; the first is the mapping's.
    private var candidates: [(arrival: Double, offset: Double)] = []
    private var first = 0

    /// The wall-clock time (seconds since 1970) of media time zero.
    private var origin: Double? { first < candidates.count ? candidates[first].offset : nil }

    /// Notes a sample at `mediaTime` seconds that arrived (or went) at `arrival` (seconds since
    /// 1970), and returns its date on the mapping.
    @discardableResult
    mutating func date(ofMediaTime mediaTime: Double, arrival: Double) -> Double {
        let offset = arrival - mediaTime
        guard offset.isFinite, arrival.isFinite else { return arrival }
        if let origin, offset - origin > Self.resynchronizeAfter {
            candidates.removeAll(keepingCapacity: true)
            first = 0
        }
        while candidates.count > first, candidates[candidates.count - 1].offset >= offset { candidates.removeLast() }
        candidates.append((arrival, offset))
        while first < candidates.count - 1, candidates[first].arrival < arrival - Self.window { first += 1 }
        if first > 64, first * 2 > candidates.count {
            candidates.removeFirst(first)
            first = 0
        }
        return origin.map { $0 + mediaTime } ?? arrival
    }

    /// The date the mapping puts `mediaTime` (seconds) at, noting nothing; nil before the first
    /// sample.
    func date(ofMediaTime mediaTime: Double) -> Double? {
        origin.map { $0 + mediaTime }
    }

    /// The media time (seconds) the mapping puts at `date` (seconds since 1970); nil before
    /// the first sample.
    func mediaTime(atDate date: Double) -> Double? {
        origin.map { date - $0 }
    }
}
