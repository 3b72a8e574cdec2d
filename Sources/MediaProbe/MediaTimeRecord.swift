public import MediaCore

/// A media time as a report shows it: the exact fraction and, beside it, its seconds
/// (`{"value": 1001, "timescale": 30000, "seconds": 0.033367}` in JSON).
public struct MediaTimeRecord: Codable, Hashable, Sendable {
    /// The time's value, in units of ``timescale``.
    public var value: Int64
    /// Units a second.
    public var timescale: Int32
    /// The time in seconds (rounded: the fraction is the exact time).
    public var seconds: Double

    /// The record of `time`.
    public init(_ time: MediaTime) {
        value = time.value
        timescale = time.timescale
        seconds = time.seconds
    }

    /// "value/timescale (seconds)", the seconds to six decimals.
    public var text: String { "\(value)/\(timescale) (\(decimalText(seconds, 6)))" }
}

/// A number with `digits` decimals ("-0.066733"), as reports print numbers (no Foundation
/// formatter on Linux without the whole of Foundation).
package func decimalText(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : value > 0 ? "inf" : "-inf" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let units = Int((abs(value) * scale).rounded())
    let whole = units / Int(scale), fraction = String(units % Int(scale))
    let sign = value < 0 && units > 0 ? "-" : ""
    return digits == 0 ? "\(sign)\(whole)" : "\(sign)\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
}
