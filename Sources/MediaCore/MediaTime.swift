/// A rational time: `value / timescale` seconds, with the special values and rules of Core
/// Media's `CMTime` (seeds 001/002, "Representations of Time").
///
/// - A time is *valid* or *invalid*. Invalid is never equal to anything, itself included, and
///   never orders against a number (like `Double.nan`): `==` and `<` are false, and
///   ``compare(_:_:)`` returns nil.
/// - Valid non-numeric values: ``positiveInfinity``, ``negativeInfinity`` and ``indefinite``.
///   Infinities absorb numbers in arithmetic (∞ + x = ∞) and cancel to invalid (∞ − ∞);
///   indefinite propagates through every operation with a valid operand.
/// - Arithmetic is exact: operands are brought to the least common timescale when it fits an
///   `Int32` and the values fit an `Int64`. Otherwise the result uses the larger of the two
///   timescales, is rounded half away from zero and carries ``Flags/hasBeenRounded``; a value
///   that overflows even then becomes the infinity of its sign, also flagged.
/// - The epoch tells unrelated timelines apart (a loop count). Numeric times of different
///   epochs order by epoch. Arithmetic keeps a common epoch, and a duration's epoch is 0, so
///   a timestamp of epoch *e* plus a duration keeps *e*; two different non-zero epochs give
///   invalid.
public struct MediaTime: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The `CMTimeFlags` bits.
    public struct Flags: OptionSet, Sendable, Hashable, Codable {
        /// The flag bits, as in `CMTimeFlags`.
        public let rawValue: UInt32
        /// Flags with bits `rawValue`.
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// The time is valid; without it the time is ``MediaTime/invalid``.
        public static let valid = Flags(rawValue: 1 << 0)
        /// The value was rounded in a conversion or an operation, so it is not exact.
        public static let hasBeenRounded = Flags(rawValue: 1 << 1)
        /// The time is positive infinity.
        public static let positiveInfinity = Flags(rawValue: 1 << 2)
        /// The time is negative infinity.
        public static let negativeInfinity = Flags(rawValue: 1 << 3)
        /// The time is indefinite (unknown, like a live stream's duration).
        public static let indefinite = Flags(rawValue: 1 << 4)
        static let nonNumeric: Flags = [.positiveInfinity, .negativeInfinity, .indefinite]
    }

    /// How a conversion to another timescale rounds.
    public enum RoundingMethod: Sendable, Hashable {
        /// To nearest with halves away from zero; toward zero; away from zero; up; down.
        case halfAwayFromZero, towardZero, awayFromZero, towardPositiveInfinity, towardNegativeInfinity
    }

    /// The numerator: the time is `value / timescale` seconds when numeric.
    public var value: Int64
    /// Units per second; always positive.
    public var timescale: Int32
    /// Whether the time is valid, rounded, infinite or indefinite.
    public var flags: Flags
    /// The timeline the time belongs to (a loop count); 0 for durations and a single timeline.
    public var epoch: Int64

    /// `value / timescale` seconds. The timescale must be positive (a programmer error otherwise).
    public init(value: Int64, timescale: Int32, epoch: Int64 = 0) {
        precondition(timescale > 0, "a media time needs a positive timescale")
        self.value = value
        self.timescale = timescale
        self.flags = .valid
        self.epoch = epoch
    }

    init(value: Int64, timescale: Int32, flags: Flags, epoch: Int64) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
        self.epoch = epoch
    }

    /// The nearest time to `seconds` in `preferredTimescale`, flagged as rounded when it is not
    /// exact. Non-finite seconds give the matching special value (NaN gives invalid).
    public init(seconds: Double, preferredTimescale: Int32) {
        precondition(preferredTimescale > 0, "a media time needs a positive timescale")
        if seconds.isNaN { self = .invalid; return }
        if seconds.isInfinite { self = seconds > 0 ? .positiveInfinity : .negativeInfinity; return }
        let scaled = seconds * Double(preferredTimescale)
        let rounded = scaled.rounded(.toNearestOrAwayFromZero)
        guard rounded.magnitude < 9.2e18 else {
            self = seconds > 0 ? .positiveInfinity : .negativeInfinity
            flags.insert(.hasBeenRounded)
            return
        }
        self.init(value: Int64(rounded), timescale: preferredTimescale)
        if rounded != scaled { flags.insert(.hasBeenRounded) }
    }

    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)
    /// The invalid time: equal to nothing and ordered against nothing.
    public static let invalid = MediaTime(value: 0, timescale: 1, flags: [], epoch: 0)
    /// Positive infinity: after every number.
    public static let positiveInfinity = MediaTime(value: 0, timescale: 1, flags: [.valid, .positiveInfinity], epoch: 0)
    /// Negative infinity: before everything.
    public static let negativeInfinity = MediaTime(value: 0, timescale: 1, flags: [.valid, .negativeInfinity], epoch: 0)
    /// The indefinite time: valid but unknown.
    public static let indefinite = MediaTime(value: 0, timescale: 1, flags: [.valid, .indefinite], epoch: 0)

    /// Whether the time is valid.
    public var isValid: Bool { flags.contains(.valid) }
    /// Whether the time is positive infinity.
    public var isPositiveInfinity: Bool { isValid && flags.contains(.positiveInfinity) }
    /// Whether the time is negative infinity.
    public var isNegativeInfinity: Bool { isValid && flags.contains(.negativeInfinity) }
    /// Whether the time is indefinite.
    public var isIndefinite: Bool { isValid && flags.contains(.indefinite) }
    /// Valid and not an infinity or indefinite: a number of seconds.
    public var isNumeric: Bool { isValid && flags.isDisjoint(with: .nonNumeric) }
    /// Whether rounding made the time inexact.
    public var hasBeenRounded: Bool { flags.contains(.hasBeenRounded) }

    /// The time in seconds (NaN when invalid or indefinite, ±∞ for the infinities).
    public var seconds: Double {
        if isNumeric { return Double(value) / Double(timescale) }
        if isPositiveInfinity { return .infinity }
        if isNegativeInfinity { return -.infinity }
        return .nan
    }

    // MARK: Conversion

    /// The same time in another timescale, rounded by `method` (and flagged) when inexact.
    /// Special values are returned unchanged.
    public func converted(toTimescale newTimescale: Int32, rounding method: RoundingMethod = .halfAwayFromZero) -> MediaTime {
        precondition(newTimescale > 0, "a media time needs a positive timescale")
        guard isNumeric else { return self }
        if newTimescale == timescale { return self }
        guard let (scaled, exact) = Self.rescale(value, from: timescale, to: newTimescale, rounding: method) else {
            var overflow = value < 0 ? MediaTime.negativeInfinity : MediaTime.positiveInfinity
            overflow.flags.insert(.hasBeenRounded)
            return overflow
        }
        var result = MediaTime(value: scaled, timescale: newTimescale, flags: flags, epoch: epoch)
        if !exact { result.flags.insert(.hasBeenRounded) }
        return result
    }

    /// value × to / from, rounded; nil if it does not fit an Int64. Also returns whether it
    /// was exact.
    static func rescale(_ value: Int64, from: Int32, to: Int32, rounding: RoundingMethod) -> (Int64, Bool)? {
        let negative = value < 0
        let product = value.magnitude.multipliedFullWidth(by: UInt64(to))
        let divisor = UInt64(from)
        guard product.high < divisor else { return nil }
        var (quotient, remainder) = divisor.dividingFullWidth(product)
        let exact = remainder == 0
        if !exact {
            let away: Bool
            switch rounding {
            case .halfAwayFromZero: away = remainder >= divisor - remainder
            case .towardZero: away = false
            case .awayFromZero: away = true
            case .towardPositiveInfinity: away = !negative
            case .towardNegativeInfinity: away = negative
            }
            if away {
                let (next, overflow) = quotient.addingReportingOverflow(1)
                if overflow { return nil }
                quotient = next
            }
        }
        if negative {
            guard quotient <= UInt64(Int64.max) + 1 else { return nil }
            return (quotient == UInt64(Int64.max) + 1 ? Int64.min : -Int64(quotient), exact)
        }
        guard quotient <= UInt64(Int64.max) else { return nil }
        return (Int64(quotient), exact)
    }

    // MARK: Arithmetic

    /// The epoch two operands share: equal epochs, or one of them 0 (a duration); nil otherwise.
    static func commonEpoch(_ a: MediaTime, _ b: MediaTime) -> Int64? {
        if a.epoch == b.epoch { return a.epoch }
        if a.epoch == 0 { return b.epoch }
        if b.epoch == 0 { return a.epoch }
        return nil
    }

    /// Both values in one timescale: the least common one when it fits, else the larger of the
    /// two with rounding. Also returns whether rounding happened.
    static func aligned(_ a: MediaTime, _ b: MediaTime) -> (Int64, Int64, Int32, Bool)? {
        if a.timescale == b.timescale { return (a.value, b.value, a.timescale, false) }
        let g = gcd(Int64(a.timescale), Int64(b.timescale))
        let lcm = Int64(a.timescale) / g * Int64(b.timescale)
        if lcm <= Int64(Int32.max) {
            let (av, ao) = a.value.multipliedReportingOverflow(by: lcm / Int64(a.timescale))
            let (bv, bo) = b.value.multipliedReportingOverflow(by: lcm / Int64(b.timescale))
            if !ao && !bo { return (av, bv, Int32(lcm), false) }
        }
        let target = max(a.timescale, b.timescale)
        guard let (av, ae) = rescale(a.value, from: a.timescale, to: target, rounding: .halfAwayFromZero),
              let (bv, be) = rescale(b.value, from: b.timescale, to: target, rounding: .halfAwayFromZero) else { return nil }
        return (av, bv, target, !(ae && be))
    }

    static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a.magnitude, b.magnitude)
        while y != 0 { (x, y) = (y, x % y) }
        return Int64(x)
    }

    /// Special-value rules shared by addition and subtraction; nil when both are numbers.
    static func special(_ a: MediaTime, _ b: MediaTime, subtracting: Bool) -> MediaTime? {
        if !a.isValid || !b.isValid { return .invalid }
        if a.isIndefinite || b.isIndefinite { return .indefinite }
        let bPositive = subtracting ? b.isNegativeInfinity : b.isPositiveInfinity
        let bNegative = subtracting ? b.isPositiveInfinity : b.isNegativeInfinity
        if (a.isPositiveInfinity && bNegative) || (a.isNegativeInfinity && bPositive) { return .invalid }
        if a.isPositiveInfinity || bPositive { return .positiveInfinity }
        if a.isNegativeInfinity || bNegative { return .negativeInfinity }
        return nil
    }

    static func combine(_ a: MediaTime, _ b: MediaTime, subtracting: Bool) -> MediaTime {
        if let special = special(a, b, subtracting: subtracting) { return special }
        guard let epoch = commonEpoch(a, b) else { return .invalid }
        let rounded = a.hasBeenRounded || b.hasBeenRounded
        guard let (av, bv, scale, roundedNow) = aligned(a, b) else {
            var overflow = (subtracting ? a.seconds - b.seconds : a.seconds + b.seconds) < 0 ? MediaTime.negativeInfinity : .positiveInfinity
            overflow.flags.insert(.hasBeenRounded)
            return overflow
        }
        let (sum, overflow) = subtracting ? av.subtractingReportingOverflow(bv) : av.addingReportingOverflow(bv)
        if overflow {
            var infinity = (subtracting ? bv > 0 : bv < 0) ? MediaTime.negativeInfinity : .positiveInfinity
            infinity.flags.insert(.hasBeenRounded)
            return infinity
        }
        var result = MediaTime(value: sum, timescale: scale, epoch: epoch)
        if rounded || roundedNow { result.flags.insert(.hasBeenRounded) }
        return result
    }

    /// The sum, exact when a common timescale fits; see the type's rules for special values and epochs.
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime { combine(a, b, subtracting: false) }
    /// The difference, exact when a common timescale fits; see the type's rules for special values and epochs.
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime { combine(a, b, subtracting: true) }
    /// Adds `b` to `a`.
    public static func += (a: inout MediaTime, b: MediaTime) { a = a + b }
    /// Subtracts `b` from `a`.
    public static func -= (a: inout MediaTime, b: MediaTime) { a = a - b }

    /// The time multiplied by an integer, exactly (or ±∞, flagged, on overflow). An infinity
    /// times 0 is invalid.
    public static func * (a: MediaTime, multiplier: Int64) -> MediaTime {
        if !a.isValid || a.isIndefinite { return a.isValid ? .indefinite : .invalid }
        if !a.isNumeric {
            if multiplier == 0 { return .invalid }
            return (a.isPositiveInfinity) == (multiplier > 0) ? .positiveInfinity : .negativeInfinity
        }
        let (product, overflow) = a.value.multipliedReportingOverflow(by: multiplier)
        if overflow {
            var infinity = (a.value < 0) != (multiplier < 0) ? MediaTime.negativeInfinity : .positiveInfinity
            infinity.flags.insert(.hasBeenRounded)
            return infinity
        }
        return MediaTime(value: product, timescale: a.timescale, flags: a.flags, epoch: a.epoch)
    }

    /// The time multiplied by `numerator / denominator`, in the same timescale, rounded half
    /// away from zero (and flagged) when inexact.
    public func multiplied(byRatio numerator: Int64, _ denominator: Int64) -> MediaTime {
        precondition(denominator != 0, "a ratio needs a non-zero denominator")
        if !isNumeric { return self * (numerator.signum() * denominator.signum()) }
        let negative = (numerator < 0) != (denominator < 0)
        let product = value.magnitude.multipliedFullWidth(by: numerator.magnitude)
        let d = denominator.magnitude
        guard product.high < d else {
            var infinity = negative != (value < 0) ? MediaTime.negativeInfinity : .positiveInfinity
            infinity.flags.insert(.hasBeenRounded)
            return infinity
        }
        var (quotient, remainder) = d.dividingFullWidth(product)
        let inexact = remainder != 0
        if inexact && remainder >= d - remainder {
            let (next, overflow) = quotient.addingReportingOverflow(1)
            guard !overflow else {
                var infinity = negative != (value < 0) ? MediaTime.negativeInfinity : .positiveInfinity
                infinity.flags.insert(.hasBeenRounded)
                return infinity
            }
            quotient = next
            remainder = 0
        }
        guard quotient <= UInt64(Int64.max) else {
            var infinity = negative != (value < 0) ? MediaTime.negativeInfinity : .positiveInfinity
            infinity.flags.insert(.hasBeenRounded)
            return infinity
        }
        let signed = negative != (value < 0) ? -Int64(quotient) : Int64(quotient)
        var result = MediaTime(value: signed, timescale: timescale, flags: flags, epoch: epoch)
        if inexact { result.flags.insert(.hasBeenRounded) }
        return result
    }

    // MARK: Comparison

    /// The order of two times: negative, 0 or positive as `a` is before, at or after `b`; nil
    /// when either is invalid. Negative infinity is before everything, positive infinity after
    /// every number, indefinite after positive infinity; numbers of different epochs order by
    /// epoch, then by value across timescales, exactly.
    public static func compare(_ a: MediaTime, _ b: MediaTime) -> Int? {
        guard a.isValid, b.isValid else { return nil }
        func rank(_ t: MediaTime) -> Int {
            if t.isNegativeInfinity { return 0 }
            if t.isNumeric { return 1 }
            if t.isPositiveInfinity { return 2 }
            return 3  // indefinite
        }
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        guard ra == 1 else { return 0 }
        if a.epoch != b.epoch { return a.epoch < b.epoch ? -1 : 1 }
        // a.value / a.timescale vs b.value / b.timescale, cross-multiplied in 128 bits.
        let left = a.value.multipliedFullWidth(by: Int64(b.timescale))
        let right = b.value.multipliedFullWidth(by: Int64(a.timescale))
        if left.high != right.high { return left.high < right.high ? -1 : 1 }
        if left.low != right.low { return left.low < right.low ? -1 : 1 }
        return 0
    }

    /// Equal as times: both valid and ``compare(_:_:)`` gives 0 (so 200/2 == 400/4). Invalid
    /// equals nothing.
    public static func == (a: MediaTime, b: MediaTime) -> Bool { compare(a, b) == 0 }

    /// Hashes the time reduced to lowest terms (and its epoch), so times that `==` calls equal hash alike.
    public func hash(into hasher: inout Hasher) {
        guard isValid else { hasher.combine(0xBAD); return }
        if !isNumeric { hasher.combine(flags.intersection(.nonNumeric).rawValue); return }
        let g = Self.gcd(value, Int64(timescale))
        hasher.combine(epoch)
        hasher.combine(value / max(g, 1))
        hasher.combine(Int64(timescale) / max(g, 1))
    }

    /// Whether `a` is before `b`; false when either is invalid.
    public static func < (a: MediaTime, b: MediaTime) -> Bool { (compare(a, b) ?? 0) < 0 }
    /// Whether `a` is before or at `b`; false when either is invalid.
    public static func <= (a: MediaTime, b: MediaTime) -> Bool { compare(a, b).map { $0 <= 0 } ?? false }
    /// Whether `a` is after `b`; false when either is invalid.
    public static func > (a: MediaTime, b: MediaTime) -> Bool { (compare(a, b) ?? 0) > 0 }
    /// Whether `a` is at or after `b`; false when either is invalid.
    public static func >= (a: MediaTime, b: MediaTime) -> Bool { compare(a, b).map { $0 >= 0 } ?? false }

    /// The earlier of two times (`a` when they are equal), or invalid when either is invalid.
    public static func minimum(_ a: MediaTime, _ b: MediaTime) -> MediaTime {
        guard let order = compare(a, b) else { return .invalid }
        return order <= 0 ? a : b
    }

    /// The later of two times (`a` when they are equal), or invalid when either is invalid.
    public static func maximum(_ a: MediaTime, _ b: MediaTime) -> MediaTime {
        guard let order = compare(a, b) else { return .invalid }
        return order >= 0 ? a : b
    }

    // MARK: Description

    /// "200/3 (66.667 s)", "+infinity", "invalid"; " rounded" and " epoch N" when they apply.
    public var description: String {
        guard isValid else { return "invalid" }
        if isPositiveInfinity { return "+infinity" }
        if isNegativeInfinity { return "-infinity" }
        if isIndefinite { return "indefinite" }
        var text = "\(value)/\(timescale) (\(Self.format(seconds)) s)"
        if hasBeenRounded { text += " rounded" }
        if epoch != 0 { text += " epoch \(epoch)" }
        return text
    }

    static func format(_ seconds: Double) -> String {
        let thousandths = (seconds * 1000).rounded()
        guard thousandths.magnitude < 1e15 else { return "\(seconds)" }
        let t = Int64(thousandths)
        let fraction = String(t.magnitude % 1000)
        return (t < 0 ? "-" : "") + "\(t.magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
