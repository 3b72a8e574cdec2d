import Foundation
@testable import H264Streaming
import H264Network
import NIOCore
import NIOPosix
import Synchronization
import TestSupport
import Testing

/// One client's copy of a stream (``RTPSubscriber``) over real UDP sockets on loopback: the
/// order in which its RTP packets and its RTCP BYE reach the client.
@Suite("RTPSubscriber over UDP", .timely)
struct RTPSubscriberTests {
    /// Every datagram a socket receives, with when.
    final class Arrivals: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let received = Mutex<[(at: ContinuousClock.Instant, bytes: [UInt8])]>([])

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            let bytes = Array(envelope.data.readableBytesView)
            received.withLock { $0.append((ContinuousClock.now, bytes)) }
        }
    }

    static func receiver(on group: any EventLoopGroup) async throws -> (any Channel, Arrivals) {
        let arrivals = Arrivals()
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(arrivals) } }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, arrivals)
    }

    @Test("the BYE follows the last RTP packets by half a second, even when the RTP socket's event loop is a second behind (CI saw a BYE overtake the stream's end: GStreamer stopped 32 frames short)")
    func goodbyeFollowsThePackets() async throws {
        // The server's two sockets on two event loops, as the server's shared group places them.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let rtp = try await DatagramBootstrap(group: loops[0]).bind(host: "127.0.0.1", port: 0).get()
        let rtcp = try await DatagramBootstrap(group: loops[1]).bind(host: "127.0.0.1", port: 0).get()
        // The client's on a loop of its own (arrivals timed as read: no other test's work before them).
        let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (clientRTP, packets) = try await Self.receiver(on: clientGroup)
        let (clientRTCP, reports) = try await Self.receiver(on: clientGroup)
        let subscriber = RTPSubscriber(id: "client", transport: .udp(rtp: rtp, rtcp: rtcp, rtpAddress: try #require(clientRTP.localAddress),
                                                                     rtcpAddress: try #require(clientRTCP.localAddress)),
                                       ssrc: 0x1234, payloadType: 96, initialSequenceNumber: 100, initialTimestamp: 0)
        // The RTP socket's loop busy for a second (other channels' work on it), then five access
        // units and the end of the stream, handed on from elsewhere as a player does.
        loops[0].execute { usleep(1_000_000) }
        for number in 0..<5 {
            let packet = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0, timestamp: 0, ssrc: 0, payload: [0x65, UInt8(number)])
            subscriber.deliver(PacketizedUnit(packets: [packet], timestamp: UInt32(number * 3000), isSync: true))
        }
        subscriber.goodbye()
        func goodbyes() -> [ContinuousClock.Instant] {
            reports.received.withLock { $0 }.filter { arrival in
                (try? RTCPPacket.parse(compound: arrival.bytes))?.contains { if case .goodbye = $0 { true } else { false } } ?? false
            }.map(\.at)
        }
        for _ in 0..<500 where goodbyes().isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        let bye = try #require(goodbyes().first, "no BYE within 5 s")
        let arrived = packets.received.withLock { $0 }
        #expect(arrived.count == 5, "\(arrived.count) RTP packets of 5")
        let last = try #require(arrived.last?.at)
        // Half a second after the last packet is written; read here a little later at most
        // (a margin for the reading thread's scheduling on a busy machine).
        #expect(bye - last >= .milliseconds(300), "the BYE came \(bye - last) after the last RTP packet (half a second is meant)")
        #expect(goodbyes().count == 1)
        for channel in [rtp, rtcp, clientRTP, clientRTCP] { try await channel.close() }
        try await group.shutdownGracefully()
        try await clientGroup.shutdownGracefully()
    }
}
