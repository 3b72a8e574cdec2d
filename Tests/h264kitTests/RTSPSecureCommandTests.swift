import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stream … rtsps://` and `receive rtsps://…`: RTSP over TLS, the packets interleaved in it.
extension RTSPCommandTests {
    @Test("stream FILE rtsps:// (--cert, --key, --secret-file) serves RTSP over TLS: ffmpeg plays the signed URL to the source's frames, unsigned is 403; receive rtsps:// --cacert records it; without trusting the certificate it fails clearly; SIGHUP reloads",
          .requires(.openssl))
    func serveAndPlayOverTLS() throws {
        let work = Self.temporaryPath("-rtsps")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let certificate = try SelfSignedCertificate(in: work)
        let secret = work + "/secret"
        try Data("an RTSPS test's secret, 32 bytes".utf8).write(to: URL(fileURLWithPath: secret))
        let port = try freeTCPPort()
        let plain = "rtsps://127.0.0.1:\(port)/live"
        let server = try ChildProcess(try h264kitURL(), ["stream", Self.source, plain, "--loop", "--cert", certificate.certificate, "--key", certificate.privateKey,
                                                         "--secret-file", secret])
        var ended = false
        defer { if !ended { kill(server.pid, SIGKILL); _ = server.wait() } }
        try Self.waitUntilListening(port)
        let signedURL = try h264kit(["sign", plain, "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(signedURL.hasPrefix("rtsps://127.0.0.1:\(port)/token."), "\(signedURL)")

        // ffmpeg (its TLS does not check the certificate unless asked): the signed URL plays, 90 frames of the loop.
        let played = try run("timeout", ["30", "ffmpeg", "-v", "error", "-i", signedURL, "-map", "0:v:0", "-frames:v", "90", "-f", "framemd5", "-"])
        #expect(played.status == 0 && framemd5Hashes(played.stdoutText).count == 90, "\(played.stderrText)")
        let refused = try run("timeout", ["30", "ffmpeg", "-v", "error", "-i", plain, "-f", "null", "-"])
        #expect(refused.status != 0 && refused.stderrText.contains("403"), "\(refused.stderrText)")

        let movie = Self.temporaryPath(".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let received = try h264kit(["receive", signedURL, movie, "--cacert", certificate.certificate, "--frames", "60"])
        #expect(received.status == 0 && received.stderr.contains("60 samples"), "\(received.stderr)")
        #expect(try ffmpegFrameHashes(movie).count == 60)
        // Not trusted (the system's store): an error that says so, no recording.
        let untrusted = try h264kit(["receive", signedURL, Self.temporaryPath(".mp4"), "--frames", "10"])
        #expect(untrusted.status != 0 && untrusted.stderr.lowercased().contains("certificate"), "\(untrusted.stderr)")
        // The certificate renewed on SIGHUP: a new connection gets the new one.
        let renewed = try SelfSignedCertificate(in: work, name: "renewed")
        try FileManager.default.removeItem(atPath: certificate.certificate)
        try FileManager.default.removeItem(atPath: certificate.privateKey)
        try FileManager.default.copyItem(atPath: renewed.certificate, toPath: certificate.certificate)
        try FileManager.default.copyItem(atPath: renewed.privateKey, toPath: certificate.privateKey)
        kill(server.pid, SIGHUP)
        var reloaded = false
        for _ in 0..<200 where !reloaded { usleep(25_000); reloaded = server.stderrText.contains("reloaded") }
        #expect(reloaded, "\(server.stderrText)")
        let again = try h264kit(["receive", signedURL, movie, "--cacert", renewed.certificate, "--frames", "30"])
        #expect(again.status == 0, "\(again.stderr)")
        kill(server.pid, SIGINT)
        ended = true
        #expect(server.wait() == 0, "\(server.stderrText)")
    }
}
