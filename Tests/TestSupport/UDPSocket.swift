#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on the loopback address for tests that exchange datagrams with ffmpeg or
/// GStreamer. It only ever binds and sends to 127.0.0.1.
public final class LoopbackUDPSocket: Sendable {
    private let descriptor: Int32
    /// The local port.
    public let port: UInt16

    /// A socket bound to 127.0.0.1 on `port` (0: any free port), with a receive timeout.
    public init(port: UInt16 = 0, receiveTimeout seconds: Int = 5) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.descriptor = descriptor
        guard descriptor >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
        var size: Int32 = 8 << 20
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = Self.loopback(port: port)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { close(descriptor); throw TestFailure("bind to 127.0.0.1:\(port) failed: errno \(errno)") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        self.port = UInt16(bigEndian: actual.sin_port)
    }

    deinit { close(descriptor) }

    /// Sends a datagram to 127.0.0.1:`port`.
    public func send(_ bytes: [UInt8], toPort port: UInt16) throws {
        var address = Self.loopback(port: port)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard sent == bytes.count else { throw TestFailure("sendto 127.0.0.1:\(port) failed: errno \(errno)") }
    }

    /// The next datagram, or nil when none came within the receive timeout.
    public func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count >= 0 ? Array(buffer[..<count]) : nil
    }

    /// The next datagram and the port it came from, or nil when none came within the receive timeout.
    public func receiveWithSource() -> (bytes: [UInt8], port: UInt16)? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &source) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, raw.baseAddress, raw.count, 0, $0, &length) } }
        }
        return count >= 0 ? (Array(buffer[..<count]), UInt16(bigEndian: source.sin_port)) : nil
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// Whether some process has a UDP socket bound to `port` on this host (from /proc/net/udp),
/// to wait until a receiver under test is listening.
public func udpPortIsBound(_ port: UInt16) -> Bool {
    guard let file = fopen("/proc/net/udp", "r") else { return false }
    defer { fclose(file) }
    let suffix = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4) + " "
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = text.split(separator: " ")
        if fields.count > 1, (fields[1] + " ").hasSuffix(suffix) { return true }
    }
    return false
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// A port P with P and P + 1 free on this host (RTP and RTCP), P even as RFC 3550 asks; with
/// `count` pairs, the ports up to P + 2 × count − 1 (video and audio: P to P + 3).
public func freeUDPPortPair(count: Int = 1) throws -> Int {
    for _ in 0..<100 {
        let port = UInt16.random(in: serverPortRange) & ~1
        if (0..<UInt16(2 * count)).allSatisfy({ !udpPortIsBound(port + $0) }) { return Int(port) }
    }
    throw TestFailure("no \(2 * count) free UDP ports in a row on 127.0.0.1")
}
