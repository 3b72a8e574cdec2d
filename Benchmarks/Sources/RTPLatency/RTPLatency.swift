// RTP figures of issue #17, on a 1080p file (Benchmarks/rtp-latency.sh makes one and runs this):
//   1. packetize + depacketize throughput on one core: every access unit through H264Packetizer,
//      each packet's bytes through H264Depacketizer (what a sender and a receiver do), repeated for
//      two seconds; the figure is the access units' payload in Gbit/s.
//   2. added latency over loopback at 30 fps: a sender thread packetizes each access unit and sends
//      its packets with sendto(2), noting the time after the last one; an RTPReceiver in the same
//      process (low latency: no frame held for its duration) notes when it hands the sample to its
//      consumer. The difference per access unit: p50, p95, p99, max.
//   RTPLatency FILE [FRAMES]
import Dispatch
import Foundation
import H264Kit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

@main
struct RTPLatency {
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: RTPLatency FILE [FRAMES]\n".utf8))
            exit(2)
        }
        let frames = arguments.count > 2 ? Int(arguments[2]) ?? 300 : 300
        let source = try MediaSource(path: arguments[1])
        var samples: [SampleBuffer] = []
        while samples.count < frames, let sample = try source.next() { samples.append(sample) }
        guard let first = samples.first else { exit(1) }
        print("\(samples.count) access units of \(first.videoFormatDescription!.width)x\(first.videoFormatDescription!.height), "
              + "\(samples.reduce(0) { $0 + $1.data.count } / samples.count) bytes on average")
        throughput(samples)
        try await latency(samples)
    }

    /// Packetize + depacketize on this thread for two seconds.
    static func throughput(_ samples: [SampleBuffer]) {
        var packetizer = try! H264Packetizer()
        var depacketizer = H264Depacketizer(configuration: .init(reorderDepth: 0, resumesAtSyncSample: false))
        var bytes = 0, units = 0, packets = 0
        let wallStart = nanoseconds(), cpuStart = threadCPUSeconds()
        repeat {
            for sample in samples {
                for packet in try! packetizer.packets(for: sample) {
                    let datagram = packet.bytes
                    units += datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) }.count
                    packets += 1
                }
                bytes += sample.data.count
            }
        } while nanoseconds() - wallStart < 2_000_000_000
        let cpu = threadCPUSeconds() - cpuStart
        let wall = Double(nanoseconds() - wallStart) / 1e9
        print(String(format: "packetize + depacketize: %d access units, %d packets, %.2f Gbit/s of payload per core (%.2f s of CPU, %.2f s wall)",
                     units, packets, Double(bytes) * 8 / cpu / 1e9, cpu, wall))
    }

    /// Sends at 30 fps to an RTPReceiver in this process; prints the latency percentiles.
    static func latency(_ samples: [SampleBuffer]) async throws {
        final class Times: Sendable {
            let sent = Mutex<[Int64: UInt64]>([:])
            let handed = Mutex<[Int64: UInt64]>([:])
        }
        let times = Times()
        let socket = try LoopbackSender()
        let port = Int(socket.port) + 2
        var options = RTPReceiver.Options(idleTimeout: .seconds(2))
        options.isLowLatency = true
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: options)
        let receiving = Task {
            try await receiver.receive { sample in
                let now = nanoseconds()
                times.handed.withLock { $0[sample.presentationTime.converted(toTimescale: 90_000, rounding: .halfAwayFromZero).value] = now }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        // The sender: a thread of its own, 30 access units a second.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                var packetizer = try! H264Packetizer()
                let start = nanoseconds()
                for (index, sample) in samples.enumerated() {
                    let due = start + UInt64(index) * 1_000_000_000 / 30
                    while nanoseconds() < due { usleep(UInt32(min(1000, (due - nanoseconds()) / 1000 + 1))) }
                    for packet in try! packetizer.packets(for: sample) { socket.send(packet.bytes, to: UInt16(port)) }
                    let now = nanoseconds()
                    times.sent.withLock { $0[sample.presentationTime.converted(toTimescale: 90_000, rounding: .halfAwayFromZero).value] = now }
                }
                continuation.resume()
            }
        }
        let report = try await receiving.value
        let sent = times.sent.withLock { $0 }, handed = times.handed.withLock { $0 }
        let latencies = sent.compactMap { key, at in handed[key].map { Double(Int64($0) - Int64(at)) / 1e6 } }.sorted()
        guard !latencies.isEmpty else { print("no sample received"); return }
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)] }
        print(String(format: "latency at 30 fps, last packet sent -> sample handed on: %d of %d access units, p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms",
                     latencies.count, sent.count, percentile(0.5), percentile(0.95), percentile(0.99), latencies.last!))
        print("receiver: \(report.depacketizer.packetsReceived) packets, \(report.depacketizer.packetsLost) lost")
    }
}

/// A UDP socket on 127.0.0.1 that sends.
final class LoopbackSender: Sendable {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port) & ~1
    }

    func send(_ bytes: [UInt8], to port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
    }
}
