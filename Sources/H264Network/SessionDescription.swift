/// A session description (SDP, RFC 4566): the session's lines and one section per medium.
///
/// Parsing keeps what RTP receivers need (origin, name, connection, attributes, media with
/// their port, protocol, formats and attributes) and passes over every other line type, as
/// ffmpeg, GStreamer and cameras write them; a line that is not `x=value` is an error naming
/// its number. ``text`` writes the lines back in RFC 4566 order, CRLF-terminated.
public struct SessionDescription: Sendable, Hashable {
    /// One `m=` section.
    public struct Media: Sendable, Hashable {
        /// The media type: `video`, `audio`, ...
        public var type: String
        /// The transport port (0: the medium is not sent).
        public var port: Int
        /// The transport protocol: `RTP/AVP`, ...
        public var transport: String
        /// The formats: RTP payload types for RTP.
        public var formats: [String]
        /// The `c=` line's value for this medium, if it has its own.
        public var connection: String?
        /// The `a=` lines' values, in order (`rtpmap:96 H264/90000`, `control:trackID=0`).
        public var attributes: [String]

        /// A medium.
        public init(type: String, port: Int, transport: String = "RTP/AVP", formats: [String], connection: String? = nil, attributes: [String] = []) {
            self.type = type
            self.port = port
            self.transport = transport
            self.formats = formats
            self.connection = connection
            self.attributes = attributes
        }

        /// The value of the first attribute named `name` (`a=name:value`), or nil.
        public func attribute(_ name: String) -> String? { SessionDescription.attribute(name, in: attributes) }

        /// The first `a=rtpmap:PT ENCODING/RATE[/CHANNELS]` whose encoding is `encoding` (in
        /// any case): its payload type, clock rate and channels; an error naming what is
        /// missing when there is none, or when its rate is not 1 Hz to 1 MHz.
        public func rtpMap(encoding: String) throws(NetworkError) -> (payloadType: UInt8, clockRate: Int, channels: Int?) {
            let prefix = encoding.lowercased() + "/"
            for attribute in attributes where attribute.hasPrefix("rtpmap:") {
                let fields = attribute.dropFirst(7).split(separator: " ", maxSplits: 1)
                guard fields.count == 2, let type = UInt8(fields[0]), type < 128, fields[1].lowercased().hasPrefix(prefix) else { continue }
                let parts = fields[1].split(separator: "/")
                guard parts.count >= 2, let rate = Int(parts[1]), (1...1_000_000).contains(rate) else {
                    throw NetworkError(.invalidDescription, "'rtpmap:\(type) \(fields[1].prefix(40))': no clock rate")
                }
                return (type, rate, parts.count >= 3 ? Int(parts[2]) : nil)
            }
            throw NetworkError(.invalidDescription, "the \(type) medium has no 'a=rtpmap:PT \(encoding)/RATE' line")
        }

        /// The medium in a few words for a message: its type and its first format's encoding
        /// ("audio MPEG4-GENERIC/48000/2", "video H264/90000"; "audio, payload type 0" for a
        /// static payload type without an `rtpmap`).
        public var summary: String {
            let first = formats.first ?? ""
            if let map = attributes.first(where: { $0.hasPrefix("rtpmap:\(first) ") }) {
                return "\(type) \(map.dropFirst("rtpmap:\(first) ".count).prefix(60))"
            }
            return first.isEmpty ? type : "\(type), payload type \(first.prefix(8))"
        }

        /// The `name=value` parameters of `a=fmtp:` for `payloadType`, in order, spaces
        /// around them trimmed (names as written: RFC 4566 leaves their case to each format).
        public func formatParameters(payloadType: UInt8) -> [(name: Substring, value: Substring)] {
            var parameters: [(name: Substring, value: Substring)] = []
            for attribute in attributes where attribute.hasPrefix("fmtp:\(payloadType) ") {
                for parameter in attribute.dropFirst("fmtp:\(payloadType) ".count).split(separator: ";") {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
                    if pair.count == 2 { parameters.append((pair[0], pair[1])) }
                }
            }
            return parameters
        }
    }

    /// The `o=` line's value.
    public var origin: String
    /// The `s=` line's value.
    public var name: String
    /// The session's `c=` line value: `IN IP4 127.0.0.1`.
    public var connection: String?
    /// The session-level `a=` lines' values.
    public var attributes: [String]
    /// The media sections.
    public var media: [Media]

    /// The longest description accepted (cameras write a few hundred bytes).
    public static let maximumSize = 64 << 10

    /// A description.
    public init(origin: String = "- 0 0 IN IP4 127.0.0.1", name: String = "H264Kit", connection: String? = nil, attributes: [String] = [], media: [Media]) {
        self.origin = origin
        self.name = name
        self.connection = connection
        self.attributes = attributes
        self.media = media
    }

    /// Parses SDP text (CRLF or LF line ends).
    public init(parsing text: String) throws(NetworkError) {
        guard text.utf8.count <= Self.maximumSize else {
            throw NetworkError(.tooLarge, "a \(text.utf8.count)-byte session description: at most \(Self.maximumSize)")
        }
        origin = ""
        name = ""
        attributes = []
        media = []
        var sawVersion = false
        // ("\r\n" is one Character in Swift.)
        for (number, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            if line.isEmpty { continue }
            let place = "SDP line \(number + 1)"
            guard line.count >= 2, let type = line.first, type.isLetter, line.dropFirst().first == "=" else {
                throw NetworkError(.invalidDescription, "'\(line.prefix(80))' is not a type=value line", at: place)
            }
            let value = String(line.dropFirst(2))
            switch type {
            case "v":
                guard value == "0" else { throw NetworkError(.invalidDescription, "SDP version \(value), expected 0", at: place) }
                sawVersion = true
            case "o": origin = value
            case "s": name = value
            case "c":
                if media.isEmpty { connection = value } else { media[media.count - 1].connection = value }
            case "a":
                if media.isEmpty { attributes.append(value) } else { media[media.count - 1].attributes.append(value) }
            case "m":
                let fields = value.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 4, let port = fields[1].split(separator: "/", omittingEmptySubsequences: false).first.flatMap({ Int($0) }), (0...65535).contains(port) else {
                    throw NetworkError(.invalidDescription, "'m=\(value.prefix(80))': expected 'media port proto fmt...'", at: place)
                }
                media.append(Media(type: String(fields[0]), port: port, transport: String(fields[2]), formats: fields.dropFirst(3).map(String.init)))
            default:
                continue  // i=, u=, e=, p=, b=, t=, r=, z=, k=: not needed to receive
            }
        }
        guard sawVersion else { throw NetworkError(.invalidDescription, "no 'v=0' line: not a session description") }
    }

    /// The description as SDP text.
    public var text: String {
        var lines = ["v=0", "o=\(origin)", "s=\(name)"]
        if let connection { lines.append("c=\(connection)") }
        lines.append("t=0 0")
        lines += attributes.map { "a=\($0)" }
        for medium in media {
            lines.append("m=\(medium.type) \(medium.port) \(medium.transport) \(medium.formats.joined(separator: " "))")
            if let connection = medium.connection { lines.append("c=\(connection)") }
            lines += medium.attributes.map { "a=\($0)" }
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    /// The value of the first session attribute named `name`, or nil.
    public func attribute(_ name: String) -> String? { Self.attribute(name, in: attributes) }

    static func attribute(_ name: String, in attributes: [String]) -> String? {
        for attribute in attributes {
            if attribute == name { return "" }
            if attribute.hasPrefix(name + ":") { return String(attribute.dropFirst(name.count + 1)) }
        }
        return nil
    }
}
