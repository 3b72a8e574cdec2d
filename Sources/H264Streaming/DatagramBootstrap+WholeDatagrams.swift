import NIOCore
import NIOPosix

extension DatagramBootstrap {
    /// The largest UDP payload (65,535 less the IPv4 and UDP headers): an RTP packet of
    /// packetization mode 0 can be that large.
    static let largestDatagram = 65_507

    /// Reads up to `count` datagrams a system call (`recvmmsg`), each whole: SwiftNIO gives each
    /// message of a vector read an equal part of the receive buffer, so the buffer must hold
    /// `count` of the largest datagram (a 64 KiB buffer read 8 at a time cut every datagram
    /// past 8 KiB: a mode-0 IDR picture of a 720p stream).
    func readingWholeDatagrams(_ count: Int) -> DatagramBootstrap {
        channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536 * count))
            .channelOption(.datagramVectorReadMessageCount, value: count)
    }
}
