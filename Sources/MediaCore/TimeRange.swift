/// A span of media time: a start and a duration, the end excluded (`CMTimeRange`).
///
/// Rules from the seeds: a range cannot span epochs, its duration has epoch 0 and is not
/// negative; range operations (union, intersection, containment) need ranges whose starts
/// share an epoch, and give ``invalid`` (or false) otherwise.
public struct TimeRange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The first time in the range.
    public var start: MediaTime
    /// The range's length: epoch 0, not negative in a valid range.
    public var duration: MediaTime

    /// The range of `duration` from `start`, unchecked (see ``isValid``).
    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    /// The range from `start` up to (not including) `end`.
    public init(start: MediaTime, end: MediaTime) {
        self.start = start
        var duration = end - start
        duration.epoch = 0
        self.duration = duration
    }

    /// The empty range at time zero.
    public static let zero = TimeRange(start: .zero, duration: .zero)
    /// The invalid range: equal to nothing.
    public static let invalid = TimeRange(start: .invalid, duration: .invalid)

    /// Valid: both times valid, the duration of epoch 0 and not negative, and the start not an
    /// infinity or indefinite unless the duration is too.
    public var isValid: Bool {
        guard start.isValid, duration.isValid, duration.epoch == 0 else { return false }
        if duration.isNumeric && duration.value < 0 { return false }
        if duration.isNegativeInfinity { return false }
        return true
    }

    /// Valid with an indefinite start or duration.
    public var isIndefinite: Bool { isValid && (start.isIndefinite || duration.isIndefinite) }
    /// Valid with a zero duration.
    public var isEmpty: Bool { isValid && duration.isNumeric && duration.value == 0 }

    /// start + duration (the first time not in the range).
    public var end: MediaTime { isValid ? start + duration : .invalid }

    /// Whether `time` is in the range: start ≤ time < end.
    public func contains(_ time: MediaTime) -> Bool {
        guard isValid, time.isValid, !isIndefinite, time.epoch == start.epoch || !time.isNumeric || !start.isNumeric else { return false }
        return start <= time && time < end
    }

    /// Whether `other` lies wholly inside this range.
    public func contains(_ other: TimeRange) -> Bool {
        guard isValid, other.isValid, !isIndefinite, !other.isIndefinite, start.epoch == other.start.epoch else { return false }
        return start <= other.start && other.end <= end
    }

    /// The smallest range holding both (invalid across epochs or for invalid operands).
    public func union(_ other: TimeRange) -> TimeRange {
        guard isValid, other.isValid, start.epoch == other.start.epoch else { return .invalid }
        return TimeRange(start: MediaTime.minimum(start, other.start), end: MediaTime.maximum(end, other.end))
    }

    /// The overlap of both; empty (at the later start) when they do not overlap.
    public func intersection(_ other: TimeRange) -> TimeRange {
        guard isValid, other.isValid, start.epoch == other.start.epoch else { return .invalid }
        let lower = MediaTime.maximum(start, other.start)
        let upper = MediaTime.minimum(end, other.end)
        if upper <= lower { return TimeRange(start: lower, duration: MediaTime(value: 0, timescale: lower.isNumeric ? lower.timescale : 1)) }
        return TimeRange(start: lower, end: upper)
    }

    /// Equal when both are valid with equal starts and durations; invalid equals nothing.
    public static func == (a: TimeRange, b: TimeRange) -> Bool {
        a.isValid && b.isValid && a.start == b.start && a.duration == b.duration
    }

    /// Hashes the start and the duration, as `==` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(start)
        hasher.combine(duration)
    }

    /// "[start + duration)", or "invalid range".
    public var description: String {
        guard isValid else { return "invalid range" }
        return "[\(start) + \(duration))"
    }
}
