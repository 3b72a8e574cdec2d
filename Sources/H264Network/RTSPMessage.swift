/// An RTSP/1.0 message (RFC 2326 §4, §6, §7): a request or a response, its headers in order and
/// its body.
public struct RTSPMessage: Sendable, Hashable {
    /// The first line.
    public enum StartLine: Sendable, Hashable {
        /// `METHOD URL RTSP/1.0`.
        case request(method: String, url: String)
        /// `RTSP/1.0 CODE REASON`.
        case response(status: Int, reason: String)
    }

    /// The request or status line.
    public var startLine: StartLine
    /// The headers, names as sent, in order.
    public var headers: [(name: String, value: String)]
    /// The body (`Content-Length` bytes: an SDP for DESCRIBE and ANNOUNCE).
    public var body: [UInt8]

    /// A message.
    public init(_ startLine: StartLine, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    /// The first header named `name` (case-insensitive), or nil.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    /// The `CSeq` header as a number.
    public var sequenceNumber: Int? { self["CSeq"].flatMap { Int($0.trimmingSpaces()) } }

    /// The message's bytes; `Content-Length` is set from the body (in its place when the headers
    /// have one, last otherwise).
    public var bytes: [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let url): text = "\(method) \(url) RTSP/1.0\r\n"
        case .response(let status, let reason): text = "RTSP/1.0 \(status) \(reason)\r\n"
        }
        var hasLength = false
        for header in headers {
            if header.name.lowercased() == "content-length" {
                if !hasLength { text += "\(header.name): \(body.count)\r\n" }
                hasLength = true
            } else {
                text += "\(header.name): \(header.value)\r\n"
            }
        }
        if !hasLength, !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// Equal start lines, headers and bodies.
    public static func == (a: Self, b: Self) -> Bool {
        a.startLine == b.startLine && a.body == b.body && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Hashes the message.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(startLine)
        for header in headers { hasher.combine(header.name); hasher.combine(header.value) }
        hasher.combine(body)
    }
}

extension StringProtocol {
    func trimmingSpaces() -> SubSequence {
        var start = startIndex, end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, [" ", "\t", "\r"].contains(self[index(before: end)]) { end = index(before: end) }
        return self[start..<end]
    }
}
