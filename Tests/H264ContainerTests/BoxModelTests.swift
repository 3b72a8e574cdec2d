import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import MPEG4Audio
import Testing

/// One value of every box type the package reads and writes, with fields away from their
/// defaults, for the round trip `parse(serialize(box)) == box`.
struct BoxSample: Sendable, CustomTestStringConvertible {
    var box: AnyBox
    var table: BoxTable = .standard
    var testDescription: String { "\(box.type)" }

    static let all: [BoxSample] = {
        let entry = VisualSampleEntry(type: "avc1", width: 1920, height: 1080, children: [
            AnyBox(AVCConfigurationBox(record: [1, 0x64, 0, 0x28, 0xFF, 0xE1, 0, 2, 0x67, 0x64, 1, 0, 2, 0x68, 0xEE])),
            AnyBox(PixelAspectRatioBox(horizontalSpacing: 4, verticalSpacing: 3)),
            AnyBox(ColourInformationBox(ColourDescription(primaries: 1, transfer: 1, matrix: 1, fullRange: true), quickTime: false)),
            AnyBox(BitRateBox(bufferSizeDB: 100, maxBitrate: 2_000_000, avgBitrate: 1_000_000)),
            AnyBox(UnknownBox(type: "fiel", payload: [1, 0])),
        ])
        let timecode = try! TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true, sourceReference: .init(name: "A001", languageCode: 5))
        var mvhd = MovieHeaderBox(timescale: 600, duration: UInt64(UInt32.max) + 7, nextTrackID: 3)
        mvhd.creationTime = 3_000_000_000
        var tkhd = TrackHeaderBox(trackID: 1, duration: 1234, flags: 3, width: 1280, height: 720)
        tkhd.matrix = TransformationMatrix(values: [0, 0x0001_0000, 0, -0x0001_0000, 0, 0, 0, 0, 0x4000_0000])
        var tfhd = TrackFragmentHeaderBox(trackID: 1, defaultBaseIsMoof: true, sampleDescriptionIndex: 2, defaultSampleDuration: 1001, defaultSampleFlags: 0x1_0000)
        tfhd.version = 0
        var trun = TrackRunBox(entries: [.init(duration: 1001, size: 5000, flags: 0, compositionOffset: -1001), .init(duration: 1001, size: 300, flags: 0x1_0000, compositionOffset: 2002)],
                               dataOffset: 120, signedCompositionOffsets: true)
        trun.firstSampleFlags = nil
        return [
            BoxSample(box: AnyBox(FileTypeBox(majorBrand: "isom", minorVersion: 0x200, compatibleBrands: ["isom", "iso2", "avc1", "mp41"]))),
            BoxSample(box: AnyBox(FreeSpaceBox(size: 40, type: "skip"))),
            BoxSample(box: AnyBox(mvhd)),
            BoxSample(box: AnyBox(tkhd)),
            BoxSample(box: AnyBox(EditBox(children: [AnyBox(EditListBox(entries: [.init(segmentDuration: 100, mediaTime: -1), .init(segmentDuration: 900, mediaTime: 2002)]))]))),
            BoxSample(box: AnyBox(EditListBox(entries: [.init(segmentDuration: UInt64(UInt32.max) + 1, mediaTime: 7, mediaRateInteger: 1, mediaRateFraction: 2)]))),
            BoxSample(box: AnyBox(TrackReferenceBox(children: [AnyBox(TrackReferenceTypeBox(type: "tmcd", trackIDs: [2, 5]))]))),
            BoxSample(box: AnyBox(MediaHeaderBox(timescale: 90000, duration: 3_003_000, language: 0x15C7))),
            BoxSample(box: AnyBox(HandlerBox(componentType: "mhlr", handlerType: "vide", name: "VideoHandler", countedName: true))),
            BoxSample(box: AnyBox(HandlerBox(handlerType: "vide", name: "VideoHandler", countedName: false))),
            BoxSample(box: AnyBox(MediaInformationBox(children: [AnyBox(VideoMediaHeaderBox()), AnyBox(NullMediaHeaderBox())]))),
            BoxSample(box: AnyBox(BaseMediaInformationHeaderBox(children: [AnyBox(BaseMediaInfoBox()), AnyBox(TimecodeMediaInformationBox(children: [AnyBox(TimecodeMediaInfoBox())]))]))),
            BoxSample(box: AnyBox(DataInformationBox(children: [AnyBox(DataReferenceBox(selfReference: "alis"))]))),
            BoxSample(box: AnyBox(SampleDescriptionBox(entries: [AnyBox(entry), AnyBox(TimecodeSampleEntry(timecode)), AnyBox(UnknownBox(type: "ac-3", payload: Array(repeating: 7, count: 28)))]))),
            BoxSample(box: AnyBox(SampleDescriptionBox(entries: [AnyBox(AudioSampleEntry(type: "mp4a", channelCount: 2, sampleRate: 48000, children: [
                AnyBox(ElementaryStreamDescriptorBox(ElementaryStreamDescriptor(decoderConfig: .init(objectTypeIndication: 0x40, bufferSize: 768, maxBitrate: 128_000,
                                                                                                    averageBitrate: 127_000, decoderSpecificInfo: [0x11, 0x90])))),
                AnyBox(BitRateBox(bufferSizeDB: 768, maxBitrate: 128_000, avgBitrate: 127_000)),
            ]))]))),
            BoxSample(box: AnyBox(SoundMediaHeaderBox())),
            BoxSample(box: AnyBox(SampleGroupDescriptionBox(rollDistances: [-1]))),
            BoxSample(box: AnyBox(SampleToGroupBox(groupingType: "roll", entries: [.init(sampleCount: 236, groupDescriptionIndex: 1)]))),
            BoxSample(box: AnyBox(TimeToSampleBox(entries: [.init(count: 10, value: 1001), .init(count: 1, value: 2002)]))),
            BoxSample(box: AnyBox(CompositionOffsetBox(entries: [.init(count: 1, value: -1001), .init(count: 3, value: 2002)], signed: true))),
            BoxSample(box: AnyBox(CompositionToDecodeBox(compositionToDTSShift: 1001, leastDecodeToDisplayDelta: -1001, greatestDecodeToDisplayDelta: 3003,
                                                        compositionStartTime: 0, compositionEndTime: Int64(Int32.max) + 1))),
            BoxSample(box: AnyBox(SyncSampleBox(sampleNumbers: [1, 31, 61]))),
            BoxSample(box: AnyBox(SampleDependencyTypeBox(entries: [0x20, 0x14, 0x18]))),
            BoxSample(box: AnyBox(SampleSizeBox(sizes: [100, 200, 300]))),
            BoxSample(box: AnyBox(SampleSizeBox(constantSize: 4, count: 9))),
            BoxSample(box: AnyBox(CompactSampleSizeBox(fieldSize: 4, sizes: [1, 2, 3]))),
            BoxSample(box: AnyBox(CompactSampleSizeBox(fieldSize: 16, sizes: [1000, 2000]))),
            BoxSample(box: AnyBox(SampleToChunkBox(entries: [.init(firstChunk: 1, samplesPerChunk: 30, sampleDescriptionIndex: 1), .init(firstChunk: 5, samplesPerChunk: 2, sampleDescriptionIndex: 2)]))),
            BoxSample(box: AnyBox(ChunkOffsetBox(offsets: [48, 100_000]))),
            BoxSample(box: AnyBox(ChunkLargeOffsetBox(offsets: [48, UInt64(UInt32.max) + 100]))),
            BoxSample(box: AnyBox(MovieExtendsBox(children: [AnyBox(MovieExtendsHeaderBox(fragmentDuration: 12345)), AnyBox(TrackExtendsBox(trackID: 1, defaultSampleDuration: 512))]))),
            BoxSample(box: AnyBox(MovieFragmentBox(children: [AnyBox(MovieFragmentHeaderBox(sequenceNumber: 7)), AnyBox(TrackFragmentBox(children: [
                AnyBox(tfhd), AnyBox(TrackFragmentBaseMediaDecodeTimeBox(baseMediaDecodeTime: 900_000)), AnyBox(trun),
            ]))]))),
            BoxSample(box: AnyBox(MovieFragmentRandomAccessBox(children: [
                AnyBox(TrackFragmentRandomAccessBox(trackID: 1, entries: [.init(time: 0, moofOffset: 800), .init(time: 90000, moofOffset: 700_000)])),
                AnyBox(MovieFragmentRandomAccessOffsetBox(size: 77)),
            ]))),
            BoxSample(box: AnyBox(UserDataBox(children: [AnyBox(UnknownBox(type: "xmpl", payload: [1, 2, 3])), AnyBox(MetaBox(isFullBox: true, children: [
                AnyBox(HandlerBox(handlerType: "mdir", name: "", countedName: false)),
                AnyBox(ItemListBox(children: [AnyBox(ItemListEntryBox(type: "©nam", value: DataBox(typeIndicator: 1, value: Array("Title".utf8))))])),
            ]))]))),
            BoxSample(box: AnyBox(MetaBox(isFullBox: false, children: [
                AnyBox(HandlerBox(handlerType: "mdta", name: "", countedName: false)),
                AnyBox(KeysBox(keys: [.init(value: Array("com.example.take".utf8))])),
                AnyBox(ItemListBox(children: [AnyBox(ItemListEntryBox(type: FourCharCode(rawValue: 1), value: DataBox(typeIndicator: 21, value: [0, 0, 0, 7])))])),
            ]))),
        ]
    }()
}

/// Every box of `bytes` at the top level written back: the bytes it came from.
func topLevelBoxesRoundTrip(_ bytes: [UInt8], file: String) throws -> [String] {
    var failures: [String] = []
    try bytes.withUnsafeBytes { raw in
        var top = BoxReader(raw, 0..<raw.count, boxType: FourCharCode(rawValue: 0), path: "", file: file)
        // A top-level box with an impossible size ends the walk, as it ends the reader's.
        while let (header, _) = try? top.nextHeader(allowTruncated: true) {
            guard header.type != "mdat", header.end <= raw.count else { continue }
            let original = Array(raw[header.start..<header.end])
            var reader = top.child(header)
            let box = try BoxTable.standard.parse(&reader)
            let again = box.box.serialized
            // A 64-bit size written for a small box comes back as a 32-bit one: compare payloads.
            let same = header.hasLargeSize ? Array(again.dropFirst(8)) == Array(original.dropFirst(16)) : again == original
            if !same { failures.append("\(file): \(header.type) at byte \(header.start) writes back differently (\(original.count) → \(again.count) bytes)") }
            if let parsed = try? AnyBox.parse(again), parsed != box { failures.append("\(file): \(header.type) parses back to another value") }
        }
    }
    return failures
}

@Suite("Box model: parse and serialize")
struct BoxModelTests {
    @Test(arguments: BoxSample.all)
    func parseOfSerializeIsTheSameBox(_ sample: BoxSample) throws {
        let bytes = sample.box.box.serialized
        let parsed = try AnyBox.parse(bytes, table: sample.table)
        #expect(parsed == sample.box)
        #expect(parsed.box.serialized == bytes)
    }

    @Test(arguments: MovieReaderTests.layouts)
    func everyBoxWeWriteReadsBackToItsBytes(_ options: MovieWriter.Options) throws {
        let (bytes, _) = try writtenMovie(options)
        #expect(try topLevelBoxesRoundTrip(bytes, file: "written") == [])
    }

    /// `sgpd` of each version (ISO/IEC 14496-12 §8.9.3): default_length from version 1 on, the
    /// default index from 2, and version 0 of a type whose entries cannot be told apart kept as
    /// bytes. CI's FuzzMovie found a version 2 box read without its default_length: three
    /// zero-length entries that, written back, no longer parsed.
    @Test(arguments: [
        // version 2, default_length 0: each entry with its own length (2 and 0 bytes).
        [2, 0, 0, 0] + Array("alst".utf8) + [0, 0, 0, 0] + [0, 0, 0, 1] + [0, 0, 0, 2] + [0, 0, 0, 2, 0xAB, 0xCD] + [0, 0, 0, 0],
        // version 2, default_length 1, three entries.
        [2, 0, 0, 0] + Array("rap ".utf8) + [0, 0, 0, 1] + [0, 0, 0, 0] + [0, 0, 0, 3] + [0x80, 0x81, 0x82],
        // version 0 roll: 2 bytes an entry.
        [0, 0, 0, 0] + Array("roll".utf8) + [0, 0, 0, 2] + [0xFF, 0xFF, 0xFF, 0xFE],
        // version 0 of another type: three entries of no length the box could give.
        [0, 0, 0, 0] + Array("xyzw".utf8) + [0, 0, 0, 3],
        [0, 0, 0, 0] + Array("xyzw".utf8) + [0, 0, 0, 3] + [1, 2, 3],
    ] as [[UInt8]])
    func sampleGroupDescriptionOfEachVersionWritesBack(_ payload: [UInt8]) throws {
        var writer = BoxWriter()
        writer.box("sgpd") { $0.append(payload) }
        let parsed = try AnyBox.parse(writer.bytes)
        let box = try #require(parsed.box as? SampleGroupDescriptionBox)
        #expect(parsed.box.serialized == writer.bytes)
        #expect(try AnyBox.parse(parsed.box.serialized) == parsed)
        if box.version >= 1 { #expect(box.entries.allSatisfy { box.defaultLength == 0 || $0.count == Int(box.defaultLength) }) }
    }

    /// An entry_count the bytes left cannot hold is an error naming the box, never an
    /// allocation of that size.
    @Test(arguments: [
        [1, 0, 0, 0] + Array("roll".utf8) + [0, 0, 0, 2] + [0x7F, 0xFF, 0xFF, 0xFF] + [0, 1],
        [2, 0, 0, 0] + Array("alst".utf8) + [0, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 2] + [0, 0, 0, 0],
        [0, 0, 0, 0] + Array("xyzw".utf8) + [0x7F, 0xFF, 0xFF, 0xFF],
    ] as [[UInt8]])
    func sampleGroupDescriptionWithTooManyEntriesIsAnError(_ payload: [UInt8]) {
        var writer = BoxWriter()
        writer.box("sgpd") { $0.append(payload) }
        #expect(throws: ContainerError.self) { _ = try AnyBox.parse(writer.bytes) }
    }

    /// Eight bytes of size and type, and a 64-bit size of 2^63 or more: an error, never a
    /// trap in the integer conversion (every subcommand that opened such a file died).
    @Test(arguments: [UInt64(1) << 63, UInt64.max, UInt64(Int64.max)])
    func aHugeLargeSizeIsAnError(_ size: UInt64) throws {
        var bytes: [UInt8] = [0, 0, 0, 1] + Array("mdat".utf8)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: size >> UInt64(shift))) }
        #expect(throws: ContainerError.self) { _ = try read(bytes) }
        #expect(throws: ContainerError.self) { _ = try AnyBox.parse(bytes) }
        var nested = BoxWriter()
        nested.box("moov") { $0.append(bytes) }
        #expect(throws: ContainerError.self) { _ = try AnyBox.parse(nested.bytes) }
    }
}

@Suite("Box model on the corpus (H264KIT_CORPUS)", .requiresCorpus)
struct BoxModelCorpusTests {
    static let movies = Corpus.entries().filter(\.isContainer).map(\.path)

    /// Every box of every corpus movie, read through its type and written back: byte-identical.
    @Test(arguments: movies)
    func corpusBoxesWriteBackByteForByte(_ path: String) throws {
        let url = try #require(Corpus.directory).appendingPathComponent(path)
        #expect(try topLevelBoxesRoundTrip([UInt8](try Data(contentsOf: url)), file: path) == [])
    }
}
