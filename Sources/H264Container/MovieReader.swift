#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import H264Bitstream
public import MediaCore

/// Reads MP4 and MOV files: the box tree (with limits), tracks, edit lists, sample tables and
/// fragments, and yields each H.264 track's samples as sample buffers in decoding order (the
/// AVAssetReader track-output analogue). The file is mapped, and samples reference the mapping
/// without copying.
///
/// A broken file gives a ``ContainerError`` with the box path and offset, or, when the index
/// is intact but the media is cut short (a truncated download, `mdat` past the end), the intact
/// samples and a warning in ``warnings``.
public final class MovieReader: @unchecked Sendable {
    /// One sample's place and timing in the media.
    public struct SampleEntry: Sendable, Hashable {
        public var offset: UInt64
        public var size: UInt32
        /// Decode time in the track's timescale.
        public var decodeTime: Int64
        public var compositionOffset: Int32
        public var duration: UInt32
        public var isSync: Bool
        /// 1-based index into the track's sample descriptions.
        public var descriptionIndex: UInt32
        /// The `sdtp` byte, when present.
        public var dependency: UInt8?
    }

    /// A sample description: an H.264 format, or another codec we only name.
    public enum SampleDescription: Sendable {
        case h264(VideoFormatDescription)
        /// A `tmcd` or `tc64` timecode sample entry.
        case timecode(TimecodeFormatDescription)
        case other(FourCharCode)
    }

    public struct Track: Sendable {
        public var id: UInt32
        /// `vide`, `soun`, `tmcd`, ...
        public var handlerType: FourCharCode
        public var timescale: Int32
        /// Media duration (`mdhd`), in the track's timescale.
        public var mediaDuration: UInt64
        /// Edits: duration in the movie timescale, media time in the track's (-1: empty).
        public var edits: [(duration: UInt64, mediaTime: Int64, rate: Double)]
        public var descriptions: [SampleDescription]
        public var samples: [SampleEntry]
        public var width: Double
        public var height: Double
        public var isFragmented: Bool
        /// Track references (`tref`): type → track ids.
        public var references: [FourCharCode: [UInt32]]

        /// The H.264 format descriptions, when the track is H.264 video.
        public var isH264: Bool { descriptions.contains { if case .h264 = $0 { true } else { false } } }
        /// Sum of sample durations.
        public var sampleDuration: Int64 { samples.reduce(0) { $0 + Int64($1.duration) } }
    }

    /// Limits on untrusted structure.
    public static let maximumDepth = 16
    public static let maximumSampleDescriptions = 1024

    public let path: String
    public private(set) var tracks: [Track] = []
    /// The top-level boxes in file order.
    public private(set) var topLevelBoxes: [BoxHeader] = []
    public private(set) var movieTimescale: UInt32 = 1000
    public private(set) var majorBrand: FourCharCode?
    public private(set) var compatibleBrands: [FourCharCode] = []
    /// Problems that do not stop reading (media cut short).
    public private(set) var warnings: [String] = []
    /// The movie's metadata: QuickTime `meta` (mdta) items, `udta` user data and iTunes items,
    /// in file order.
    public private(set) var metadata: [MetadataItem] = []
    func appendWarning(_ warning: String) { warnings.append(warning) }
    func appendMetadata(_ item: MetadataItem) { metadata.append(item) }
    /// The mapping, kept alive by the sample buffers that reference it.
    public let data: BlockBuffer

    public var fileSize: Int { data.count }

    public init(path: String) throws(ContainerError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("cannot open", path: path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system("cannot stat", path: path) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ContainerError(.invalidInput, "not a regular file", path: path) }
        let size = Int(info.st_size)
        guard size >= 8 else { throw ContainerError(.truncated, "\(size) bytes is too short for an MP4/MOV file", path: path) }
        guard let pointer = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), pointer != MAP_FAILED else {
            throw .system("cannot map", path: path)
        }
        nonisolated(unsafe) let mapping = pointer
        data = BlockBuffer(referencing: UnsafeRawBufferPointer(start: pointer, count: size)) { _ in munmap(mapping, size) }
        try data.withUnsafeBytes { (bytes) throws(ContainerError) in try parse(bytes) }
    }

    /// Whether the first bytes look like an MP4/MOV box (`ftyp`, `moov`, `mdat`, `free`, `wide`, `skip`).
    public static func looksLikeMovie(_ prefix: UnsafeRawBufferPointer) -> Bool {
        guard prefix.count >= 8 else { return false }
        let type = FieldReader.u32(prefix, 4)
        return [FourCharCode("ftyp"), "moov", "mdat", "free", "wide", "skip", "pnot"].map(\.rawValue).contains(type)
    }

    // MARK: Parsing

    private func parse(_ bytes: UnsafeRawBufferPointer) throws(ContainerError) {
        var top = FieldReader(bytes, 0..<bytes.count, path: "", file: path)
        topLevelBoxes = try top.boxes(allowTruncatedLast: true) { header, declared in
            if declared < 0 {
                self.warnings.append("byte \(header.start): a box with an impossible size; the \(bytes.count - header.start) bytes from there on are ignored")
            } else {
                self.warnings.append("\(header.type) box at byte \(header.start) declares \(declared) bytes but the file ends after \(bytes.count - header.start): the file is truncated")
            }
        }
        guard let first = topLevelBoxes.first, Self.looksLikeMovie(UnsafeRawBufferPointer(rebasing: bytes[first.start..<min(first.start + 8, bytes.count)])) else {
            throw ContainerError(.invalidInput, "not an MP4/MOV file (no ftyp, moov or mdat box at the start)", path: path, byteOffset: 0)
        }
        if let ftyp = topLevelBoxes.first(where: { $0.type == "ftyp" }) {
            var r = top.child(ftyp)
            majorBrand = FourCharCode(rawValue: try r.u32("major_brand"))
            try r.skip(4, "minor_version")
            while r.remaining >= 4 { compatibleBrands.append(FourCharCode(rawValue: try r.u32())) }
        }
        guard let moov = topLevelBoxes.first(where: { $0.type == "moov" }) else {
            throw ContainerError(.invalidInput, "no moov box: the index is missing (an unfinished recording?)", path: path)
        }
        if moov.end > bytes.count || warnings.contains(where: { $0.hasPrefix("moov") }) {
            throw ContainerError(.truncated, "the moov box is cut off by the end of the file", path: path, boxPath: "moov", byteOffset: moov.start)
        }
        var trackDefaults: [UInt32: (description: UInt32, duration: UInt32, size: UInt32, flags: UInt32)] = [:]
        var moovReader = top.child(moov)
        for (index, box) in try moovReader.boxes().enumerated() {
            var r = top.child(moov).child(box, index: index)
            switch box.type {
            case "mvhd":
                let (version, _) = try r.versionAndFlags()
                try r.skip(version == 1 ? 16 : 8, "times")
                movieTimescale = try r.u32("timescale")
                guard movieTimescale > 0 else { throw r.error("movie timescale 0") }
            case "trak":
                if let track = try parseTrack(r) { tracks.append(track) }
            case "udta":
                parseLeniently(r, "moov/udta") { r throws(ContainerError) in try parseUserData(r) }
            case "meta":
                parseLeniently(r, "moov/meta") { r throws(ContainerError) in try parseMeta(r) }
            case "mvex":
                for child in try r.boxes() where child.type == "trex" {
                    var t = r.child(child)
                    _ = try t.versionAndFlags()
                    let id = try t.u32("track_ID")
                    trackDefaults[id] = (try t.u32(), try t.u32(), try t.u32(), try t.u32())
                }
            default: break
            }
        }
        for box in topLevelBoxes where box.type == "moof" {
            try parseFragment(top.child(box), moofStart: box.start, defaults: trackDefaults)
        }
        // Samples whose bytes lie past the end of the file are dropped, with a warning.
        for index in tracks.indices {
            let count = tracks[index].samples.count
            if let firstMissing = tracks[index].samples.firstIndex(where: { $0.offset > UInt64(bytes.count) || UInt64(bytes.count) - $0.offset < UInt64($0.size) }) {
                tracks[index].samples.removeSubrange(firstMissing...)
                warnings.append("track \(tracks[index].id): \(count - firstMissing) of \(count) samples lie past the end of the file (truncated); \(firstMissing) intact samples kept")
            }
        }
    }

    private func parseTrack(_ trak: FieldReader) throws(ContainerError) -> Track? {
        var trak = trak
        var track = Track(id: 0, handlerType: FourCharCode(rawValue: 0), timescale: 1, mediaDuration: 0, edits: [], descriptions: [], samples: [],
                          width: 0, height: 0, isFragmented: false, references: [:])
        var tables = SampleTables()
        for (index, box) in try trak.boxes().enumerated() {
            var r = trak.child(box, index: index)
            switch box.type {
            case "tkhd":
                let (version, _) = try r.versionAndFlags()
                try r.skip(version == 1 ? 16 : 8, "times")
                track.id = try r.u32("track_ID")
                try r.skip(4 + (version == 1 ? 8 : 4) + 8 + 8 + 36, "tkhd fields")
                track.width = Double(try r.u32("width")) / 65536
                track.height = Double(try r.u32("height")) / 65536
            case "edts":
                for child in try r.boxes() where child.type == "elst" {
                    var e = r.child(child)
                    let (version, _) = try e.versionAndFlags()
                    let count = try e.u32("entry_count")
                    try e.checkEntries(count, size: version == 1 ? 20 : 12, "elst")
                    for _ in 0..<count {
                        let duration = version == 1 ? try e.u64() : UInt64(try e.u32())
                        let mediaTime = version == 1 ? Int64(bitPattern: try e.u64()) : Int64(Int32(bitPattern: try e.u32()))
                        let rate = Double(Int32(bitPattern: try e.u32())) / 65536
                        track.edits.append((duration, mediaTime, rate))
                    }
                }
            case "tref":
                for child in try r.boxes() {
                    var t = r.child(child)
                    var ids: [UInt32] = []
                    while t.remaining >= 4 { ids.append(try t.u32()) }
                    track.references[child.type] = ids
                }
            case "mdia":
                try parseMedia(r, track: &track, tables: &tables)
            default: break
            }
        }
        track.samples = try tables.samples(path: path, warnings: &warnings)
        return track
    }

    private func parseMedia(_ mdia: FieldReader, track: inout Track, tables: inout SampleTables) throws(ContainerError) {
        var mdia = mdia
        for (index, box) in try mdia.boxes().enumerated() {
            var r = mdia.child(box, index: index)
            switch box.type {
            case "mdhd":
                let (version, _) = try r.versionAndFlags()
                try r.skip(version == 1 ? 16 : 8, "times")
                let timescale = try r.u32("timescale")
                guard timescale > 0, timescale <= UInt32(Int32.max) else { throw r.error("media timescale \(timescale)") }
                track.timescale = Int32(timescale)
                track.mediaDuration = version == 1 ? try r.u64() : UInt64(try r.u32())
            case "hdlr":
                _ = try r.versionAndFlags()
                try r.skip(4, "pre_defined")
                track.handlerType = FourCharCode(rawValue: try r.u32("handler_type"))
            case "minf":
                for child in try r.boxes() where child.type == "stbl" {
                    try parseSampleTable(r.child(child), track: &track, tables: &tables)
                }
            default: break
            }
        }
    }

    private func parseSampleTable(_ stbl: FieldReader, track: inout Track, tables: inout SampleTables) throws(ContainerError) {
        var stbl = stbl
        for (index, box) in try stbl.boxes().enumerated() {
            var r = stbl.child(box, index: index)
            switch box.type {
            case "stsd":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                guard count <= Self.maximumSampleDescriptions else { throw r.error("\(count) sample descriptions") }
                for (entryIndex, entry) in try r.boxes().prefix(Int(count)).enumerated() {
                    track.descriptions.append(try parseSampleEntry(r.child(entry, index: entryIndex), type: entry.type))
                }
            case "stts":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 8, "stts")
                tables.timeToSample.reserveCapacity(Int(count))
                for _ in 0..<count { tables.timeToSample.append((try r.u32(), try r.u32())) }
            case "ctts":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 8, "ctts")
                // Version 0 offsets are unsigned, but writers put negative values there too: read signed, as FFmpeg does.
                for _ in 0..<count { tables.compositionOffsets.append((try r.u32(), Int32(bitPattern: try r.u32()))) }
            case "stss":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 4, "stss")
                var sync: [UInt32] = []
                sync.reserveCapacity(Int(count))
                for _ in 0..<count { sync.append(try r.u32()) }
                tables.syncSamples = sync
            case "sdtp":
                _ = try r.versionAndFlags()
                tables.dependencies = try r.array(r.remaining)
            case "stsz":
                _ = try r.versionAndFlags()
                let constant = try r.u32("sample_size")
                let count = try r.u32("sample_count")
                if constant == 0 {
                    try r.checkEntries(count, size: 4, "stsz")
                    tables.sizes.reserveCapacity(Int(count))
                    for _ in 0..<count { tables.sizes.append(try r.u32()) }
                } else {
                    guard UInt64(count) * UInt64(constant) <= UInt64(fileSize) * 2 else { throw r.error("stsz: \(count) samples of \(constant) bytes cannot fit a \(fileSize)-byte file") }
                    tables.sizes = Array(repeating: constant, count: Int(count))
                }
            case "stz2":
                _ = try r.versionAndFlags()
                try r.skip(3, "reserved")
                let fieldSize = try r.u8("field_size")
                let count = try r.u32("sample_count")
                guard [4, 8, 16].contains(fieldSize) else { throw r.error("stz2 field size \(fieldSize)") }
                try r.checkEntries(UInt32((UInt64(count) * UInt64(fieldSize) + 7) / 8), size: 1, "stz2")
                var sizes: [UInt32] = []
                var index: UInt32 = 0
                while index < count {
                    switch fieldSize {
                    case 4:
                        let byte = try r.u8()
                        sizes.append(UInt32(byte >> 4)); index += 1
                        if index < count { sizes.append(UInt32(byte & 15)); index += 1 }
                    case 8: sizes.append(UInt32(try r.u8())); index += 1
                    default: sizes.append(UInt32(try r.u16())); index += 1
                    }
                }
                tables.sizes = sizes
            case "stsc":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 12, "stsc")
                for _ in 0..<count { tables.sampleToChunk.append((try r.u32(), try r.u32(), try r.u32())) }
            case "stco":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 4, "stco")
                tables.chunkOffsets.reserveCapacity(Int(count))
                for _ in 0..<count { tables.chunkOffsets.append(UInt64(try r.u32())) }
            case "co64":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 8, "co64")
                tables.chunkOffsets.reserveCapacity(Int(count))
                for _ in 0..<count { tables.chunkOffsets.append(try r.u64()) }
            default: break
            }
        }
        tables.path = stbl.path
    }

    private func parseSampleEntry(_ entry: FieldReader, type: FourCharCode) throws(ContainerError) -> SampleDescription {
        if let format = TimecodeFormatDescription.SampleFormat(fourCC: type) { return try parseTimecodeEntry(entry, format) }
        guard type == "avc1" || type == "avc3" else { return .other(type) }
        var r = entry
        try r.skip(78, "visual sample entry fields")
        var avcC: [UInt8]?
        for child in try r.boxes() where child.type == "avcC" {
            var c = r.child(child)
            avcC = try c.array(c.remaining)
        }
        guard let avcC else { throw r.error("\(type) sample entry without an avcC box") }
        do {
            return .h264(try VideoFormatDescription(avcC: avcC, codec: type))
        } catch {
            throw ContainerError(.invalidBox, "avcC: \(error)", path: path, boxPath: r.path + "/avcC")
        }
    }

    private func parseFragment(_ moof: FieldReader, moofStart: Int, defaults: [UInt32: (description: UInt32, duration: UInt32, size: UInt32, flags: UInt32)]) throws(ContainerError) {
        var moof = moof
        for (trafIndex, traf) in try moof.boxes().enumerated() where traf.type == "traf" {
            var t = moof.child(traf, index: trafIndex)
            var trackIndex: Int?
            var base = UInt64(moofStart)
            var description: UInt32 = 1, duration: UInt32 = 0, size: UInt32 = 0, flags: UInt32 = 0
            var decodeTime: Int64?
            for box in try t.boxes() {
                var r = t.child(box)
                switch box.type {
                case "tfhd":
                    let (_, tf) = try r.versionAndFlags()
                    let id = try r.u32("track_ID")
                    guard let index = tracks.firstIndex(where: { $0.id == id }) else { throw r.error("track fragment for unknown track \(id)") }
                    trackIndex = index
                    if let d = defaults[id] { (description, duration, size, flags) = d }
                    if tf & 0x1 != 0 { base = try r.u64("base_data_offset") }
                    if tf & 0x2 != 0 { description = try r.u32() }
                    if tf & 0x8 != 0 { duration = try r.u32() }
                    if tf & 0x10 != 0 { size = try r.u32() }
                    if tf & 0x20 != 0 { flags = try r.u32() }
                case "tfdt":
                    let (version, _) = try r.versionAndFlags()
                    decodeTime = version == 1 ? Int64(bitPattern: try r.u64()) : Int64(try r.u32())
                case "trun":
                    guard let index = trackIndex else { throw r.error("trun before tfhd") }
                    let (_, tr) = try r.versionAndFlags()
                    let count = try r.u32("sample_count")
                    var dataOffset = base
                    if tr & 0x1 != 0 {
                        let relative = Int64(Int32(bitPattern: try r.u32()))
                        guard base <= UInt64(Int64.max), Int64(base) + relative >= 0 else { throw r.error("trun data_offset \(relative) points before the file") }
                        dataOffset = UInt64(Int64(base) + relative)
                    }
                    var firstFlags: UInt32?
                    if tr & 0x4 != 0 { firstFlags = try r.u32() }
                    let perSample = [0x100, 0x200, 0x400, 0x800].filter { tr & UInt32($0) != 0 }.count * 4
                    try r.checkEntries(count, size: perSample, "trun")
                    tracks[index].isFragmented = true
                    var time = decodeTime ?? tracks[index].samples.last.map { $0.decodeTime + Int64($0.duration) } ?? 0
                    for i in 0..<count {
                        let d = tr & 0x100 != 0 ? try r.u32() : duration
                        let s = tr & 0x200 != 0 ? try r.u32() : size
                        var f = tr & 0x400 != 0 ? try r.u32() : flags
                        if i == 0, let firstFlags { f = firstFlags }
                        let c = tr & 0x800 != 0 ? Int32(bitPattern: try r.u32()) : 0
                        let dependsOn = UInt8(f >> 24 & 3), dependedOn = UInt8(f >> 22 & 3)
                        tracks[index].samples.append(SampleEntry(offset: dataOffset, size: s, decodeTime: time, compositionOffset: c, duration: d,
                                                                 isSync: f & 0x0001_0000 == 0, descriptionIndex: description,
                                                                 dependency: dependsOn << 4 | dependedOn << 2))
                        dataOffset &+= UInt64(s)
                        time &+= Int64(d)
                    }
                    decodeTime = time
                    base = dataOffset
                default: break
                }
            }
        }
    }
}

/// The sample table boxes of one track, turned into one entry per sample.
struct SampleTables {
    var path = ""
    var timeToSample: [(count: UInt32, delta: UInt32)] = []
    var compositionOffsets: [(count: UInt32, offset: Int32)] = []
    var syncSamples: [UInt32]?
    var dependencies: [UInt8]?
    var sizes: [UInt32] = []
    var sampleToChunk: [(firstChunk: UInt32, samplesPerChunk: UInt32, description: UInt32)] = []
    var chunkOffsets: [UInt64] = []

    func samples(path file: String, warnings: inout [String]) throws(ContainerError) -> [MovieReader.SampleEntry] {
        let count = sizes.count
        guard count > 0 else { return [] }
        func fail(_ reason: String) -> ContainerError { ContainerError(.invalidBox, reason, path: file, boxPath: path) }
        var result: [MovieReader.SampleEntry] = []
        result.reserveCapacity(count)
        // Offsets: walk chunks with the stsc runs.
        var sample = 0
        for (runIndex, run) in sampleToChunk.enumerated() {
            guard run.firstChunk >= 1 else { throw fail("stsc first_chunk 0") }
            let lastChunk = runIndex + 1 < sampleToChunk.count ? Int(sampleToChunk[runIndex + 1].firstChunk) - 1 : chunkOffsets.count
            guard lastChunk <= chunkOffsets.count else { throw fail("stsc refers to chunk \(lastChunk) of \(chunkOffsets.count)") }
            if Int(run.firstChunk) > lastChunk { continue }
            for chunk in Int(run.firstChunk)...max(Int(run.firstChunk), lastChunk) where chunk <= lastChunk {
                var offset = chunkOffsets[chunk - 1]
                for _ in 0..<run.samplesPerChunk {
                    guard sample < count else { break }
                    result.append(MovieReader.SampleEntry(offset: offset, size: sizes[sample], decodeTime: 0, compositionOffset: 0, duration: 0,
                                                          isSync: true, descriptionIndex: run.description, dependency: nil))
                    offset &+= UInt64(sizes[sample])
                    sample += 1
                }
            }
        }
        if result.count < count {
            // FFmpeg keeps the samples the chunks hold; so do we, and say so.
            warnings.append("\(path): the chunks hold \(result.count) samples but stsz lists \(count); the first \(result.count) are used")
        }
        let kept = result.count
        var time: Int64 = 0
        var index = 0
        // Runs are walked only as far as the samples go: a damaged count must not cost
        // billions of empty iterations.
        for run in timeToSample where index < kept {
            for _ in 0..<min(Int(run.count), kept - index) {
                result[index].decodeTime = time
                result[index].duration = run.delta
                time += Int64(run.delta)
                index += 1
            }
        }
        index = 0
        for run in compositionOffsets where index < kept {
            for _ in 0..<min(Int(run.count), kept - index) {
                result[index].compositionOffset = run.offset
                index += 1
            }
        }
        if let syncSamples {
            for i in result.indices { result[i].isSync = false }
            for number in syncSamples where number >= 1 && Int(number) <= kept { result[Int(number) - 1].isSync = true }
        }
        if let dependencies {
            for i in result.indices where i < dependencies.count { result[i].dependency = dependencies[i] }
        }
        return result
    }
}

extension MovieReader {
    /// The first H.264 video track, if any.
    public var firstVideoTrackIndex: Int? { tracks.firstIndex { $0.handlerType == "vide" && $0.isH264 } ?? tracks.firstIndex { $0.isH264 } }

    /// The track's samples as sample buffers in decoding order; their data references the
    /// file mapping. Presentation times have the edit list applied (the first edit's media
    /// time subtracted, an initial empty edit added).
    public func sampleBuffers(track index: Int) throws(ContainerError) -> [SampleBuffer] {
        var result: [SampleBuffer] = []
        try forEachSampleBuffer(track: index) { result.append($0) }
        return result
    }

    public func forEachSampleBuffer(track index: Int, _ body: (SampleBuffer) throws(ContainerError) -> Void) throws(ContainerError) {
        let track = tracks[index]
        let scale = track.timescale
        let (shift, delay) = editOffsets(track)
        for (number, entry) in track.samples.enumerated() {
            guard entry.descriptionIndex >= 1, Int(entry.descriptionIndex) <= track.descriptions.count else {
                throw ContainerError(.invalidBox, "sample \(number + 1) uses sample description \(entry.descriptionIndex) of \(track.descriptions.count)", path: path, boxPath: "moov/trak")
            }
            guard case .h264(let format) = track.descriptions[Int(entry.descriptionIndex) - 1] else {
                throw ContainerError(.unsupported, "track \(track.id) is not H.264", path: path)
            }
            let dependsOn = entry.dependency.map { $0 >> 4 & 3 }
            let dependedOn = entry.dependency.map { $0 >> 2 & 3 }
            let decode = MediaTime(value: entry.decodeTime &- shift &+ delay, timescale: scale)
            let presentation = MediaTime(value: entry.decodeTime &+ Int64(entry.compositionOffset) &- shift &+ delay, timescale: scale)
            let sample = SampleBuffer(
                data: data[Int(entry.offset)..<(Int(entry.offset) + Int(entry.size))],
                formatDescription: format,
                timing: SampleTiming(presentationTime: presentation, decodeTime: decode, duration: MediaTime(value: Int64(entry.duration), timescale: scale)),
                attachments: SampleAttachments(isSync: entry.isSync,
                                               dependsOnOthers: dependsOn.flatMap { $0 == 0 ? nil : $0 == 1 },
                                               isDependedOnByOthers: dependedOn.flatMap { $0 == 0 ? nil : $0 == 1 }))
            try body(sample)
        }
    }
}
