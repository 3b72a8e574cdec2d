import H264Network
import Testing

@Suite("RTSPMessageParser and RTSPTransport")
struct RTSPMessageTests {
    /// ffmpeg's requests and a camera-like response, with an interleaved RTP frame between.
    static let conversation: [UInt8] = Array((
        "OPTIONS rtsp://127.0.0.1:8554/live RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: Lavf59.27.100\r\n\r\n"
        + "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Base: rtsp://127.0.0.1:8554/live/\r\nContent-Type: application/sdp\r\nContent-Length: 21\r\n\r\n"
        + "v=0\r\ns=x\r\nt=0 0\r\nm=\r\n"
    ).utf8) + [0x24, 0x00, 0x00, 0x03, 0x80, 0x60, 0x00]
        + Array("\r\nSETUP rtsp://127.0.0.1:8554/live/trackID=0 RTSP/1.0\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1\nCSeq: 3\n\n".utf8)

    static func parse(_ bytes: [UInt8], chunk: Int) throws -> [RTSPMessageParser.Element] {
        var parser = RTSPMessageParser()
        var elements: [RTSPMessageParser.Element] = []
        var index = 0
        while index < bytes.count {
            elements += try parser.append(bytes[index..<min(bytes.count, index + chunk)])
            index += chunk
        }
        #expect(parser.pendingByteCount == 0)
        return elements
    }

    @Test(arguments: [1, 2, 7, 64, 10_000]) func theSameElementsHoweverTheBytesAreCut(chunk: Int) throws {
        let elements = try Self.parse(Self.conversation, chunk: chunk)
        #expect(elements.count == 4)
        guard elements.count == 4, case .message(let options) = elements[0], case .message(let describe) = elements[1],
              case .interleaved(let channel, let payload) = elements[2], case .message(let setup) = elements[3] else { return }
        #expect(options.startLine == .request(method: "OPTIONS", url: "rtsp://127.0.0.1:8554/live") && options.sequenceNumber == 1)
        #expect(describe.startLine == .response(status: 200, reason: "OK") && describe.body.count == 21 && describe["content-type"] == "application/sdp")
        #expect(channel == 0 && payload == [0x80, 0x60, 0x00])
        #expect(setup["Transport"] == "RTP/AVP/TCP;unicast;interleaved=0-1" && setup.sequenceNumber == 3)
        // Written and parsed again: the same message.
        #expect(try Self.parse(describe.bytes, chunk: 5) == [.message(describe)])
    }

    @Test func oversizedAndMalformedMessagesAreErrors() {
        var huge = RTSPMessageParser()
        #expect(throws: NetworkError.self) { _ = try huge.append(Array("OPTIONS * RTSP/1.0\r\nX: ".utf8) + [UInt8](repeating: 65, count: 20_000)) }
        var bigBody = RTSPMessageParser()
        #expect(throws: NetworkError.self) { _ = try bigBody.append(Array("ANNOUNCE rtsp://h/x RTSP/1.0\r\nContent-Length: 99999999\r\n\r\n".utf8)) }
        var notText = RTSPMessageParser()
        #expect(throws: NetworkError.self) { _ = try notText.append(Array("OPTIONS * RTSP/1.0\r\nCSeq: ".utf8) + [0xFF, 0xFE] + Array("\r\n\r\n".utf8)) }
        for text in ["GET / HTTP/1.1\r\n\r\n", "OPTIONS\r\n\r\n", "RTSP/2.0 200 OK\r\n\r\n", "OPTIONS * RTSP/1.0\r\nno colon here\r\n\r\n",
                     "OPTIONS * RTSP/1.0\r\nContent-Length: -1\r\n\r\n"] {
            var parser = RTSPMessageParser()
            #expect(throws: NetworkError.self, "\(text)") { _ = try parser.append(Array(text.utf8)) }
        }
    }

    @Test func transportsOfferedByFFmpegAndGStreamer() throws {
        let udp = try RTSPTransport.parse(header: "RTP/AVP/UDP;unicast;client_port=30000-30001")
        #expect(udp == [RTSPTransport(lower: .udp, clientPorts: 30000...30001)])
        let offers = try RTSPTransport.parse(header: "RTP/AVP;unicast;client_port=5000-5001;mode=\"PLAY\",RTP/AVP/TCP;unicast;interleaved=0-1")
        #expect(offers.map(\.lower) == [.udp, .tcp] && offers[1].interleaved == 0...1)
        let reply = RTSPTransport(lower: .udp, clientPorts: 5000...5001, serverPorts: 6000...6001, ssrc: 0xDEAD)
        #expect(try RTSPTransport.parse(header: reply.description) == [reply])
        #expect(throws: NetworkError.self) { _ = try RTSPTransport.parse(header: "RAW/RAW/UDP;unicast") }
        #expect(try RTSPTransport.parse(header: "RTP/AVP;=;;unicast").first?.otherParameters == ["="])  // (trapped once: FuzzRTSP)
        #expect(throws: NetworkError.self) { _ = try RTSPTransport.parse(header: "RTP/AVP;client_port=70000-70001") }
    }
}
