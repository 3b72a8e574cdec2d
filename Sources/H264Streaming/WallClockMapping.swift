/// A media timeline mapped onto the wall clock, recovered from when its samples came or went:
/// the dates of a live stream's segments (`EXT-X-PROGRAM-DATE-TIME`), and the RTP clock a
/// sender report pairs with the wall clock (RFC 3550 §6.4.1).
///
/// A sample's arrival (or sending) is its media time plus a delay that varies: a pacer or a
/// network late by a few hundred milliseconds under load, then catching up. Dating each sample
/// by its own arrival moves the date by that delay (the parts of a segment whose first sample
/// came late would seem to end after they were served; a sender report read at a late moment
/// would shift the receiver's lip sync). This mapping keeps the earliest offset seen between
/// arrival and media time (the least-delayed sample), so dates advance with the media and lie
/// at or before every sample's arrival, as ffmpeg's HLS muxer dates segments from one start
/// plus their durations and its RTP muxer derives a report's RTP time from one start. A sample
/// later than that by more than ``resynchronizeAfter`` (a jump in the timestamps, or a source
/// slower than the wall clock) starts the mapping again from its arrival.
struct WallClockMapping {
    /// How late a sample may arrive against the mapping before the mapping restarts from it.
    static let resynchronizeAfter = 1.0

    /// The wall-clock time (seconds since 1970) of media time zero.
    private var origin: Double?

    /// Notes a sample at `mediaTime` seconds that arrived (or went) at `arrival` (seconds since
    /// 1970), and returns its date on the mapping.
    @discardableResult
    mutating func date(ofMediaTime mediaTime: Double, arrival: Double) -> Double {
        let implied = arrival - mediaTime
        guard implied.isFinite else { return arrival }
        if let origin, implied >= origin, implied - origin <= Self.resynchronizeAfter {
            return origin + mediaTime
        }
        origin = implied
        return arrival
    }

    /// The media time (seconds) the mapping puts at `date` (seconds since 1970); nil before
    /// the first sample.
    func mediaTime(atDate date: Double) -> Double? {
        origin.map { date - $0 }
    }
}
