/// The parameter sets in force, keyed by id (ITU-T H.264 §7.4.1.2.1): a later SPS or PPS with
/// the same id replaces the earlier one, as a decoder would.
public struct ParameterSetRegistry: Sendable {
    /// A parameter set with the NAL unit it came from (for avcC records and in-band repetition).
    public struct Entry<Value: Sendable>: Sendable {
        public var value: Value
        public var nalUnit: [UInt8]
    }

    public private(set) var sequenceParameterSets: [Int: Entry<SequenceParameterSet>] = [:]
    public private(set) var pictureParameterSets: [Int: Entry<PictureParameterSet>] = [:]

    public init() {}

    public func sps(_ id: Int) -> SequenceParameterSet? { sequenceParameterSets[id]?.value }
    public func pps(_ id: Int) -> PictureParameterSet? { pictureParameterSets[id]?.value }

    /// The SPS a PPS refers to.
    public func sps(forPPS ppsId: Int) -> SequenceParameterSet? {
        pps(ppsId).flatMap { sps($0.seqParameterSetId) }
    }

    /// What adding a parameter set did.
    public enum Change: Sendable, Equatable {
        case added, unchanged, replaced
    }

    /// Parses and stores an SPS NAL unit (header included).
    @discardableResult
    public mutating func add(spsNALUnit nalUnit: Span<UInt8>) throws(BitstreamError) -> (SequenceParameterSet, Change) {
        let sps = try SequenceParameterSet(nalUnit: nalUnit)
        let bytes = Array(nalUnit)
        let change: Change
        if let old = sequenceParameterSets[sps.seqParameterSetId] { change = old.nalUnit == bytes ? .unchanged : .replaced } else { change = .added }
        if change != .unchanged { sequenceParameterSets[sps.seqParameterSetId] = Entry(value: sps, nalUnit: bytes) }
        return (sps, change)
    }

    /// Parses and stores a PPS NAL unit (header included).
    @discardableResult
    public mutating func add(ppsNALUnit nalUnit: Span<UInt8>) throws(BitstreamError) -> (PictureParameterSet, Change) {
        let registry = self
        let pps = try PictureParameterSet(nalUnit: nalUnit, sequenceParameterSet: { registry.sps($0) })
        let bytes = Array(nalUnit)
        let change: Change
        if let old = pictureParameterSets[pps.picParameterSetId] { change = old.nalUnit == bytes ? .unchanged : .replaced } else { change = .added }
        if change != .unchanged { pictureParameterSets[pps.picParameterSetId] = Entry(value: pps, nalUnit: bytes) }
        return (pps, change)
    }
}

extension Array where Element == UInt8 {
    init(_ span: Span<UInt8>) {
        self.init(unsafeUninitializedCapacity: span.count) { buffer, count in
            for i in span.indices { buffer[i] = span[unchecked: i] }
            count = span.count
        }
    }
}
