/// A descriptor of a program or stream (ISO/IEC 13818-1 §2.6): a tag and its bytes.
public struct Descriptor: Sendable, Hashable {
    /// `descriptor_tag`.
    public var tag: UInt8
    /// The descriptor's bytes after its length.
    public var data: [UInt8]

    /// A descriptor of `tag` holding `data` (at most 255 bytes).
    public init(tag: UInt8, data: [UInt8]) {
        self.tag = tag
        self.data = Array(data.prefix(255))
    }

    /// The descriptor with its tag and length.
    public var encoded: [UInt8] { [tag, UInt8(data.count)] + data }

    /// The descriptors in a descriptor loop.
    static func list(in bytes: ArraySlice<UInt8>) throws(TransportStreamError) -> [Descriptor] {
        var descriptors: [Descriptor] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard offset + 2 <= bytes.endIndex else { throw TransportStreamError(.invalidSection, "a descriptor cut off after its tag") }
            let length = Int(bytes[offset + 1])
            guard offset + 2 + length <= bytes.endIndex else {
                throw TransportStreamError(.invalidSection, "descriptor 0x\(String(bytes[offset], radix: 16)) of \(length) bytes runs past its loop")
            }
            descriptors.append(Descriptor(tag: bytes[offset], data: Array(bytes[(offset + 2)..<(offset + 2 + length)])))
            offset += 2 + length
        }
        return descriptors
    }
}
