/// A track's identity within one source or sink: an MP4/MOV `track_ID`, a transport stream's
/// PID, or the number a source gives each elementary stream it reads (the Annex-B stream 1, an
/// ADTS file beside it 2). Sample buffers carry the ID of the track they belong to; a sink keeps
/// each ID's samples in a track of their own.
public struct TrackID: RawRepresentable, Hashable, Comparable, Sendable, Codable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The number.
    public var rawValue: UInt32

    /// The track numbered `rawValue`.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The track numbered `value`.
    public init(integerLiteral value: UInt32) { rawValue = value }

    /// The first track: what a source of one elementary stream calls it, and what sample
    /// buffers made without a track say.
    public static let first = TrackID(rawValue: 1)

    /// Orders by number.
    public static func < (a: TrackID, b: TrackID) -> Bool { a.rawValue < b.rawValue }

    /// The number.
    public var description: String { String(rawValue) }

    /// Encodes the number alone.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes the number.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt32.self)
    }
}
