/// One transport of an RTSP `Transport` header (RFC 2326 §12.39): RTP over UDP with its port
/// pairs, or interleaved in the RTSP connection (`RTP/AVP/TCP;interleaved=0-1`).
public struct RTSPTransport: Sendable, Hashable, CustomStringConvertible {
    /// How the packets travel.
    public enum Lower: Sendable, Hashable {
        /// UDP datagrams (`RTP/AVP` or `RTP/AVP/UDP`).
        case udp
        /// Inside the RTSP TCP connection (`RTP/AVP/TCP`).
        case tcp
    }

    /// UDP or TCP.
    public var lower: Lower
    /// Multicast rather than unicast.
    public var isMulticast: Bool
    /// The client's RTP and RTCP ports (UDP).
    public var clientPorts: ClosedRange<Int>?
    /// The server's RTP and RTCP ports (UDP).
    public var serverPorts: ClosedRange<Int>?
    /// The interleaved channels for RTP and RTCP (TCP).
    public var interleaved: ClosedRange<Int>?
    /// The sender's SSRC, as the server announces it.
    public var ssrc: UInt32?
    /// `mode=record` (the client sends, after ANNOUNCE) rather than play.
    public var isRecord: Bool
    /// Parameters kept as they came but not interpreted (`ttl`, `destination`, ...).
    public var otherParameters: [String]

    /// A transport.
    public init(lower: Lower, isMulticast: Bool = false, clientPorts: ClosedRange<Int>? = nil, serverPorts: ClosedRange<Int>? = nil,
                interleaved: ClosedRange<Int>? = nil, ssrc: UInt32? = nil, isRecord: Bool = false, otherParameters: [String] = []) {
        self.lower = lower
        self.isMulticast = isMulticast
        self.clientPorts = clientPorts
        self.serverPorts = serverPorts
        self.interleaved = interleaved
        self.ssrc = ssrc
        self.isRecord = isRecord
        self.otherParameters = otherParameters
    }

    /// The transports a `Transport` header offers, in order of preference. Transports other
    /// than RTP/AVP are passed over; none left is an error.
    public static func parse(header: String) throws(NetworkError) -> [RTSPTransport] {
        var result: [RTSPTransport] = []
        for offer in header.split(separator: ",") {
            let parameters = offer.split(separator: ";").map { $0.trimmingSpaces() }
            guard let spec = parameters.first else { continue }
            let lower: Lower
            switch spec.uppercased() {
            case "RTP/AVP", "RTP/AVP/UDP": lower = .udp
            case "RTP/AVP/TCP": lower = .tcp
            default: continue
            }
            var transport = RTSPTransport(lower: lower)
            for parameter in parameters.dropFirst() where !parameter.isEmpty {
                let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = pair[0].lowercased()
                let value = pair.count > 1 ? pair[1] : ""
                switch name {
                case "unicast": transport.isMulticast = false
                case "multicast": transport.isMulticast = true
                case "client_port": transport.clientPorts = try Self.range(value, in: 0...65535, name: name)
                case "server_port": transport.serverPorts = try Self.range(value, in: 0...65535, name: name)
                case "interleaved": transport.interleaved = try Self.range(value, in: 0...255, name: name)
                case "ssrc":
                    guard let ssrc = UInt32(value, radix: 16) else { throw NetworkError(.invalidDescription, "Transport: ssrc=\(value.prefix(20)) (400)") }
                    transport.ssrc = ssrc
                case "mode": transport.isRecord = value.trimmingCharacters(in: "\"").lowercased() == "record"
                default: transport.otherParameters.append(String(parameter))
                }
            }
            result.append(transport)
        }
        guard !result.isEmpty else { throw NetworkError(.unsupported, "Transport: \(header.prefix(80)): no RTP/AVP transport (461)") }
        return result
    }

    /// `5000-5001` or `5000` (then the pair is 5000-5001).
    static func range(_ text: Substring, in bounds: ClosedRange<Int>, name: String) throws(NetworkError) -> ClosedRange<Int> {
        let parts = text.split(separator: "-", maxSplits: 1).compactMap { Int($0.trimmingSpaces()) }
        guard let low = parts.first, bounds.contains(low) else { throw NetworkError(.invalidDescription, "Transport: \(name)=\(text.prefix(20)) (400)") }
        let high = parts.count > 1 ? parts[1] : low + 1
        guard high >= low, bounds.contains(high) else { throw NetworkError(.invalidDescription, "Transport: \(name)=\(text.prefix(20)) (400)") }
        return low...high
    }

    /// The transport as a `Transport` header value.
    public var description: String {
        var parts = [lower == .tcp ? "RTP/AVP/TCP" : "RTP/AVP", isMulticast ? "multicast" : "unicast"]
        if let clientPorts { parts.append("client_port=\(clientPorts.lowerBound)-\(clientPorts.upperBound)") }
        if let serverPorts { parts.append("server_port=\(serverPorts.lowerBound)-\(serverPorts.upperBound)") }
        if let interleaved { parts.append("interleaved=\(interleaved.lowerBound)-\(interleaved.upperBound)") }
        if let ssrc { parts.append("ssrc=" + String(UInt64(ssrc) | 0x1_0000_0000, radix: 16).dropFirst().uppercased()) }
        if isRecord { parts.append("mode=record") }
        return (parts + otherParameters).joined(separator: ";")
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var result = self
        while result.first == set { result = result.dropFirst() }
        while result.last == set { result = result.dropLast() }
        return result
    }
}
