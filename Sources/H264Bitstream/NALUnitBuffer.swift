/// One NAL unit read from an Annex-B stream: where it was, and its bytes (header byte first),
/// kept alive by the storage they are in (a mapping of the file, or a buffer of their own).
public struct NALUnitBuffer: @unchecked Sendable {  // the bytes are immutable and owned by `owner`
    /// Where the NAL unit is in the stream.
    public let location: AnnexBNALUnit
    /// The bytes, valid while this value (or a copy) exists.
    public let bytes: UnsafeRawBufferPointer
    /// What keeps ``bytes`` alive.
    public let owner: AnyObject

    /// Bytes held by `owner`, which must keep them unchanged and alive.
    public init(location: AnnexBNALUnit, bytes: UnsafeRawBufferPointer, owner: AnyObject) {
        self.location = location
        self.bytes = bytes
        self.owner = owner
    }

    /// The NAL unit header, from the first byte.
    public var header: NALUnitHeader { NALUnitHeader(byte: bytes[0]) }

    /// The number of bytes.
    public var count: Int { bytes.count }

    /// Calls `body` with the bytes as a span.
    public func withSpan<R, E: Error>(_ body: (Span<UInt8>) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(owner) { () throws(E) -> R in try body(bytes.bindMemory(to: UInt8.self).span) }
    }
}
