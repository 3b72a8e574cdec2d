import Foundation
import H264Network
import H264Streaming
import SampleFlow
import TestSupport
import Testing

/// RTSP over TLS (`rtsps://`): the server and the client, the packets interleaved in the TLS
/// connection.
extension RTSPTests {
    @Test("rtsps://: RTSPClient plays our server over TLS (TCP interleaved) to the source's frames, the certificate checked against a trusted file; ffmpeg plays it; the system's trust, plain RTSP to the TLS port and UDP each fail clearly, counted",
          .requires(.openssl))
    func overTLS() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtsps-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let certificate = try SelfSignedCertificate(in: work)
        var options = RTSPServer.Options()
        options.tls = TLSFiles(certificateChain: certificate.certificate, privateKey: certificate.privateKey)
        let (server, task, port) = try await Self.startServer(.file(path: Self.source), options: options)
        defer { task.cancel() }
        let url = try RTSPURL(parsing: "rtsps://127.0.0.1:\(port)/live")
        #expect(url.isSecure && "\(url)" == "rtsps://127.0.0.1:\(port)/live")

        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        var trusted = RTSPClient.Options()
        trusted.trust = .certificates(file: certificate.certificate)
        let report = try await RTSPClient(url: url, options: trusted).record(to: .init(path: movie))
        #expect(report.ending == .goodbye && report.samples == 90 && report.depacketizer.packetsLost == 0, "\(report)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))

        // ffmpeg: rtsps:// (TCP interleaved; its TLS does not check the certificate by default).
        let played = try await Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-i", "\(url)", "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        #expect(played.status == 0, "\(played.stderrText)")
        #expect(framemd5Hashes(played.stdoutText) == (try ffmpegFrameHashes(Self.source)))

        // The system's trust store does not hold the test's certificate: the handshake fails.
        await #expect(throws: StreamingError.self) { try await RTSPClient(url: url).record(to: .init(path: movie)) }
        // Plain RTSP to the TLS port: the server sees no ClientHello and closes.
        var plain = RTSPClient.Options(transport: .tcp, responseTimeout: .seconds(5))
        plain.receiver.idleTimeout = .seconds(5)
        await #expect(throws: StreamingError.self) { try await RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: plain).record(to: .init(path: movie)) }
        // UDP would send the packets in the clear: the client refuses before connecting.
        var udp = trusted
        udp.transport = .udp
        await #expect { try await RTSPClient(url: url, options: udp).record(to: .init(path: movie)) } throws: { "\($0)".contains("TLS") }
        let statistics = server.statistics
        #expect(statistics.tlsHandshakes >= 2 && statistics.tlsHandshakesFailed >= 2 && statistics.sessionsPlayed == 2, "\(statistics)")
    }
}
