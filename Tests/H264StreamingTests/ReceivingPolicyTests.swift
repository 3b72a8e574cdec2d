import H264Streaming
import Testing

/// The receive loops' shared policy, rule by rule, with the caller's clock.
@Suite("ReceivingPolicy: when a receiver's stream ends")
struct ReceivingPolicyTests {
    @Test("idle: a datagram of either kind resets the quiet; past the idle timeout it ends, and stays ended")
    func idle() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 2), now: 100)
        #expect(policy.tick(now: 101.9) { _ in false } == .goOn)
        policy.arrived(at: 101.5, isRTP: false)
        #expect(policy.quiet(at: 103) == 1.5 && !policy.anyRTP)
        #expect(policy.tick(now: 103.4) { _ in false } == .goOn)
        #expect(policy.tick(now: 103.6) { _ in false } == .end(.idleTimeout))
        policy.arrived(at: 103.7, isRTP: true)
        #expect(policy.tick(now: 103.8) { _ in false } == .end(.idleTimeout) && policy.ending == .idleTimeout)
    }

    @Test("a stall of the receiving process (ticks 3 s apart where they come every 10 ms) is not quiet: the idle and UDP timeouts count only the time the loop ran")
    func stallIsNotQuiet() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 2, udpTimeout: 1, stallThreshold: 0.5), now: 0)
        #expect(policy.tick(now: 0.01, overUDP: true) { _ in false } == .goOn)
        #expect(policy.tick(now: 3.01, overUDP: true) { _ in false } == .goOn && abs(policy.stalledSeconds - 3) < 1e-9)
        #expect(policy.quiet(at: 3.01) < 0.02)
        // Then time the loop runs counts: the UDP timeout first, then the idle one.
        var now = 3.01
        while now < 4.2 { now += 0.01; if policy.tick(now: now, overUDP: true, isOver: { _ in false }) == .fallBackToTCP { break } }
        #expect(now > 4.0 && now < 4.1, "fell back at \(now)")
        var unguarded = ReceivingPolicy(configuration: .init(idleTimeout: 2), now: 0)
        #expect(unguarded.tick(now: 0.01) { _ in false } == .goOn)
        #expect(unguarded.tick(now: 3.01) { _ in false } == .end(.idleTimeout) && unguarded.stalledSeconds == 0)
    }

    @Test("the sender's BYE: ended when its session says so, given the quiet; before the idle rule")
    func goodbye() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 0.5), now: 0)
        policy.arrived(at: 1, isRTP: true)
        var asked: [Double] = []
        #expect(policy.tick(now: 1.05) { asked.append($0); return false } == .goOn)
        #expect(policy.tick(now: 2) { asked.append($0); return $0 > 0.1 } == .end(.goodbye))
        #expect(asked.map { ($0 * 1000).rounded() } == [50, 1000], "the quiet given: \(asked)")
    }

    @Test("the sample limit: the pictures admitted stop at it, and reaching it ends the stream")
    func sampleLimit() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 5, sampleLimit: 10), now: 0)
        #expect(policy.admitted(4) == 4 && policy.handed(4) == .goOn)
        #expect(policy.admitted(8) == 6)
        #expect(policy.handed(6) == .end(.sampleLimit) && policy.delivered == 10 && policy.admitted(3) == 0)
        var unlimited = ReceivingPolicy(configuration: .init(idleTimeout: 5), now: 0)
        #expect(unlimited.admitted(1_000) == 1_000 && unlimited.handed(1_000) == .goOn)
    }

    @Test("RTSP over UDP with no RTP: falls back to TCP after the UDP timeout (RTCP alone does not count); never over TCP, nor once RTP came")
    func udpFallback() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 10, udpTimeout: 3), now: 0)
        policy.arrived(at: 2, isRTP: false)
        #expect(policy.tick(now: 2.9, overUDP: true) { _ in false } == .goOn)
        #expect(policy.tick(now: 3.1, overUDP: false) { _ in false } == .goOn)
        #expect(policy.tick(now: 3.1, overUDP: true) { _ in false } == .fallBackToTCP)
        var flowing = ReceivingPolicy(configuration: .init(idleTimeout: 10, udpTimeout: 3), now: 0)
        flowing.arrived(at: 1, isRTP: true)
        #expect(flowing.tick(now: 4, overUDP: true) { _ in false } == .goOn)
        var last = ReceivingPolicy(configuration: .init(idleTimeout: 10), now: 0)  // (no fallback left)
        #expect(last.tick(now: 4, overUDP: true) { _ in false } == .goOn)
    }

    @Test("keep-alives every interval while the stream goes on; a publisher's TEARDOWN ends it once its last packets had their settle time; closing and cancelling end it")
    func keepAliveTeardownAndClose() {
        var policy = ReceivingPolicy(configuration: .init(idleTimeout: 100, keepAliveInterval: 30), now: 0)
        var sent = 0
        for second in stride(from: 1.0, through: 95, by: 1) {
            policy.arrived(at: second, isRTP: true)
            if policy.tick(now: second, isOver: { _ in false }) == .sendKeepAlive { sent += 1 }
        }
        #expect(sent == 3)
        var publisher = ReceivingPolicy(configuration: .init(idleTimeout: 5), now: 0)
        publisher.tornDown(at: 10)
        publisher.tornDown(at: 10.2)  // (the first counts)
        #expect(publisher.tick(now: 10.2) { _ in true } == .end(.goodbye))
        var settling = ReceivingPolicy(configuration: .init(idleTimeout: 5), now: 0)
        settling.arrived(at: 10, isRTP: true)
        settling.tornDown(at: 10)
        #expect(settling.tick(now: 10.2) { _ in false } == .goOn)
        #expect(settling.tick(now: 10.3) { _ in false } == .end(.teardown))
        var closed = ReceivingPolicy(configuration: .init(idleTimeout: 5), now: 0)
        #expect(closed.closed() == .end(.teardown) && closed.tick(now: 0.1) { _ in false } == .end(.teardown))
        #expect(closed.cancelled() == .end(.cancelled) && closed.ending == .cancelled)
    }
}
