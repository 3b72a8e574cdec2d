import Foundation
import MediaCore
import Testing

@Suite("MediaTime (CMTime semantics)")
struct MediaTimeTests {
    @Test func theSeedsExample() {
        // CMTimeMake(200, 2) == CMTimeMake(400, 4)
        let time1 = MediaTime(value: 200, timescale: 2)
        let time2 = MediaTime(value: 400, timescale: 4)
        #expect(time1 == time2)
        #expect(MediaTime.compare(time1, time2) == 0)
        // CMTimeMakeWithSeconds(200.0 / 3, 3) × 3 − time1 == time2
        var time3 = MediaTime(seconds: 200.0 / 3, preferredTimescale: 3)
        #expect(time3.value == 200 && time3.timescale == 3 && !time3.hasBeenRounded)
        time3 = time3 * 3
        time3 = time3 - time1
        #expect(time3 == time2)
        #expect(time3.seconds == 100)
        #expect(!time3.hasBeenRounded)
    }

    struct ArithmeticCase: Sendable, CustomTestStringConvertible {
        var a: MediaTime, b: MediaTime, sum: MediaTime, difference: MediaTime
        var testDescription: String { "\(a) ± \(b)" }
    }

    static let arithmetic: [ArithmeticCase] = [
        .init(a: MediaTime(value: 1, timescale: 3), b: MediaTime(value: 1, timescale: 2),
              sum: MediaTime(value: 5, timescale: 6), difference: MediaTime(value: -1, timescale: 6)),
        .init(a: MediaTime(value: 1001, timescale: 30000), b: MediaTime(value: 1, timescale: 25),
              sum: MediaTime(value: 1001 + 1200, timescale: 30000), difference: MediaTime(value: 1001 - 1200, timescale: 30000)),
        .init(a: .positiveInfinity, b: MediaTime(value: 5, timescale: 1), sum: .positiveInfinity, difference: .positiveInfinity),
        .init(a: MediaTime(value: 5, timescale: 1), b: .negativeInfinity, sum: .negativeInfinity, difference: .positiveInfinity),
        .init(a: .indefinite, b: MediaTime(value: 5, timescale: 1), sum: .indefinite, difference: .indefinite),
        .init(a: .indefinite, b: .positiveInfinity, sum: .indefinite, difference: .indefinite),
    ]

    @Test(arguments: arithmetic)
    func exactArithmeticAndSpecialValues(_ c: ArithmeticCase) {
        let sum = c.a + c.b
        let difference = c.a - c.b
        #expect(sum == c.sum)
        #expect(difference == c.difference)
        #expect(!sum.hasBeenRounded)
    }

    @Test func leastCommonTimescaleIsUsed() {
        let sum = MediaTime(value: 1, timescale: 3) + MediaTime(value: 1, timescale: 2)
        #expect(sum.timescale == 6 && sum.value == 5)
    }

    @Test func infinitiesCancelToInvalidAndInvalidPropagates() {
        #expect(!(MediaTime.positiveInfinity + .negativeInfinity).isValid)
        #expect(!(MediaTime.positiveInfinity - .positiveInfinity).isValid)
        #expect(!(MediaTime.invalid + .indefinite).isValid)
        #expect(!(MediaTime.invalid + MediaTime(value: 1, timescale: 1)).isValid)
        #expect(!(MediaTime.positiveInfinity * 0).isValid)
        #expect((MediaTime.positiveInfinity * -2).isNegativeInfinity)
    }

    @Test func invalidIsNeverEqualAndNeverOrdered() {
        let invalid = MediaTime.invalid
        #expect(invalid != invalid)
        #expect(!(invalid == MediaTime.zero))
        #expect(!(invalid < MediaTime.zero) && !(invalid > MediaTime.zero) && !(invalid <= invalid))
        #expect(MediaTime.compare(invalid, .zero) == nil)
    }

    @Test func orderingOfSpecialValuesAndEpochs() {
        let one = MediaTime(value: 1, timescale: 1)
        #expect(MediaTime.negativeInfinity < MediaTime(value: Int64.min, timescale: 1))
        #expect(MediaTime(value: Int64.max, timescale: 1) < .positiveInfinity)
        #expect(MediaTime.positiveInfinity < .indefinite)
        #expect(MediaTime(value: 100, timescale: 1, epoch: 0) < MediaTime(value: 1, timescale: 1, epoch: 1))
        #expect(one == MediaTime(value: 600, timescale: 600))
        // Cross-timescale comparison is exact even where floating point is not.
        let a = MediaTime(value: Int64.max, timescale: Int32.max)
        let b = MediaTime(value: Int64.max - 1, timescale: Int32.max)
        #expect(b < a)
    }

    @Test func roundingIsFlaggedAndFollowsTheMethod() {
        let t = MediaTime(value: 1001, timescale: 30000)  // 33.3667 ms
        let ms = t.converted(toTimescale: 1000)
        #expect(ms.value == 33 && ms.hasBeenRounded)
        #expect(t.converted(toTimescale: 1000, rounding: .awayFromZero).value == 34)
        #expect(t.converted(toTimescale: 1000, rounding: .towardZero).value == 33)
        #expect(MediaTime(value: -1001, timescale: 30000).converted(toTimescale: 1000, rounding: .towardNegativeInfinity).value == -34)
        #expect(MediaTime(value: 5, timescale: 10).converted(toTimescale: 1).value == 1)  // half away from zero
        #expect(MediaTime(value: -5, timescale: 10).converted(toTimescale: 1).value == -1)
        let exact = MediaTime(value: 3, timescale: 2).converted(toTimescale: 600)
        #expect(exact.value == 900 && !exact.hasBeenRounded)
    }

    @Test func overflowBecomesAFlaggedInfinity() {
        let big = MediaTime(value: Int64.max - 1, timescale: 1)
        let sum = big + MediaTime(value: 10, timescale: 1)
        #expect(sum.isPositiveInfinity && sum.hasBeenRounded)
        let product = big * 2
        #expect(product.isPositiveInfinity && product.hasBeenRounded)
        let converted = big.converted(toTimescale: 1000)
        #expect(converted.isPositiveInfinity)
    }

    @Test func timescalesThatDoNotFitRoundToTheLarger() {
        // lcm(2^31 − 1, 2^30) does not fit Int32: use the larger timescale and round.
        let a = MediaTime(value: 1, timescale: Int32.max)
        let b = MediaTime(value: 1, timescale: 1 << 30)
        let sum = a + b
        #expect(sum.timescale == Int32.max)
        #expect(sum.hasBeenRounded)
        #expect(abs(sum.seconds - (a.seconds + b.seconds)) < 1e-9)
    }

    @Test func multiplyByRatio() {
        let frame = MediaTime(value: 1001, timescale: 30000)
        let scaled = frame.multiplied(byRatio: 3, 2)
        #expect(scaled.value == 1502 && scaled.hasBeenRounded)  // 1501.5 → 1502
        let exact = frame.multiplied(byRatio: 2, 1)
        #expect(exact.value == 2002 && !exact.hasBeenRounded)
        #expect(frame.multiplied(byRatio: -1, 1).value == -1001)
    }

    @Test func epochsInArithmetic() {
        let stamp = MediaTime(value: 10, timescale: 1, epoch: 3)
        let duration = MediaTime(value: 2, timescale: 1)
        #expect((stamp + duration).epoch == 3)
        #expect(!(stamp + MediaTime(value: 1, timescale: 1, epoch: 4)).isValid)
    }

    @Test func secondsAndDescription() {
        #expect(MediaTime(value: 200, timescale: 3).description == "200/3 (66.667 s)")
        #expect(MediaTime.invalid.description == "invalid")
        #expect(MediaTime.positiveInfinity.description == "+infinity")
        #expect(MediaTime.indefinite.seconds.isNaN)
        #expect(MediaTime(seconds: .infinity, preferredTimescale: 600).isPositiveInfinity)
        #expect(!MediaTime(seconds: .nan, preferredTimescale: 600).isValid)
        #expect(MediaTime(seconds: 0.1, preferredTimescale: 3).hasBeenRounded)
    }

    @Test func codableRoundTrip() throws {
        let times: [MediaTime] = [MediaTime(value: 1001, timescale: 30000, epoch: 2), .positiveInfinity, .indefinite]
        let data = try JSONEncoder().encode(times)
        let decoded = try JSONDecoder().decode([MediaTime].self, from: data)
        #expect(decoded == times)
        #expect(decoded[0].epoch == 2)
        let invalid = try JSONDecoder().decode(MediaTime.self, from: JSONEncoder().encode(MediaTime.invalid))
        #expect(!invalid.isValid)
    }

    @Test func equalTimesHashEqually() {
        let set: Set<MediaTime> = [MediaTime(value: 200, timescale: 2), MediaTime(value: 400, timescale: 4), MediaTime(value: 100, timescale: 1)]
        #expect(set.count == 1)
    }
}

@Suite("TimeRange (CMTimeRange semantics)")
struct TimeRangeTests {
    static func t(_ value: Int64, _ timescale: Int32 = 1, epoch: Int64 = 0) -> MediaTime { MediaTime(value: value, timescale: timescale, epoch: epoch) }

    @Test func endIsExcluded() {
        let range = TimeRange(start: Self.t(10), duration: Self.t(5))
        #expect(range.end == Self.t(15))
        #expect(range.contains(Self.t(10)))
        #expect(range.contains(Self.t(29, 2)))
        #expect(!range.contains(range.end))
        #expect(!range.contains(Self.t(9)))
    }

    @Test func containsRangeUnionIntersection() {
        let a = TimeRange(start: Self.t(0), duration: Self.t(10))
        let b = TimeRange(start: Self.t(5), end: Self.t(15))
        #expect(a.contains(TimeRange(start: Self.t(2), duration: Self.t(8))))
        #expect(!a.contains(b))
        #expect(a.union(b) == TimeRange(start: Self.t(0), end: Self.t(15)))
        #expect(a.intersection(b) == TimeRange(start: Self.t(5), end: Self.t(10)))
        let apart = a.intersection(TimeRange(start: Self.t(20), duration: Self.t(1)))
        #expect(apart.isEmpty && apart.start == Self.t(20))
    }

    @Test func validityRules() {
        #expect(!TimeRange(start: Self.t(0), duration: Self.t(-1)).isValid)
        #expect(!TimeRange(start: Self.t(0), duration: Self.t(1, epoch: 1)).isValid)  // a duration has epoch 0
        #expect(!TimeRange.invalid.isValid)
        #expect(TimeRange.invalid != TimeRange.invalid)
        #expect(TimeRange.zero.isEmpty)
        #expect(TimeRange(start: Self.t(0), duration: .indefinite).isIndefinite)
        #expect(TimeRange(start: Self.t(0), duration: .positiveInfinity).contains(Self.t(1_000_000)))
    }

    @Test func rangeOperationsNeedOneEpoch() {
        let a = TimeRange(start: Self.t(0, epoch: 1), duration: Self.t(10))
        let b = TimeRange(start: Self.t(5, epoch: 2), duration: Self.t(10))
        #expect(!a.union(b).isValid)
        #expect(!a.intersection(b).isValid)
        #expect(!a.contains(b))
        #expect(!a.contains(Self.t(5, epoch: 2)))
        #expect(a.contains(Self.t(5, epoch: 1)))
        #expect(a.end.epoch == 1)
    }

    @Test func equalityAcrossTimescales() {
        #expect(TimeRange(start: Self.t(1), duration: Self.t(2)) == TimeRange(start: Self.t(600, 600), duration: Self.t(1200, 600)))
    }
}
