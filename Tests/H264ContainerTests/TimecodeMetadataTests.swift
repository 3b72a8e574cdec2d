import Foundation
import H264Bitstream
@testable import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import Testing

@Suite("Timecode tracks and metadata")
struct TimecodeMetadataTests {
    static let timecodeLayouts: [MovieWriter.Options] = [
        .init(), .init(fileType: .mov), .init(layout: .faststart), .init(fileType: .mov, layout: .faststart),
    ]

    /// The fixture at 25 fps (30 frames with B-frames: its presentation ends 1.2 s after its start).
    static func format(_ sampleFormat: TimecodeFormatDescription.SampleFormat = .timeCode32) throws -> TimecodeFormatDescription {
        try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: false, sampleFormat: sampleFormat, sourceReference: .init(name: "REEL 7"))
    }

    @Test("a timecode track reads back: format, reel, one sample lasting the presentation", arguments: timecodeLayouts)
    func roundTrip(_ layout: MovieWriter.Options) throws {
        var options = layout
        let format = try Self.format()
        options.timecode = try MovieWriter.TimecodeTrack(format: format, start: Timecode(parsing: "10:00:00:00"))
        let (bytes, written) = try writtenMovie(options)
        let reader = try read(bytes)
        #expect(reader.warnings.isEmpty)
        let video = try #require(reader.firstVideoTrackIndex)
        #expect(reader.tracks[video].references["tmcd"] == [2])
        let index = try #require(reader.timecodeTrackIndex(forVideoTrack: video))
        let track = try reader.timecodeTrack(index)
        #expect(track.format == format)
        #expect(track.format.sourceReference?.name == "REEL 7")
        #expect(try track.startTimecode()?.description == "10:00:00:00")
        // The sample lasts the presentation, not the presentation plus the B-frame delay.
        let presentation = MediaTime(value: Int64(written.count), timescale: 25)
        #expect(track.samples.map(\.duration) == [presentation])
        #expect(reader.tracks[video].edits.first.map { MediaTime(value: Int64($0.segmentDuration), timescale: Int32(reader.movieTimescale)) } == presentation)
        #expect(try track.timecode(at: MediaTime(value: 26, timescale: 25))?.description == "10:00:01:01")
        // The video is untouched.
        #expect(try reader.sampleBuffers(track: video).map(\.data) == written.map(\.data))
    }

    @Test("a timecode that jumps is one sample per run; tc64 holds 64-bit frame numbers")
    func runs() throws {
        let format = try Self.format(.timeCode64)
        var timecode = MovieWriter.TimecodeTrack(format: format, startFrameNumber: 1 << 35)
        timecode.jump(at: MediaTime(value: 3, timescale: 25), to: 500)
        timecode.jump(at: MediaTime(value: 6, timescale: 25), to: 90_000)
        let (bytes, _) = try writtenMovie(.init(fileType: .mov, timecode: timecode))
        let reader = try read(bytes)
        let track = try reader.timecodeTrack(try #require(reader.timecodeTrackIndex()))
        #expect(track.format.sampleFormat == .timeCode64)
        #expect(track.samples.map(\.frameNumber) == [1 << 35, 500, 90_000])
        // The fixture shows 9 frames: three runs of three.
        let three = MediaTime(value: 3, timescale: 25)
        #expect(track.samples.map(\.start) == [.zero, three, three * 2])
        #expect(track.samples.map(\.duration) == [three, three, three])
        #expect(track.frameNumber(at: MediaTime(value: 5, timescale: 25)) == 502)
        #expect(try track.timecode(at: MediaTime(value: 6, timescale: 25))?.description == "01:00:00:00")
    }

    @Test("refused before anything is written: a run after the start, fragments, a frame number tmcd cannot hold")
    func refusals() throws {
        let format = try Self.format()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-tc-\(UUID().uuidString).mov").path
        var late = MovieWriter.TimecodeTrack(format: format, startFrameNumber: 0)
        late.runs[0].time = MediaTime(value: 1, timescale: 25)
        #expect(throws: ContainerError.self) { try MovieWriter(path: path, options: .init(timecode: late)) }
        #expect(throws: ContainerError.self) {
            try MovieWriter(path: path, options: .init(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1)), timecode: .init(format: format, startFrameNumber: 0)))
        }
        #expect(throws: ContainerError.self) { try MovieWriter(path: path, options: .init(timecode: .init(format: format, startFrameNumber: 1 << 40))) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a tmcd sample shorter than 4 bytes is an error naming the sample")
    func shortSample() throws {
        var options = MovieWriter.Options()
        options.timecode = .init(format: try Self.format(), startFrameNumber: 0)
        var (bytes, _) = try writtenMovie(options)
        // The last stsz is the timecode track's: make its constant sample size 2.
        let tag = Array("stsz".utf8)
        let at = try #require((0..<(bytes.count - 4)).last { Array(bytes[$0..<($0 + 4)]) == tag })
        bytes[at + 11] = 2
        let reader = try read(bytes)
        let error = #expect(throws: ContainerError.self) { try reader.timecodeTrack(try #require(reader.timecodeTrackIndex())) }
        #expect(error?.description.contains("holds 4 bytes; this one has 2") == true && error?.cause is TimecodeError)
    }

    static let metadata: [MetadataItem] = [
        .init(key: .userData("xmpl"), value: .data(Array("Some value".utf8))),
        .init(key: .common(.title), value: .utf8("A title")),
        .init(key: .common(.comment), value: .utf8("A comment")),
        .init(key: .iTunes("©day"), value: .utf8("2026-11-21")),
    ]

    @Test("MP4: udta raw items and iTunes items round-trip, keys back as four-character strings")
    func mp4Metadata() throws {
        for layout: MovieWriter.Options in [.init(), .init(layout: .faststart), .init(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1)))] {
            var options = layout
            options.metadata = Self.metadata
            let (bytes, _) = try writtenMovie(options)
            let items = try read(bytes).metadata
            #expect(items.contains(.init(key: .userData("xmpl"), value: .data(Array("Some value".utf8)))))
            #expect(items.contains(.init(key: .iTunes("©nam"), value: .utf8("A title"))))
            #expect(items.contains(.init(key: .iTunes("©cmt"), value: .utf8("A comment"))))
            #expect(items.contains(.init(key: .iTunes("©day"), value: .utf8("2026-11-21"))))
            #expect(items.first { $0.key.name == "©nam" }?.commonKey == .title)
            #expect(items.map(\.key.name).contains("xmpl"))
        }
    }

    @Test("MOV: mdta keys with typed values and QuickTime text round-trip")
    func movMetadata() throws {
        let items: [MetadataItem] = [
            .init(key: .quickTime("com.example.camera.model"), value: .utf8("Cam X")),
            .init(key: .quickTime("com.example.count"), value: .signed(-42)),
            .init(key: .quickTime("com.example.big"), value: .unsigned(1 << 40)),
            .init(key: .quickTime("com.example.fps"), value: .float32(29.97)),
            .init(key: .quickTime("com.example.ratio"), value: .float64(1.5)),
            .init(key: .quickTime("com.example.blob"), value: .data([0, 1, 2, 255])),
            .init(key: .common(.title), value: .utf8("A title")),
            .init(key: .userData("xmpl"), value: .data([9, 8, 7])),
        ]
        let (bytes, _) = try writtenMovie(.init(fileType: .mov, metadata: items))
        let read = try read(bytes).metadata
        for item in items.prefix(6) { #expect(read.contains(item), "\(item)") }
        #expect(read.contains(.init(key: .userData("©nam"), value: .utf8("A title"))))
        #expect(read.contains(.init(key: .userData("xmpl"), value: .data([9, 8, 7]))))
    }

    @Test("a key the container cannot hold is an error that says what to use instead")
    func unsupportedKeys() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-meta-\(UUID().uuidString).mp4").path
        let reverseDNS = #expect(throws: ContainerError.self) {
            try MovieWriter(path: path, options: .init(metadata: [.init(key: .quickTime("com.example.camera.model"), value: .utf8("x"))]))
        }
        #expect(reverseDNS?.reason.contains("write a .mov") == true)
        #expect(reverseDNS?.reason.contains("four-character") == true)
        let typed = #expect(throws: ContainerError.self) {
            try MovieWriter(path: path, options: .init(metadata: [.init(key: .userData("xmpl"), value: .signed(3))]))
        }
        #expect(typed?.reason.contains("raw data") == true)
        #expect(throws: ContainerError.self) {
            try MovieWriter(path: path, options: .init(metadata: [.init(key: .common(.title), value: .utf8("a")), .init(key: .common(.title), value: .utf8("b"))]))
        }
        #expect(throws: ContainerError.self) { try MetadataItem.Key(parsing: "toolong") }
        #expect(try MetadataItem.Key(parsing: "com.example.x") == .quickTime("com.example.x"))
        #expect(try MetadataItem.Key(parsing: "©nam") == .userData("©nam"))
        #expect(try MetadataItem.Key(parsing: "title") == .common(.title))
        #expect(try MetadataItem.Value(parsing: "int:-5") == .signed(-5))
        #expect(try MetadataItem.Value(parsing: "hex:00ff") == .data([0, 255]))
        #expect(try MetadataItem.Value(parsing: "plain: text") == .utf8("plain: text"))
        #expect(throws: ContainerError.self) { try MetadataItem.Value(parsing: "int:x") }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("four-character codes with © round-trip through their strings")
    func fourCharCodes() {
        let code: FourCharCode = "©nam"
        #expect(code.rawValue == 0xA96E_616D)
        #expect(code.description == "©nam")
        let (good, long, wide) = ("©nam", "toolong", "ab€d")  // not literals: FourCharCode("...") is a literal coercion
        #expect(FourCharCode(good) == code)
        #expect(FourCharCode(long) == nil)
        #expect(FourCharCode(wide) == nil)
    }
}
