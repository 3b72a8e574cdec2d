/// Dates a live stream's segments (`EXT-X-PROGRAM-DATE-TIME`) from its media timeline, not from
/// when each segment's first sample happened to arrive.
///
/// A sample's arrival is its media time plus a delay that varies (a pacer or a network late by a
/// few hundred milliseconds under load, then catching up). Dating each segment by its first
/// sample's arrival moves the date by that delay, so the parts of a segment whose first sample
/// came late seem to end after they were served. This clock keeps the earliest offset seen
/// between arrival and media time (the least-delayed sample), so dates advance with the media
/// and lie at or before every sample's arrival, as ffmpeg's HLS muxer dates segments from one
/// start plus their durations. A sample later than that by more than ``resynchronizeAfter``
/// (a jump in the timestamps, or a source running slower than the wall clock) starts the
/// mapping again from its arrival.
struct ProgramDateTimeClock {
    /// How late a sample may arrive against the mapping before the mapping restarts from it.
    static let resynchronizeAfter = 1.0

    /// The wall-clock time (seconds since 1970) of media time zero.
    private var origin: Double?

    /// The date of a sample at `mediaTime` seconds that arrived at `arrival` (seconds since 1970).
    mutating func date(ofMediaTime mediaTime: Double, arrival: Double) -> Double {
        let implied = arrival - mediaTime
        guard implied.isFinite else { return arrival }
        if let origin, implied >= origin, implied - origin <= Self.resynchronizeAfter {
            return origin + mediaTime
        }
        origin = implied
        return arrival
    }
}
