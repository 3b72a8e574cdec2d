import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A plain blocking HTTP/WebSocket client to 127.0.0.1 for tests that misbehave on purpose: a
/// page that never reads, sends nonsense or too much, or asks for paths outside the server's.
final class RawWebSocket: @unchecked Sendable {
    let descriptor: Int32
    /// The HTTP status of the upgrade request (101 when it became a WebSocket).
    private(set) var status = 0
    private var buffered: [UInt8] = []

    /// Connects; `path` nil leaves the connection plain (for ``request(_:)``). Each read waits
    /// up to `receiveTimeout` seconds (a server beside the whole suite on two cores can take
    /// seconds to answer).
    init(port: Int, path: String? = "/stream", receiveBuffer: Int32? = nil, receiveTimeout: Int = 30) throws {
        descriptor = try loopbackTCPConnection(port: port, receiveBuffer: receiveBuffer, receiveTimeout: receiveTimeout)
        if let path {
            let head = try request("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                   + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", readsBody: false)
            status = head.status
        }
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Sends a raw HTTP request; the response's status and (unless `readsBody` is false) its
    /// body as far as `Content-Length` says.
    @discardableResult
    func request(_ text: String, readsBody: Bool = true) throws -> (status: Int, body: String) {
        send(Array(text.utf8))
        while true {
            if let end = buffered.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffered[..<end.lowerBound], as: UTF8.self)
                buffered.removeSubrange(..<end.upperBound)
                let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                guard readsBody else { return (status, "") }
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffered.count < length, fill() {}
                let body = String(decoding: buffered.prefix(length), as: UTF8.self)
                buffered.removeFirst(min(length, buffered.count))
                return (status, body)
            }
            guard fill() else { throw TestFailure(errno == EAGAIN ? "no response within the receive timeout" : "the connection ended before a response") }
        }
    }

    /// Reads more bytes; false at the end, an error or the receive timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var count = -1
        repeat {
            count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        } while count < 0 && errno == EINTR
        guard count > 0 else { return false }
        buffered += chunk[..<count]
        return true
    }

    /// The next frame from the server (unmasked): its opcode (1 text, 2 binary, 8 close) and
    /// payload; nil at the end of the connection or the receive timeout.
    func readFrame() -> (opcode: UInt8, payload: [UInt8])? {
        while true {
            if buffered.count >= 2 {
                let opcode = buffered[0] & 0x0F
                var length = Int(buffered[1] & 0x7F), header = 2
                if length == 126, buffered.count >= 4 {
                    length = Int(buffered[2]) << 8 | Int(buffered[3])
                    header = 4
                } else if length == 127, buffered.count >= 10 {
                    length = buffered[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    header = 10
                }
                if length < 126 || header > 2, buffered.count >= header + length {
                    let payload = Array(buffered[header..<(header + length)])
                    buffered.removeFirst(header + length)
                    return (opcode, payload)
                }
            }
            guard fill() else { return nil }
        }
    }

    /// Sends one frame, masked as a client must.
    func sendFrame(opcode: UInt8, _ payload: [UInt8]) {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $1 ^ mask[$0 % 4] }
        send(frame)
    }

    /// The code of the close frame the server sends next (other frames skipped); nil when the
    /// connection ends or times out without one.
    func closeCode() -> Int? {
        while let frame = readFrame() {
            if frame.opcode == 8 { return frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : 1005 }
        }
        return nil
    }
}
