import Dispatch
import Foundation
import H264Network
import Synchronization
import TestSupport
import Testing

/// ffmpeg as an RTP receiver: it reads the session at `sdpPath` (listening on `port`) and writes
/// `output` (its output arguments); `send` runs once its socket is bound, sending from the
/// socket given and returning the stream's SSRC and its packet and octet counts; then a sender
/// report and a BYE go to `port + 1`, which ends ffmpeg. Bounded by `timeout` (30 s).
func ffmpegReceiving(sdpPath: String, port: UInt16, output: [String],
                     send: (LoopbackUDPSocket) throws -> (ssrc: UInt32, packets: Int, octets: Int)) throws -> ProcessResult {
    let received = Mutex<ProcessResult?>(nil)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let result = try? run("timeout", ["30", "ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-buffer_size", "4194304", "-i", sdpPath] + output)
        received.withLock { $0 = result }
        done.signal()
    }
    var waited = 0
    while !udpPortIsBound(port), waited < 6000 { usleep(10_000); waited += 1 }
    try #require(udpPortIsBound(port), "ffmpeg never listened on 127.0.0.1:\(port)")
    let socket = try LoopbackUDPSocket()
    let sent = try send(socket)
    // ffmpeg ends at the BYE and drops RTP it has not read yet (another socket): on a loaded
    // machine it lags, so the BYE waits until the packets have surely been read.
    usleep(500_000)
    let bye = RTCPPacket.serialize([
        .senderReport(.init(ssrc: sent.ssrc, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: UInt32(sent.packets), octetCount: UInt32(sent.octets))),
        .goodbye(.init(sources: [sent.ssrc])),
    ])
    try socket.send(bye, toPort: port + 1)
    done.wait()
    return try #require(received.withLock { $0 })
}
