import H264Network
import Testing

/// The origin's request logic without a server: what is answered, held, released and given up.
@Suite("HLSRequestHolding: a live origin's request logic")
struct HLSRequestHoldingTests {
    /// A low-latency origin of one rendition, `video`, at `/live/index-video.m3u8`: two whole
    /// segments of four 0.5-s parts, two parts of the third, a hint for the next.
    struct Origin: HLSRequestContext {
        var window: HLSLiveWindow
        var files: Set<String>
        var hint: String? { window.preloadHint.map { "/live/" + $0 } }

        init() {
            window = HLSLiveWindow(size: 6, targetDuration: 2, map: "init.mp4")
            window.partTarget = 0.5
            files = []
            var number = 0
            for sequence in 0..<3 {
                for index in 0..<(sequence < 2 ? 4 : 2) {
                    publishPart(number, independent: index == 0)
                    number += 1
                }
                if sequence < 2 {
                    _ = window.append(.init(sequence: sequence, uri: "seg\(sequence).m4s", duration: 2))
                    files.insert("/live/seg\(sequence).m4s")
                }
            }
        }

        mutating func publishPart(_ number: Int, independent: Bool = false) {
            window.appendPart(HLSPartialSegment(uri: "part\(number).m4s", duration: 0.5, independent: independent))
            files.insert("/live/part\(number).m4s")
            window.preloadHint = "part\(number + 1).m4s"
        }

        func rendition(mediaPlaylist path: String) -> String? { path == "/live/index-video.m3u8" ? "video" : nil }
        func window(_ rendition: String) -> HLSLiveWindow? { rendition == "video" ? window : nil }
        func hasFile(_ path: String) -> Bool { files.contains(path) }
        func rendition(hinting path: String) -> String? { path == hint ? "video" : nil }
    }

    static let playlist = "/live/index-video.m3u8"

    @Test("requests are answered at once, held, or refused as RFC 8216bis says: blocking reloads, the hinted part, malformed and far-ahead directives, delta updates")
    func decisions() {
        let origin = Origin()
        func decide(_ path: String, _ query: String? = nil, lowLatency: Bool = true) -> HLSRequestHolding.Decision {
            HLSRequestHolding.decide(path: path, query: query, lowLatency: lowLatency, in: origin)
        }
        #expect(decide(Self.playlist) == .answer(delta: false, blocking: false))
        #expect(decide(Self.playlist, "_HLS_skip=YES") == .answer(delta: true, blocking: false))
        // Segment 2 has parts 0 and 1: part 1 is there, part 2 is waited for, and so is segment 2 whole.
        #expect(decide(Self.playlist, "_HLS_msn=2&_HLS_part=1") == .answer(delta: false, blocking: true))
        #expect(decide(Self.playlist, "_HLS_msn=2&_HLS_part=2&_HLS_skip=YES") == .hold(.playlist(rendition: "video", mediaSequence: 2, part: 2), delta: true, blocking: true))
        #expect(decide(Self.playlist, "_HLS_msn=2") == .hold(.playlist(rendition: "video", mediaSequence: 2, part: nil), delta: false, blocking: true))
        // Too far ahead, malformed, part without msn: 400.
        #expect(decide(Self.playlist, "_HLS_msn=9") == .badRequest)
        #expect(decide(Self.playlist, "_HLS_msn=2&_HLS_part=40") == .badRequest)
        #expect(decide(Self.playlist, "_HLS_msn=x") == .badRequest)
        #expect(decide(Self.playlist, "_HLS_part=1") == .badRequest)
        // The hinted part is held; a published one, or any other path, answered.
        #expect(decide("/live/part10.m4s") == .hold(.part(rendition: "video", path: "/live/part10.m4s"), delta: false, blocking: false))
        #expect(decide("/live/part9.m4s") == .answer(delta: false, blocking: false))
        #expect(decide("/live/part11.m4s") == .answer(delta: false, blocking: false))
        // A plain origin holds nothing and reads no directive.
        #expect(decide(Self.playlist, "_HLS_msn=9", lowLatency: false) == .answer(delta: false, blocking: false))
        #expect(decide("/live/part10.m4s", lowLatency: false) == .answer(delta: false, blocking: false))
    }

    @Test("held requests are released when what they wait for is published, or when the rendition ends; given up at three target durations; at most `limit` held")
    func holding() throws {
        var origin = Origin()
        var holding = HLSRequestHolding(limit: 3)
        let partHeld = holding.hold(.playlist(rendition: "video", mediaSequence: 2, part: 2), now: 100, targetDuration: 2)
        let part = try #require(partHeld)
        let hintedHeld = holding.hold(.part(rendition: "video", path: "/live/part10.m4s"), now: 100, targetDuration: 2)
        let hinted = try #require(hintedHeld)
        let wholeHeld = holding.hold(.playlist(rendition: "video", mediaSequence: 2, part: nil), now: 101, targetDuration: 2)
        let whole = try #require(wholeHeld)
        #expect(holding.hold(.playlist(rendition: "video", mediaSequence: 3, part: nil), now: 101, targetDuration: 2) == nil)
        #expect(holding.statistics.refused == 1 && holding.heldCount == 3)
        #expect(holding.release(in: origin).isEmpty)

        // Part 10 (segment 2's third) comes: the blocking reload for it and the hinted request go.
        origin.publishPart(10)
        #expect(Set(holding.release(in: origin)) == [part, hinted])
        #expect(holding.heldCount == 1)
        // Nothing more comes: the last is given up 6 s after it was held, not before.
        #expect(holding.expire(now: 106.9).isEmpty)
        #expect(holding.expire(now: 107) == [whole])
        #expect(holding.statistics.timedOut == 1 && holding.statistics.released == 2 && holding.statistics.held == 3)

        // An end releases everything held on the rendition.
        let lateHeld = holding.hold(.playlist(rendition: "video", mediaSequence: 3, part: 0), now: 110, targetDuration: 2)
        let late = try #require(lateHeld)
        #expect(holding.release(in: origin).isEmpty)
        origin.window.end()
        #expect(holding.release(in: origin) == [late])
        // A rendition the origin does not have holds nothing.
        #expect(HLSRequestHolding.holds(.playlist(rendition: "audio", mediaSequence: 99, part: nil), in: origin))
    }
}
