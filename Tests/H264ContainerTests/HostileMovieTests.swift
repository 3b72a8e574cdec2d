import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import Testing

/// Movies built to attack the reader: each class of the hostile-input review (a trap on a
/// 64-bit value, an allocation or a loop sized by a table field, unbounded nesting) closed for
/// every sibling, with a clean error or a bounded result, never a trap, a hang or gigabytes.
@Suite("Hostile movies: every count, size and time checked before it is used")
struct HostileMovieTests {
    /// A written movie with its `moov` (at the end: the progressive layout) edited by `edit`.
    static func edited(_ options: MovieWriter.Options = .init(), _ edit: (inout MovieBox) throws -> Void) throws -> [UInt8] {
        let (bytes, _) = try writtenMovie(options)
        let movie = try MovieReader(bytes: bytes)
        let moov = try #require(movie.topLevelBoxes.last)
        #expect(moov.type == "moov" && moov.end == bytes.count, "the progressive layout writes moov last")
        var box = movie.movieBox
        try edit(&box)
        return Array(bytes[..<moov.start]) + box.serialized
    }

    /// Expects reading `bytes` (and reading every sample of every H.264 track) to throw an
    /// error whose text contains `words`.
    static func expectError(_ bytes: [UInt8], limits: MovieReader.Limits = .init(), containing words: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let movie = try MovieReader(bytes: bytes, limits: limits)
            for index in movie.tracks.indices where movie.tracks[index].isH264 {
                for sample in try movie.sampleBuffers(track: index) { _ = sample.data.count }
            }
            Issue.record("no error; expected one saying \(words)", sourceLocation: sourceLocation)
        } catch {
            #expect("\(error)".contains(words), "\(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Class A: 64-bit values

    /// A base data offset near 2^63 plus a data offset used to overflow (a trap).
    @Test func aFragmentBaseOffsetNear2To63IsAnError() throws {
        let (bytes, _) = try writtenMovie(.init(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1))))
        let fragment = Self.fragment(trackID: 1, baseDataOffset: UInt64(Int64.max), runs: [TrackRunBox(sampleCount: 1, dataOffset: 1)])
        Self.expectError(bytes + fragment, containing: "points outside the file")
    }

    /// An empty edit of 2^63 - 1 ticks followed by a real edit: the trim window's end used to
    /// overflow (a trap in every decode of the file).
    @Test func anEditListNear2To63TrimsWithoutOverflow() throws {
        let bytes = try Self.edited { moov in
            try moov.editEveryBox(MovieHeaderBox.self) { $0.timescale = 1 }
            try moov.editEveryBox(MediaHeaderBox.self) { $0.timescale = 1 }
            try moov.editEveryBox(EditListBox.self) { list in
                list.version = 1
                list.entries = [.init(segmentDuration: UInt64(Int64.max), mediaTime: -1), .init(segmentDuration: 5, mediaTime: 0)]
            }
        }
        let movie = try MovieReader(bytes: bytes)
        let samples = try movie.sampleBuffers(track: 0)
        #expect(samples.count == 9)
        _ = samples.map(\.presentationTime)
    }

    // MARK: Class B and C: tables sized by a field

    /// A constant sample size with a count the file can hold at one byte a sample, over the
    /// limit: an error naming the field and the limit before the table is made.
    @Test func aConstantSizeSampleCountOverTheLimitIsAnError() throws {
        let bytes = try Self.edited { moov in
            try moov.editEveryBox(SampleSizeBox.self) { stsz in
                stsz.constantSize = 1
                stsz.sampleCount = 10_000
                stsz.sizes = []
            }
        }
        Self.expectError(bytes, limits: .init(maximumSamples: 1000), containing: "stsz sample_count adds 10000 samples")
        Self.expectError(bytes, limits: .init(maximumSamples: 1000), containing: "MovieReader.Limits.maximumSamples")
    }

    /// stsc runs whose first_chunk goes back and forth made the chunk walk quadratic (each run
    /// walked every chunk again): the order is the spec's, and breaking it is an error.
    @Test func sampleToChunkRunsMustIncrease() throws {
        let bytes = try Self.edited { moov in
            try moov.editEveryBox(SampleToChunkBox.self) { stsc in
                stsc.entries = (0..<20_000).map { _ in SampleToChunkBox.Entry(firstChunk: 1, samplesPerChunk: 0, sampleDescriptionIndex: 1) }
            }
        }
        Self.expectError(bytes, containing: "first_chunk 1 after 1")
    }

    /// Many runs claiming the same bytes at the default size (each fits the file on its own):
    /// together they cannot pass what the file holds, however many there are.
    @Test func trackRunsReusingTheSameBytesAreBoundedByTheFile() throws {
        let (bytes, _) = try writtenMovie(.init(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1))))
        let base = UInt64(bytes.count - 4096)
        // Each run after the first steps back over the bytes the one before it took.
        let runs = (0..<200).map { TrackRunBox(sampleCount: 4096, dataOffset: $0 == 0 ? 0 : -4096) }
        let fragment = Self.fragment(trackID: 1, baseDataOffset: base, defaultSampleSize: 1, runs: runs)
        Self.expectError(bytes + fragment, containing: "can hold (a sample is at least a byte)")
    }

    /// Container boxes nested without end (8 bytes a level) used to recurse until the stack
    /// ran out: nesting deeper than any file needs is an error.
    @Test func boxesNestedWithoutEndAreAnError() throws {
        let depth = 100_000
        var bytes = (Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isom".utf8)).withBoxHeader()
        var nested: [UInt8] = []
        for level in 0..<depth {
            let size = UInt32(8 * (depth - level))
            nested += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array((level == 0 ? "moov" : "trak").utf8)
        }
        bytes += nested
        Self.expectError(bytes, containing: "nested 17 deep")
    }

    /// A timecode track whose samples last 2^32 - 1 ticks of a 1/s timescale at a frame of one
    /// 2^31st of a second: its frame count overflowed (a trap) before the listing's limit was
    /// checked; now it saturates and the listing is refused.
    @Test func aTimecodeTrackSpanningAbsurdlyManyFramesIsRefused() throws {
        var options = MovieWriter.Options(fileType: .mov)
        let format = try TimecodeFormatDescription(frameRate: (25, 1), dropFrame: false, sampleFormat: .timeCode32)
        var timecode = MovieWriter.TimecodeTrack(format: format, startFrameNumber: 0)
        timecode.jump(at: MediaTime(value: 3, timescale: 25), to: 1000)
        options.timecode = timecode
        let bytes = try Self.edited(options) { moov in
            try moov.editTracks(handler: "tmcd") { track in
                try track.editEveryBox(MediaHeaderBox.self) { $0.timescale = 1 }
                try track.editEveryBox(TimeToSampleBox.self) { $0.entries = [.init(count: 2, value: .max)] }
                try track.editEveryBox(TimecodeSampleEntry.self) { entry in
                    entry.timescale = UInt32(Int32.max)
                    entry.frameDuration = 1
                }
            }
        }
        let movie = try MovieReader(bytes: bytes)
        let index = try #require(movie.timecodeTrackIndex())
        let track = try movie.timecodeTrack(index)
        #expect(track.frameCount == .max)
        #expect(throws: ContainerError.self) { try movie.frameTimecodes(timecodeTrack: index, videoTrack: nil) }
        // Labels at the far end of the timeline are an error, not a trap.
        _ = track.frameNumber(at: MediaTime(value: .max, timescale: 1))
        #expect(try track.format.timecode(forFrameNumber: .max).hours < 24, "the 24-hour format wraps")
    }

    /// A 64-bit timecode sample near 2^63 in a drop-frame format: counting labels overflowed.
    @Test func dropFrameLabelsNear2To63AreAnError() throws {
        // Without the 24-hour wrap, as a tc64 sample may say.
        let format = try TimecodeFormatDescription(sampleFormat: .timeCode64, frameDuration: MediaTime(value: 1001, timescale: 30000),
                                                   frameQuanta: 30, flags: [.dropFrame])
        #expect(throws: TimecodeError.self) { try format.timecode(forFrameNumber: .max - 5) }
        #expect(format.frameNumber(.max - 1, advancedBy: MediaTime(value: 10, timescale: 1)) == .max)
        #expect(format.frameNumber(.min + 1, advancedBy: MediaTime(value: -10, timescale: 1)) == .min)
    }

    // MARK: The writer, fed a hostile movie's timing

    /// A gap before a sample lengthens the sample before it; when that no longer fits 32 bits,
    /// the writer says so (it used to trap adding them).
    @Test func aGapTooLongForTheSampleBeforeItIsAnError() throws {
        let (_, samples) = try writtenMovie(.init())
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-gap-\(UUID().uuidString).mp4").path
        let writer = try MovieWriter(path: path)
        let timescale: Int32 = 12800  // above 10000: the track keeps it
        var first = samples[0]
        first.timing = SampleTiming(presentationTime: .zero, decodeTime: .zero, duration: MediaTime(value: 0xFFFF_0000, timescale: timescale))
        try writer.append(first)
        var second = samples[1]
        let start = MediaTime(value: 0xFFFF_0000 + 0x10_0000, timescale: timescale)
        second.timing = SampleTiming(presentationTime: start, decodeTime: start, duration: MediaTime(value: 1, timescale: timescale))
        #expect { try writer.append(second) } throws: { "\($0)".contains("too long for a movie") }
        writer.cancel()
    }

    // MARK: Building blocks

    /// A `moof` for `trackID` with `runs` (their data at `baseDataOffset`).
    static func fragment(trackID: UInt32, baseDataOffset: UInt64, defaultSampleSize: UInt32? = nil, runs: [TrackRunBox]) -> [UInt8] {
        var traf = TrackFragmentBox()
        traf.append(TrackFragmentHeaderBox(trackID: trackID, defaultBaseIsMoof: false, baseDataOffset: baseDataOffset,
                                           defaultSampleDuration: 1, defaultSampleSize: defaultSampleSize))
        for run in runs { traf.append(run) }
        var moof = MovieFragmentBox()
        moof.append(MovieFragmentHeaderBox(sequenceNumber: 99))
        moof.append(traf)
        return moof.serialized
    }
}

extension TrackRunBox {
    /// A run of `sampleCount` samples with no per-sample fields (the defaults apply).
    init(sampleCount: UInt32, dataOffset: Int32) {
        self.init(entries: [], dataOffset: dataOffset, signedCompositionOffsets: false)
        flags = Self.dataOffsetPresent
        self.sampleCount = sampleCount
    }
}

extension Array where Element == UInt8 {
    /// These bytes as a box: a 32-bit size, then the bytes (whose first four are the type).
    func withBoxHeader() -> [UInt8] {
        let size = UInt32(count + 4)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + self
    }
}

extension BoxList {
    /// Applies `edit` to every box of type `B` in the tree below this one (sample entries
    /// included).
    mutating func editEveryBox<B: Box>(_ type: B.Type, _ edit: (inout B) throws -> Void) throws {
        for index in children.indices { try children[index].editEveryBox(type, edit) }
    }

    /// Applies `edit` to each `trak` whose handler is `handler`.
    mutating func editTracks(handler: FourCharCode, _ edit: (inout TrackBox) throws -> Void) throws {
        for index in children.indices {
            guard var track = children[index].as(TrackBox.self),
                  track.first(MediaBox.self)?.first(HandlerBox.self)?.handlerType == handler else { continue }
            try edit(&track)
            children[index] = AnyBox(track)
        }
    }
}

extension AnyBox {
    mutating func editEveryBox<B: Box>(_ type: B.Type, _ edit: (inout B) throws -> Void) throws {
        if var box = box as? B {
            try edit(&box)
            self = AnyBox(box)
        } else if var stsd = box as? SampleDescriptionBox {
            for index in stsd.entries.indices { try stsd.entries[index].editEveryBox(type, edit) }
            self = AnyBox(stsd)
        } else if let list = box as? any BoxList {
            self = AnyBox(try Self.editChildren(of: list, type, edit))
        }
    }

    private static func editChildren<L: BoxList, B: Box>(of list: L, _ type: B.Type, _ edit: (inout B) throws -> Void) throws -> L {
        var list = list
        try list.editEveryBox(type, edit)
        return list
    }
}
