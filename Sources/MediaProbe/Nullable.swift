/// An optional that JSON shows as `null` instead of leaving its key out: the fields a
/// report always has, known or not (`"frameRate": null` for a stream without timing).
public struct Nullable<Value: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    /// The value, if known.
    public var value: Value?

    /// Wraps `value`.
    public init(_ value: Value?) { self.value = value }

    /// Reads a value or `null`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        value = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    /// Writes the value, or `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}
