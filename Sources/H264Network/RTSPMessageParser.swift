/// Splits an RTSP connection's bytes into messages and interleaved binary frames (RFC 2326
/// §10.12: `$`, a channel byte, a 16-bit length, an RTP or RTCP packet): a pure state machine,
/// bytes in, messages out, for any way the bytes are cut.
///
/// Everything read from the peer is bounded: the start line and headers together at most
/// ``maximumHeaderSize`` bytes, at most ``maximumHeaderCount`` headers, a body at most
/// ``maximumBodySize``. A message over a limit, or one that does not parse, is an error naming
/// the problem; the connection is then answered with a 4xx (400 or 413) and closed.
public struct RTSPMessageParser: Sendable {
    /// What came off the connection.
    public enum Element: Sendable, Hashable {
        /// A request or response.
        case message(RTSPMessage)
        /// An interleaved frame: its channel and payload.
        case interleaved(channel: UInt8, payload: [UInt8])
    }

    /// The longest start line plus headers accepted.
    public static let maximumHeaderSize = 16 << 10
    /// The most headers accepted in one message.
    public static let maximumHeaderCount = 64
    /// The largest body accepted (an SDP is a few hundred bytes).
    public static let maximumBodySize = 64 << 10

    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the blank line goes on (the bytes before it were searched): bytes
    /// that come one at a time are each looked at once, not the whole head again each time.
    private var scanned = 0
    /// A message whose head has been read, waiting for the rest of its body.
    private var head: (startLine: RTSPMessage.StartLine, headers: [(name: String, value: String)], length: Int, bodyStart: Int)?

    /// A parser for a new connection.
    public init() {}

    /// Bytes buffered that do not make a whole element yet.
    public var pendingByteCount: Int { buffer.count - start }

    /// Takes bytes from the connection; returns the elements they complete, in order.
    public mutating func append(_ bytes: some Sequence<UInt8>) throws(NetworkError) -> [Element] {
        buffer.append(contentsOf: bytes)
        var elements: [Element] = []
        while let element = try next() { elements.append(element) }
        if start > 4096, start > buffer.count / 2 {
            buffer.removeFirst(start)
            scanned = max(0, scanned - start)
            if let waiting = head { head?.bodyStart = waiting.bodyStart - start }
            start = 0
        }
        return elements
    }

    private mutating func next() throws(NetworkError) -> Element? {
        if let waiting = head {
            // The head was read: only the body's bytes are counted now.
            guard buffer.count - waiting.bodyStart >= waiting.length else { return nil }
            head = nil
            return finish(waiting)
        }
        // Line ends between messages are allowed (RFC 2326 §4 follows HTTP/1.1).
        while start < buffer.count, buffer[start] == 10 || (buffer[start] == 13 && (start + 1 == buffer.count || buffer[start + 1] == 10)) {
            if buffer[start] == 13, start + 1 == buffer.count { return nil }  // wait for its line feed
            start += 1
        }
        guard start < buffer.count else { return nil }
        if buffer[start] == UInt8(ascii: "$") {
            guard buffer.count - start >= 4 else { return nil }
            let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            guard buffer.count - start >= 4 + length else { return nil }
            let element = Element.interleaved(channel: buffer[start + 1], payload: Array(buffer[(start + 4)..<(start + 4 + length)]))
            start += 4 + length
            return element
        }
        guard let end = headerEnd() else {
            if buffer.count - start > Self.maximumHeaderSize {
                throw NetworkError(.tooLarge, "more than \(Self.maximumHeaderSize) bytes of RTSP headers (413)")
            }
            return nil
        }
        guard end.headerEnd - start <= Self.maximumHeaderSize else {
            throw NetworkError(.tooLarge, "\(end.headerEnd - start) bytes of RTSP headers: at most \(Self.maximumHeaderSize) (413)")
        }
        if let bare = (start..<end.headerEnd).first(where: { buffer[$0] == 13 && buffer[$0 + 1] != 10 }) {
            throw NetworkError(.invalidDescription, "a carriage return without a line feed, \(bare - start) bytes into an RTSP message (400)")
        }
        guard let text = String(validating: buffer[start..<end.headerEnd], as: UTF8.self) else {
            throw NetworkError(.invalidDescription, "RTSP headers that are not UTF-8 (400)")
        }
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { $0.trimmingSpaces() }
        guard !lines.isEmpty else { throw NetworkError(.invalidDescription, "an empty RTSP message (400)") }
        let first = lines.removeFirst()
        let startLine = try Self.startLine(first)
        guard lines.count <= Self.maximumHeaderCount else {
            throw NetworkError(.tooLarge, "\(lines.count) RTSP headers: at most \(Self.maximumHeaderCount) (413)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw NetworkError(.invalidDescription, "'\(line.prefix(80))' is not an RTSP header (400)")
            }
            headers.append((String(line[..<colon].trimmingSpaces()), String(line[line.index(after: colon)...].trimmingSpaces())))
        }
        var length = 0
        let lengths = headers.indices.filter { headers[$0].name.lowercased() == "content-length" }
        guard lengths.count <= 1 else { throw NetworkError(.invalidDescription, "\(lengths.count) Content-Length headers (400)") }
        if let index = lengths.first {
            let value = headers[index].value
            guard let parsed = Int(value), parsed >= 0 else { throw NetworkError(.invalidDescription, "Content-Length: \(value.prefix(40)) (400)") }
            guard parsed <= Self.maximumBodySize else { throw NetworkError(.tooLarge, "a \(parsed)-byte RTSP body: at most \(Self.maximumBodySize) (413)") }
            length = parsed
            headers[index].value = String(parsed)  // "007" is 7
        }
        let waiting = (startLine: startLine, headers: headers, length: length, bodyStart: end.bodyStart)
        guard buffer.count - end.bodyStart >= length else {
            head = waiting
            return nil
        }
        return finish(waiting)
    }

    /// The message whose head was read, now that its body is here.
    private mutating func finish(_ message: (startLine: RTSPMessage.StartLine, headers: [(name: String, value: String)], length: Int, bodyStart: Int)) -> Element {
        let body = Array(buffer[message.bodyStart..<(message.bodyStart + message.length)])
        start = message.bodyStart + message.length
        return .message(RTSPMessage(message.startLine, headers: message.headers, body: body))
    }

    /// Where the headers end (before the blank line) and the body starts, if the blank line has
    /// come; the search goes on from where the last one stopped.
    private mutating func headerEnd() -> (headerEnd: Int, bodyStart: Int)? {
        var index = max(start, scanned)
        let limit = min(buffer.count, start + Self.maximumHeaderSize + 4)
        while index < limit {
            if buffer[index] == 10 {
                if index + 1 < buffer.count, buffer[index + 1] == 10 { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == 13, buffer[index + 2] == 10 { return (index, index + 3) }
            }
            index += 1
        }
        // (A line feed in the last two bytes may yet start the blank line.)
        scanned = max(start, index - 2)
        return nil
    }

    static func startLine(_ line: Substring) throws(NetworkError) -> RTSPMessage.StartLine {
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        if fields.first?.hasPrefix("RTSP/") == true {
            guard fields[0] == "RTSP/1.0", fields.count >= 2, let status = Int(fields[1]), (100...999).contains(status) else {
                throw NetworkError(.invalidDescription, "'\(line.prefix(80))' is not an RTSP/1.0 status line (400)")
            }
            return .response(status: status, reason: fields.count > 2 ? String(fields[2]) : "")
        }
        guard fields.count == 3, fields[2] == "RTSP/1.0", fields[0].allSatisfy({ $0.isLetter || $0 == "_" }) else {
            throw NetworkError(.invalidDescription, "'\(line.prefix(80))' is not an RTSP/1.0 request line (400)")
        }
        return .request(method: String(fields[0]), url: String(fields[1]))
    }
}
