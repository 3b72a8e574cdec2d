/// A UTC time as ISO 8601 / RFC 3339 with milliseconds (`2026-11-26T23:59:59.123Z`), as
/// `EXT-X-PROGRAM-DATE-TIME` and a DASH MPD's `availabilityStartTime` want it. Made without a
/// calendar library: days from the civil date algorithm (proleptic Gregorian).
public struct ISO8601Timestamp: Sendable, Hashable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z.
    public var secondsSince1970: Double

    /// The time `secondsSince1970` after the Unix epoch.
    public init(secondsSince1970: Double) { self.secondsSince1970 = secondsSince1970 }

    /// The time as text, to the millisecond.
    public var description: String {
        let milliseconds = Int64((secondsSince1970 * 1000).rounded(.down))
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 { rest += 86_400_000; days -= 1 }
        // Days since the epoch to a civil date (era of 400 years from 0000-03-01).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let hours = rest / 3_600_000, minutes = rest / 60_000 % 60, seconds = rest / 1000 % 60, millis = rest % 1000
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(year)-\(two(month))-\(two(day))T\(two(hours)):\(two(minutes)):\(two(seconds)).\(fraction)Z"
    }
}
