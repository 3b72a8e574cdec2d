/// The parameter sets in force, keyed by id (ITU-T H.264 §7.4.1.2.1): a later SPS or PPS with
/// the same id replaces the earlier one, as a decoder would.
public struct ParameterSetRegistry: Sendable {
    /// A parameter set with the NAL unit it came from (for avcC records and in-band repetition).
    public struct Entry<Value: Sendable>: Sendable {
        /// The parsed parameter set.
        public var value: Value
        /// The NAL unit's bytes, header byte first, as received.
        public var nalUnit: [UInt8]
    }

    /// Storage by id (SPS 0...31, PPS 0...255) in boxes, so the per-slice lookups of the hot
    /// path read fields in place instead of copying whole parameter sets.
    final class Box<Value: Sendable>: Sendable {
        let entry: Entry<Value>
        init(_ entry: Entry<Value>) { self.entry = entry }
    }
    private var spsStorage = [Box<SequenceParameterSet>?](repeating: nil, count: 32)
    private var ppsStorage = [Box<PictureParameterSet>?](repeating: nil, count: 256)

    /// An empty registry.
    public init() {}

    /// The SPS entries present, by id.
    public var sequenceParameterSets: [Int: Entry<SequenceParameterSet>] {
        Dictionary(uniqueKeysWithValues: spsStorage.enumerated().compactMap { i, box in box.map { (i, $0.entry) } })
    }
    /// The PPS entries present, by id.
    public var pictureParameterSets: [Int: Entry<PictureParameterSet>] {
        Dictionary(uniqueKeysWithValues: ppsStorage.enumerated().compactMap { i, box in box.map { (i, $0.entry) } })
    }

    /// The SPS with `seq_parameter_set_id` `id`, or nil if none has been added.
    public func sps(_ id: Int) -> SequenceParameterSet? { spsBox(id)?.entry.value }
    /// The PPS with `pic_parameter_set_id` `id`, or nil if none has been added.
    public func pps(_ id: Int) -> PictureParameterSet? { ppsBox(id)?.entry.value }

    @inline(__always) func spsBox(_ id: Int) -> Box<SequenceParameterSet>? { id >= 0 && id < 32 ? spsStorage[id] : nil }
    @inline(__always) func ppsBox(_ id: Int) -> Box<PictureParameterSet>? { id >= 0 && id < 256 ? ppsStorage[id] : nil }

    /// The SPS a PPS refers to.
    public func sps(forPPS ppsId: Int) -> SequenceParameterSet? {
        ppsBox(ppsId).flatMap { spsBox($0.entry.value.seqParameterSetId)?.entry.value }
    }

    /// What adding a parameter set did.
    public enum Change: Sendable, Equatable {
        /// A new id; the same bytes as the set already stored; or different bytes replacing it.
        case added, unchanged, replaced
    }

    /// Parses and stores an SPS NAL unit (header included).
    @discardableResult
    public mutating func add(spsNALUnit nalUnit: Span<UInt8>) throws(BitstreamError) -> (SequenceParameterSet, Change) {
        let sps = try SequenceParameterSet(nalUnit: nalUnit)
        let bytes = Array(nalUnit)
        let change: Change
        if let old = spsBox(sps.seqParameterSetId) { change = old.entry.nalUnit == bytes ? .unchanged : .replaced } else { change = .added }
        if change != .unchanged { spsStorage[sps.seqParameterSetId] = Box(Entry(value: sps, nalUnit: bytes)) }
        return (sps, change)
    }

    /// Parses and stores a PPS NAL unit (header included).
    @discardableResult
    public mutating func add(ppsNALUnit nalUnit: Span<UInt8>) throws(BitstreamError) -> (PictureParameterSet, Change) {
        let registry = self
        let pps = try PictureParameterSet(nalUnit: nalUnit, sequenceParameterSet: { registry.sps($0) })
        let bytes = Array(nalUnit)
        let change: Change
        if let old = ppsBox(pps.picParameterSetId) { change = old.entry.nalUnit == bytes ? .unchanged : .replaced } else { change = .added }
        if change != .unchanged { ppsStorage[pps.picParameterSetId] = Box(Entry(value: pps, nalUnit: bytes)) }
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
