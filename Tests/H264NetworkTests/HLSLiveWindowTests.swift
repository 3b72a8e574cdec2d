import H264Network
import Testing

/// The live window's low-latency rules as a state machine, no clock and no I/O: which blocking
/// reloads are answered, which are too far ahead, what a delta update skips, which parts are
/// listed.
@Suite("HLSLiveWindow: parts, blocking reloads, delta updates")
struct HLSLiveWindowTests {
    /// A window of 2-s segments with 4 parts of 0.5 s each, the server control an LL origin
    /// declares.
    static func window(segments: Int, pendingParts: Int) -> HLSLiveWindow {
        var window = HLSLiveWindow(size: 10, targetDuration: 2, map: "init.mp4")
        window.partTarget = 0.5
        window.serverControl = HLSServerControl(canBlockReload: true, canSkipUntil: 12, holdBack: 6, partHoldBack: 1.5)
        var number = 0
        for sequence in 0..<segments {
            for index in 0..<4 {
                window.appendPart(HLSPartialSegment(uri: "part\(number).m4s", duration: 0.5, independent: index == 0), programDateTime: Double(sequence * 2))
                number += 1
            }
            _ = window.append(.init(sequence: sequence, uri: "seg\(sequence).m4s", duration: 2, programDateTime: Double(sequence * 2)))
        }
        for index in 0..<pendingParts {
            window.appendPart(HLSPartialSegment(uri: "part\(number).m4s", duration: 0.5, independent: index == 0), programDateTime: Double(segments * 2))
            number += 1
        }
        window.preloadHint = "part\(number).m4s"
        return window
    }

    @Test("a blocking reload is answered once its part (or, without a part, its whole segment) is in the playlist; a part past a whole segment's last is the next segment's first")
    func blockingReloads() {
        let window = Self.window(segments: 3, pendingParts: 2)
        #expect(window.contains(mediaSequence: 2, part: 3))
        #expect(window.contains(mediaSequence: 3, part: 1))
        #expect(!window.contains(mediaSequence: 3, part: 2))
        #expect(!window.contains(mediaSequence: 3, part: nil), "segment 3 is not whole")
        #expect(window.contains(mediaSequence: 2, part: nil))
        #expect(window.contains(mediaSequence: 2, part: 4), "part 4 of segment 2 is segment 3's part 0, which is there")
        #expect(!window.contains(mediaSequence: 4, part: 0))
        #expect(!window.isTooFarAhead(mediaSequence: 4) && window.isTooFarAhead(mediaSequence: 5), "more than two past the last whole segment (2): 400")
        // The Advance Part Limit: 3 ÷ 0.5 = 6 parts past the last (part 1 of segment 3).
        #expect(!window.isTooFarAhead(mediaSequence: 3, part: 7) && window.isTooFarAhead(mediaSequence: 3, part: 8))
        #expect(!window.isTooFarAhead(mediaSequence: 4, part: 5) && window.isTooFarAhead(mediaSequence: 4, part: 6))
        var ended = window
        ended.end()
        #expect(ended.contains(mediaSequence: 4, part: 0), "after the end every request is answered")
        #expect(!ended.isTooFarAhead(mediaSequence: 99, part: 99), "after the end the directives are ignored")
        #expect(ended.mediaPlaylist.preloadHint == nil)
    }

    @Test("the playlist lists parts for the last three target durations, the pending parts and the hint; a delta update skips what is older than CAN-SKIP-UNTIL")
    func playlistsAndDeltaUpdates() {
        let window = Self.window(segments: 9, pendingParts: 1)
        let playlist = window.mediaPlaylist
        #expect(playlist.segments.count == 9 && playlist.skippedSegments == 0 && playlist.version == 6)
        // Seconds after each segment's end: 0.5 (pending) + 2 per later segment; parts within 6 s.
        #expect(playlist.segments.map { $0.parts.count } == [0, 0, 0, 0, 0, 0, 4, 4, 4])
        #expect(playlist.pendingParts.count == 1 && playlist.preloadHint == "part37.m4s")
        let text = playlist.rendered
        #expect(text.contains("#EXT-X-PART-INF:PART-TARGET=0.500\n"))
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,HOLD-BACK=6.000,PART-HOLD-BACK=1.500\n"))
        #expect(text.contains("#EXT-X-PART:DURATION=0.500,URI=\"part24.m4s\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.500,URI=\"part25.m4s\"\n"))
        #expect(text.hasSuffix("#EXT-X-PART:DURATION=0.500,URI=\"part36.m4s\",INDEPENDENT=YES\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part37.m4s\"\n"))
        let delta = window.deltaPlaylist
        // Segment ends before the playlist's end: 16.5, 14.5, 12.5, 10.5, …: three are past 12 s.
        #expect(delta.skippedSegments == 3 && delta.version == 9)
        #expect(delta.segments.first?.uri == "seg3.m4s" && delta.rendered.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n"))
        var ended = window
        ended.end()
        #expect(ended.deltaPlaylist.skippedSegments == 0, "after the end _HLS_skip is ignored")
        // A segment past the target raises it, and the server control's distances with it.
        var raised = window
        _ = raised.append(.init(sequence: 9, uri: "seg9.m4s", duration: 3.4))
        #expect(raised.targetDuration == 3 && raised.serverControl?.holdBack == 9 && raised.serverControl?.canSkipUntil == 18)
        #expect(raised.iFramePlaylist.targetDuration == 3)
    }

    @Test("the last part, for another rendition's EXT-X-RENDITION-REPORT, and the report's line")
    func renditionReport() {
        let window = Self.window(segments: 2, pendingParts: 3)
        #expect(window.lastPart?.mediaSequence == 2 && window.lastPart?.part == 2)
        #expect(Self.window(segments: 2, pendingParts: 0).lastPart.map { [$0.mediaSequence, $0.part ?? -1] } == [1, 3])
        var playlist = window.mediaPlaylist
        playlist.renditionReports = [HLSRenditionReport(uri: "low.m3u8", lastMediaSequence: 2, lastPart: 2)]
        #expect(playlist.rendered.hasSuffix("#EXT-X-RENDITION-REPORT:URI=\"low.m3u8\",LAST-MSN=2,LAST-PART=2\n"))
    }

    @Test("without low latency nothing of it is rendered")
    func ordinaryWindow() {
        var window = HLSLiveWindow(size: 3, targetDuration: 2)
        for sequence in 0..<5 { _ = window.append(.init(sequence: sequence, uri: "seg\(sequence).ts", duration: 2)) }
        let text = window.mediaPlaylist.rendered
        #expect(!text.contains("PART") && !text.contains("SERVER-CONTROL") && !text.contains("PRELOAD") && window.deltaPlaylist.skippedSegments == 0)
        #expect(window.mediaSequence == 2)
    }
}
