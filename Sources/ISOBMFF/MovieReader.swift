public import H264Bitstream
public import MediaCore
import SystemIO

/// Reads MP4 and MOV files: the box tree (through the box types, with limits), tracks, edit
/// lists, sample tables and fragments, timecode and metadata (the AVAssetReader analogue).
/// The file is mapped, and samples reference the mapping without copying.
///
/// A broken file gives a ``ContainerError`` with the box path and offset, or, when the index
/// is intact but the media is cut short (a truncated download, `mdat` past the end), the intact
/// samples and a warning in ``warnings``. Every count read from the file is checked against
/// what the file can hold before anything is allocated from it.
///
/// A reader is immutable once made, so it is `Sendable`, and any number of sample sequences
/// (``sampleBuffers(track:editList:)``) can read it at once.
public final class MovieReader: Sendable {
    /// One sample's place and timing in the media.
    public struct SampleEntry: Sendable, Hashable {
        /// The sample's first byte in the file.
        public var offset: UInt64
        /// The sample's size in bytes.
        public var size: UInt32
        /// Decode time in the track's timescale.
        public var decodeTime: Int64
        /// Presentation time less decode time (`ctts`), in the track's timescale.
        public var compositionOffset: Int32
        /// How long the sample lasts, in the track's timescale.
        public var duration: UInt32
        /// Whether the sample is a sync sample (`stss`, or the fragment's sample flags).
        public var isSync: Bool
        /// 1-based index into the track's sample descriptions.
        public var descriptionIndex: UInt32
        /// The `sdtp` byte, when present.
        public var dependency: UInt8?
    }

    /// A sample description: an H.264 format, a timecode format, or another codec we only name.
    public enum SampleDescription: Sendable {
        /// An `avc1` or `avc3` sample entry with its avcC, as a format description.
        case h264(VideoFormatDescription)
        /// A `tmcd` or `tc64` timecode sample entry.
        case timecode(TimecodeFormatDescription)
        /// A sample entry of another type, named by its four-character code.
        case other(FourCharCode)
    }

    /// One track.
    public struct Track: Sendable {
        /// The track's ID (`tkhd` track_ID).
        public var id: UInt32
        /// `vide`, `soun`, `tmcd`, ...
        public var handlerType: FourCharCode
        /// Media time units per second (`mdhd`).
        public var timescale: Int32
        /// Media duration (`mdhd`), in the track's timescale.
        public var mediaDuration: UInt64
        /// The edit list.
        public var edits: [EditListBox.Entry]
        /// The sample descriptions (`stsd`), in order.
        public var descriptions: [SampleDescription]
        /// Every sample, in decoding order, from the sample table and any movie fragments.
        public var samples: [SampleEntry]
        /// Display size (`tkhd`).
        public var width: Double
        /// Display height (`tkhd`).
        public var height: Double
        /// The display transform (`tkhd`): a rotation, for phone video.
        public var matrix: TransformationMatrix
        /// Whether some samples came from movie fragments (`moof`/`trun`).
        public var isFragmented: Bool
        /// Track references (`tref`): type → track ids.
        public var references: [FourCharCode: [UInt32]]

        /// Whether the track is H.264 video.
        public var isH264: Bool { descriptions.contains { if case .h264 = $0 { true } else { false } } }
        /// Sum of sample durations.
        public var sampleDuration: Int64 { samples.reduce(0) { $0 + Int64($1.duration) } }
        /// The average frame rate: samples per second of their durations (what mediainfo and
        /// ffprobe's `avg_frame_rate` report); nil without samples.
        public var nominalFrameRate: FrameRate? {
            let duration = sampleDuration
            guard duration > 0, !samples.isEmpty else { return nil }
            return FrameRate(UInt64(samples.count) * UInt64(timescale), UInt64(duration))
        }
        /// The H.264 format descriptions, in sample-description order.
        public var formatDescriptions: [VideoFormatDescription] {
            descriptions.compactMap { if case .h264(let format) = $0 { format } else { nil } }
        }
    }

    /// How a sample sequence applies the track's edit list.
    public enum EditListHandling: Sendable, Hashable {
        /// Times are shifted so the edit starts at its place on the movie timeline; every
        /// sample is shown (a remuxer's view).
        case shift
        /// Shifted as for ``shift``, and samples shown before the edit's start or after its
        /// end are marked `SampleAttachments/doNotDisplay`: they are decoded for their
        /// references but not shown (a player's view, and what `ffmpeg` decodes).
        case trim
    }

    /// Limits on untrusted structure.
    public static let maximumSampleDescriptions = 1024

    /// Limits on what a file may make the reader hold, so an index that declares more than a
    /// real file needs is an error before it is allocated (FFmpeg's `max_alloc` serves the
    /// same end). Counts are also checked against the file's size whatever the limits.
    public struct Limits: Sendable, Hashable {
        /// The most samples in all tracks together: 2^24 by default (77 hours at 60 frames a
        /// second), about 800 MB of sample entries.
        public var maximumSamples: Int

        /// Limits; the defaults suit any real recording.
        public init(maximumSamples: Int = 1 << 24) {
            self.maximumSamples = maximumSamples
        }
    }

    /// The limits the file was read with.
    public let limits: Limits

    /// The file's path, as given.
    public let path: String
    /// The tracks, in `moov` order.
    public let tracks: [Track]
    /// The top-level boxes in file order.
    public let topLevelBoxes: [BoxHeader]
    /// The parsed `moov`.
    public let movieBox: MovieBox
    /// Movie time units per second (`mvhd`).
    public let movieTimescale: UInt32
    /// The `ftyp` major brand, nil without an `ftyp` box.
    public let majorBrand: FourCharCode?
    /// The `ftyp` compatible brands; empty without an `ftyp` box.
    public let compatibleBrands: [FourCharCode]
    /// Problems that do not stop reading (media cut short, damaged metadata).
    public let warnings: [String]
    /// The movie's metadata: QuickTime `meta` (mdta) items, `udta` user data and iTunes items,
    /// in file order.
    public let metadata: [MetadataItem]
    /// The mapping, kept alive by the sample buffers that reference it.
    public let data: BlockBuffer
    /// The mapped file, to tell the kernel which pages are no longer needed (nil for bytes in memory).
    let mapping: MappedFile?

    /// The file's size in bytes.
    public var fileSize: Int { data.count }

    /// Opens and indexes `path`.
    public convenience init(path: String, limits: Limits = Limits()) throws(ContainerError) {
        let file: MappedFile
        do { file = try MappedFile(path: path) } catch {
            if error.isEmptyFile { throw ContainerError(.truncated, "0 bytes is too short for an MP4/MOV file", path: path) }
            if error.isNotRegularFile { throw ContainerError(.invalidInput, "not a regular file", path: path) }
            throw ContainerError(systemError: error)
        }
        try self.init(name: path, data: BlockBuffer(referencing: file.bytes) { _ in withExtendedLifetime(file) {} }, bytes: file.bytes, mapping: file, limits: limits)
    }

    /// Indexes a movie held in memory (a download, a test vector); `name` stands for a path
    /// in errors and ``path``. The bytes are copied once and the samples reference the copy.
    public convenience init(bytes: [UInt8], name: String = "bytes", limits: Limits = Limits()) throws(ContainerError) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
        let buffer = UnsafeRawBufferPointer(copy)
        try self.init(name: name, data: BlockBuffer(referencing: buffer) { $0.deallocate() }, bytes: buffer, mapping: nil, limits: limits)
    }

    private init(name path: String, data: BlockBuffer, bytes: UnsafeRawBufferPointer, mapping: MappedFile?, limits: Limits) throws(ContainerError) {
        self.path = path
        self.mapping = mapping
        self.limits = limits
        guard bytes.count >= 8 else { throw ContainerError(.truncated, "\(bytes.count) bytes is too short for an MP4/MOV file", path: path) }
        self.data = data
        var parser = Parser(path: path, bytes: bytes, limits: limits)
        try parser.parse()
        tracks = parser.tracks
        topLevelBoxes = parser.topLevelBoxes
        movieBox = parser.movieBox
        movieTimescale = parser.movieTimescale
        majorBrand = parser.fileType?.majorBrand
        compatibleBrands = parser.fileType?.compatibleBrands ?? []
        warnings = parser.warnings
        metadata = parser.metadata
    }

    /// Whether the first bytes look like an MP4/MOV box (`ftyp`, `moov`, `mdat`, `free`, `wide`, `skip`).
    public static func looksLikeMovie(_ prefix: UnsafeRawBufferPointer) -> Bool {
        guard prefix.count >= 8 else { return false }
        let type = BoxReader.u32(prefix, 4)
        return [FourCharCode("ftyp"), "moov", "mdat", "free", "wide", "skip", "pnot"].map(\.rawValue).contains(type)
    }

    /// Whether the file at `path` starts like an MP4/MOV file.
    public static func looksLikeMovie(path: String) -> Bool {
        guard let prefix = try? filePrefix(path, count: 8) else { return false }
        return prefix.withUnsafeBytes { looksLikeMovie($0) }
    }

    /// The first H.264 video track, if any.
    public var firstVideoTrackIndex: Int? { tracks.firstIndex { $0.handlerType == "vide" && $0.isH264 } ?? tracks.firstIndex { $0.isH264 } }

    /// The index of the track with ID `id`.
    public func trackIndex(id: UInt32) -> Int? { tracks.firstIndex { $0.id == id } }

    /// The H.264 samples of track `index` in decoding order, as a random-access collection of
    /// sample buffers referencing the file. Presentation times have the edit list applied
    /// (see ``EditListHandling``). Throws when the track is not H.264 video or a sample names
    /// a description it does not have: the collection itself cannot fail.
    public func sampleBuffers(track index: Int, editList: EditListHandling = .trim) throws(ContainerError) -> MovieSampleBuffers {
        guard tracks.indices.contains(index) else { throw ContainerError(.invalidInput, "no track at index \(index) (\(tracks.count) tracks)", path: path) }
        let track = tracks[index]
        var formats: [VideoFormatDescription?] = []
        for description in track.descriptions {
            if case .h264(let format) = description { formats.append(format) } else { formats.append(nil) }
        }
        guard track.isH264 else { throw ContainerError(.unsupported, "track \(track.id) is not H.264 video", path: path) }
        for (number, entry) in track.samples.enumerated() {
            guard entry.descriptionIndex >= 1, Int(entry.descriptionIndex) <= formats.count else {
                throw ContainerError(.invalidBox, "sample \(number + 1) of track \(track.id) uses sample description \(entry.descriptionIndex) of \(formats.count)",
                                     path: path, boxPath: "moov/trak/mdia/minf/stbl")
            }
            guard formats[Int(entry.descriptionIndex) - 1] != nil else {
                throw ContainerError(.unsupported, "sample \(number + 1) of track \(track.id) is not H.264", path: path)
            }
        }
        let (shift, delay) = editOffsets(track)
        var window: Range<Int64>?
        if editList == .trim {
            let start = delay
            var end = Int64.max
            if let edit = track.edits.first(where: { $0.mediaTime >= 0 }), edit.segmentDuration > 0, movieTimescale > 0 {
                let (product, overflow) = Int64(clamping: edit.segmentDuration).multipliedReportingOverflow(by: Int64(track.timescale))
                if !overflow {
                    let (sum, past) = start.addingReportingOverflow(product / Int64(movieTimescale))
                    if !past { end = sum }
                }
            }
            window = start..<max(start, end)
        }
        return MovieSampleBuffers(samples: track.samples, formats: formats, data: data, mapping: mapping,
                                  timescale: track.timescale, shift: shift, delay: delay, window: window)
    }

    /// The edit list as a shift: the first edit's media time, and an initial empty edit's
    /// length in the track's timescale.
    func editOffsets(_ track: Track) -> (shift: Int64, delay: Int64) {
        var shift: Int64 = 0
        var delay: Int64 = 0
        if let empty = track.edits.first, empty.mediaTime == -1 {
            let (product, overflow) = Int64(clamping: empty.segmentDuration).multipliedReportingOverflow(by: Int64(track.timescale))
            delay = overflow ? 0 : product / Int64(max(movieTimescale, 1))
        }
        if let edit = track.edits.first(where: { $0.mediaTime >= 0 }) { shift = edit.mediaTime }
        return (shift, delay)
    }
}

/// An H.264 track's samples as sample buffers, in decoding order, random access: the file is
/// mapped and indexed, so reading a sample is making a buffer over its bytes. Made by
/// ``MovieReader/sampleBuffers(track:editList:)``.
public struct MovieSampleBuffers: RandomAccessCollection, Sendable {
    let samples: [MovieReader.SampleEntry]
    let formats: [VideoFormatDescription?]
    let data: BlockBuffer
    let mapping: MappedFile?
    let timescale: Int32
    let shift: Int64
    let delay: Int64
    /// Presentation times shown (in the track's timescale, after the shift); nil shows all.
    let window: Range<Int64>?

    /// The position of the first sample: 0.
    public var startIndex: Int { 0 }
    /// The position past the last sample: the sample count.
    public var endIndex: Int { samples.count }

    /// The sample at `position` (decoding order).
    public subscript(position: Int) -> SampleBuffer {
        let entry = samples[position]
        let dependsOn = entry.dependency.map { $0 >> 4 & 3 }
        let dependedOn = entry.dependency.map { $0 >> 2 & 3 }
        let decode = entry.decodeTime &- shift &+ delay
        let presentation = entry.decodeTime &+ Int64(entry.compositionOffset) &- shift &+ delay
        let hidden = window.map { !$0.contains(presentation) } ?? false
        return SampleBuffer(
            data: data[Int(entry.offset)..<(Int(entry.offset) + Int(entry.size))],
            formatDescription: formats[Int(entry.descriptionIndex) - 1]!,
            timing: SampleTiming(presentationTime: MediaTime(value: presentation, timescale: timescale),
                                 decodeTime: MediaTime(value: decode, timescale: timescale),
                                 duration: MediaTime(value: Int64(entry.duration), timescale: timescale)),
            attachments: SampleAttachments(isSync: entry.isSync,
                                           dependsOnOthers: dependsOn.flatMap { $0 == 0 ? nil : $0 == 1 },
                                           isDependedOnByOthers: dependedOn.flatMap { $0 == 0 ? nil : $0 == 1 },
                                           doNotDisplay: hidden))
    }

    /// Lets the kernel take back the memory of the file's bytes before the sample at `position`
    /// (`MADV_DONTNEED` on the mapping): a reader going through the samples in order calls it
    /// so that its resident memory stays flat instead of growing to the file's size. Samples
    /// handed out earlier stay valid: touching their bytes reads them from the file again.
    public func releaseMemory(before position: Int) {
        guard let mapping, position > 0, position < samples.count else { return }
        let offset = Int(samples[position].offset)
        mapping.advise(.dontNeed, range: 0..<(offset & ~(MappedFile.pageSize - 1)))
    }

    /// The sync sample at or before `position`: where decoding must start to show it.
    public func syncSample(atOrBefore position: Int) -> Int? {
        var index = Swift.min(position, samples.count - 1)
        while index >= 0 {
            if samples[index].isSync { return index }
            index -= 1
        }
        return nil
    }
}

extension ContainerError {
    /// A system call that failed, as the cause of an I/O error (`reason` says what was being
    /// done, when more than the call's own operation).
    init(systemError: SystemError, reason: String? = nil) {
        self.init(.io, (reason.map { $0 + ": " } ?? "") + "\(systemError.operation.rawValue): \(systemError.errno)", path: systemError.path)
        self.systemError = systemError
    }
}

// MARK: - Parsing

/// Builds a reader's tracks and metadata from the box tree.
struct Parser {
    let path: String
    let bytes: UnsafeRawBufferPointer
    let limits: MovieReader.Limits
    var tracks: [MovieReader.Track] = []
    var topLevelBoxes: [BoxHeader] = []
    var movieBox = MovieBox()
    var movieTimescale: UInt32 = 1000
    var fileType: FileTypeBox?
    var warnings: [String] = []
    var metadata: [MetadataItem] = []

    /// Sample entries still allowed: the smaller of the limit and the file's size (every
    /// sample holds at least a byte of the file), less those made so far.
    var sampleBudget: Int

    init(path: String, bytes: UnsafeRawBufferPointer, limits: MovieReader.Limits) {
        self.path = path
        self.bytes = bytes
        self.limits = limits
        sampleBudget = min(limits.maximumSamples, bytes.count)
    }

    /// Takes `count` samples from the budget, or throws naming `field` and the limit.
    mutating func spend(_ count: Int, _ field: String, boxPath: String) throws(ContainerError) {
        guard count <= sampleBudget else {
            let made = min(limits.maximumSamples, bytes.count) - sampleBudget
            let bound = limits.maximumSamples <= bytes.count
                ? "over the limit of \(limits.maximumSamples) samples (MovieReader.Limits.maximumSamples)"
                : "more than the \(bytes.count)-byte file can hold (a sample is at least a byte)"
            throw ContainerError(limits.maximumSamples <= bytes.count ? .limitExceeded : .invalidBox,
                                 "\(field) adds \(count) samples to the \(made) read before: \(bound)", path: path, boxPath: boxPath)
        }
        sampleBudget -= count
    }

    func reader(_ header: BoxHeader) -> BoxReader {
        BoxReader(bytes, header.payload, boxType: header.type, path: "\(header.type)", file: path, depth: 1)
    }

    mutating func parse() throws(ContainerError) {
        var top = BoxReader(bytes, 0..<bytes.count, boxType: FourCharCode(rawValue: 0), path: "", file: path)
        var moovTruncated = false
        while top.remaining > 0 {
            let start = top.offset
            do {
                guard let (header, declared) = try top.nextHeader(allowTruncated: true) else { break }
                topLevelBoxes.append(header)
                if UInt64(header.end - header.start) < declared {
                    warnings.append("\(header.type) box at byte \(header.start) declares \(declared) bytes but the file ends after \(bytes.count - header.start): the file is truncated")
                    if header.type == "moov" { moovTruncated = true }
                }
            } catch {
                warnings.append("byte \(start): a box with an impossible size; the \(bytes.count - start) bytes from there on are ignored")
                break
            }
        }
        guard let first = topLevelBoxes.first,
              MovieReader.looksLikeMovie(UnsafeRawBufferPointer(rebasing: bytes[first.start..<min(first.start + 8, bytes.count)])) else {
            throw ContainerError(.invalidInput, "not an MP4/MOV file (no ftyp, moov or mdat box at the start)", path: path, byteOffset: 0)
        }
        if let ftyp = topLevelBoxes.first(where: { $0.type == "ftyp" }) {
            var r = reader(ftyp)
            fileType = try FileTypeBox(parsing: &r)
        }
        guard let moov = topLevelBoxes.first(where: { $0.type == "moov" }) else {
            throw ContainerError(.invalidInput, "no moov box: the index is missing (an unfinished recording?)", path: path)
        }
        if moovTruncated {
            throw ContainerError(.truncated, "the moov box is cut off by the end of the file", path: path, boxPath: "moov", byteOffset: moov.start)
        }
        var moovReader = reader(moov)
        movieBox = try MovieBox(parsing: &moovReader)
        guard let header = movieBox.first(MovieHeaderBox.self) else { throw ContainerError(.invalidBox, "moov without mvhd", path: path, boxPath: "moov") }
        guard header.timescale > 0 else { throw ContainerError(.invalidBox, "movie timescale 0", path: path, boxPath: "moov/mvhd") }
        movieTimescale = header.timescale
        for (index, trak) in movieBox.all(TrackBox.self).enumerated() {
            tracks.append(try track(trak, path: index == 0 ? "moov/trak" : "moov/trak[\(index)]"))
        }
        var defaults: [UInt32: TrackExtendsBox] = [:]
        for trex in movieBox.first(MovieExtendsBox.self)?.all(TrackExtendsBox.self) ?? [] { defaults[trex.trackID] = trex }
        for box in topLevelBoxes where box.type == "moof" {
            var r = reader(box)
            try fragment(try MovieFragmentBox(parsing: &r), moofStart: box.start, defaults: defaults)
        }
        // Samples whose bytes lie past the end of the file are dropped, with a warning.
        for index in tracks.indices {
            let count = tracks[index].samples.count
            if let firstMissing = tracks[index].samples.firstIndex(where: { $0.offset > UInt64(bytes.count) || UInt64(bytes.count) - $0.offset < UInt64($0.size) }) {
                tracks[index].samples.removeSubrange(firstMissing...)
                warnings.append("track \(tracks[index].id): \(count - firstMissing) of \(count) samples lie past the end of the file (truncated); \(firstMissing) intact samples kept")
            }
        }
        collectMetadata()
    }

    // MARK: Tracks

    mutating func track(_ trak: TrackBox, path boxPath: String) throws(ContainerError) -> MovieReader.Track {
        var track = MovieReader.Track(id: 0, handlerType: FourCharCode(rawValue: 0), timescale: 1, mediaDuration: 0, edits: [], descriptions: [],
                                      samples: [], width: 0, height: 0, matrix: .identity, isFragmented: false, references: [:])
        if let header = trak.first(TrackHeaderBox.self) {
            track.id = header.trackID
            track.width = header.displayWidth
            track.height = header.displayHeight
            track.matrix = header.matrix
        }
        track.edits = trak.first(EditBox.self)?.first(EditListBox.self)?.entries ?? []
        for reference in trak.first(TrackReferenceBox.self)?.all(TrackReferenceTypeBox.self) ?? [] {
            track.references[reference.type] = reference.trackIDs
        }
        guard let media = trak.first(MediaBox.self) else { return track }
        if let header = media.first(MediaHeaderBox.self) {
            guard header.timescale > 0, header.timescale <= UInt32(Int32.max) else {
                throw ContainerError(.invalidBox, "media timescale \(header.timescale)", path: path, boxPath: boxPath + "/mdia/mdhd")
            }
            track.timescale = Int32(header.timescale)
            track.mediaDuration = header.duration
        }
        track.handlerType = media.first(HandlerBox.self)?.handlerType ?? FourCharCode(rawValue: 0)
        guard let table = media.first(MediaInformationBox.self)?.first(SampleTableBox.self) else { return track }
        let tablePath = boxPath + "/mdia/minf/stbl"
        if let stsd = table.first(SampleDescriptionBox.self) {
            guard stsd.entries.count <= MovieReader.maximumSampleDescriptions else {
                throw ContainerError(.invalidBox, "\(stsd.entries.count) sample descriptions (at most \(MovieReader.maximumSampleDescriptions))", path: path, boxPath: tablePath + "/stsd")
            }
            // The entries the count declares (FFmpeg reads no more), of those present.
            for entry in stsd.entries.prefix(Int(stsd.declaredEntryCount ?? UInt32(stsd.entries.count))) {
                track.descriptions.append(try description(entry, path: tablePath + "/stsd"))
            }
        }
        track.samples = try samples(table, path: tablePath)
        return track
    }

    mutating func description(_ entry: AnyBox, path entryPath: String) throws(ContainerError) -> MovieReader.SampleDescription {
        if let visual = entry.as(VisualSampleEntry.self) {
            guard let avcC = visual.first(AVCConfigurationBox.self) else {
                throw ContainerError(.invalidBox, "\(visual.type) sample entry without an avcC box", path: path, boxPath: entryPath + "/\(visual.type)")
            }
            do {
                var format = try VideoFormatDescription(avcC: avcC.record, codec: visual.type)
                if visual.width > 0, visual.height > 0 { format.containerSize = (Int(visual.width), Int(visual.height)) }
                return .h264(format)
            } catch {
                throw ContainerError(.invalidBox, "avcC does not parse", path: path, boxPath: entryPath + "/\(visual.type)/avcC", cause: error)
            }
        }
        if let timecode = entry.as(TimecodeSampleEntry.self) { return timecodeDescription(timecode, path: entryPath) }
        return .other(entry.type)
    }

    /// A timecode sample entry as a format; a format the timecode rules refuse is named with
    /// a warning. A frame quanta that disagrees with the rate is replaced by the rounded rate
    /// (a GoPro says 29 frames per second at 29.97), as FFmpeg does, and said so.
    mutating func timecodeDescription(_ entry: TimecodeSampleEntry, path entryPath: String) -> MovieReader.SampleDescription {
        let code = entry.type
        guard let sampleFormat = TimecodeFormatDescription.SampleFormat(fourCC: code) else { return .other(code) }
        guard entry.timescale > 0, entry.timescale <= UInt32(Int32.max) else {
            warnings.append("\(entryPath)/\(code): timescale \(entry.timescale); the timecode is not read")
            return .other(code)
        }
        var frameQuanta = Int(entry.numberOfFrames)
        let flags = TimecodeFlags(rawValue: entry.flags)
        if !flags.contains(.counter), entry.frameDuration > 0 {
            let rounded = Int((UInt64(entry.timescale) + UInt64(entry.frameDuration) / 2) / UInt64(entry.frameDuration))
            if rounded != frameQuanta, (1...255).contains(rounded) {
                warnings.append("\(entryPath)/\(code): counts \(frameQuanta) frames per second at \(entry.timescale)/\(entry.frameDuration) fps; counting \(rounded), as FFmpeg does")
                frameQuanta = rounded
            }
        }
        var source: TimecodeFormatDescription.SourceReference?
        for child in entry.children {
            if let name = child.as(TimecodeSourceNameBox.self) { source = .init(name: name.name, languageCode: name.languageCode) }
        }
        do {
            return .timecode(try TimecodeFormatDescription(sampleFormat: sampleFormat, frameDuration: MediaTime(value: Int64(entry.frameDuration), timescale: Int32(entry.timescale)),
                                                           frameQuanta: frameQuanta, flags: flags, sourceReference: source))
        } catch {
            warnings.append("\(entryPath)/\(code) sample entry: " + error.description + "; the timecode is not read")
            return .other(code)
        }
    }

    /// One entry per sample from the sample table boxes. Counts are checked against what the
    /// file can hold before the entries are made.
    mutating func samples(_ table: SampleTableBox, path tablePath: String) throws(ContainerError) -> [MovieReader.SampleEntry] {
        func fail(_ reason: String, _ box: String) -> ContainerError { ContainerError(.invalidBox, reason, path: path, boxPath: tablePath + "/" + box) }
        let sizes: [UInt32]
        if let stsz = table.first(SampleSizeBox.self) {
            if stsz.constantSize == 0 {
                sizes = stsz.sizes
            } else {
                // Every sample lies in the file: the count cannot pass what the file can hold.
                guard UInt64(stsz.sampleCount) * UInt64(stsz.constantSize) <= UInt64(bytes.count) else {
                    throw fail("\(stsz.sampleCount) samples of \(stsz.constantSize) bytes cannot fit a \(bytes.count)-byte file", "stsz")
                }
                try spend(Int(stsz.sampleCount), "stsz sample_count", boxPath: tablePath + "/stsz")
                sizes = Array(repeating: stsz.constantSize, count: Int(stsz.sampleCount))
            }
        } else if let stz2 = table.first(CompactSampleSizeBox.self) {
            sizes = stz2.sizes
        } else {
            sizes = []
        }
        let count = sizes.count
        guard count > 0 else { return [] }
        if table.first(SampleSizeBox.self)?.constantSize ?? 0 == 0 { try spend(count, "the sample size table", boxPath: tablePath) }
        let chunkOffsets: [UInt64] = table.first(ChunkOffsetBox.self)?.offsets.map(UInt64.init) ?? table.first(ChunkLargeOffsetBox.self)?.offsets ?? []
        let sampleToChunk = table.first(SampleToChunkBox.self)?.entries ?? []
        var result: [MovieReader.SampleEntry] = []
        result.reserveCapacity(count)
        // Offsets: walk chunks with the stsc runs. first_chunk must increase (§8.7.4), so
        // every chunk is visited at most once, whatever the runs say.
        var sample = 0
        var previousFirstChunk: UInt32 = 0
        walk: for (runIndex, run) in sampleToChunk.enumerated() {
            guard run.firstChunk > previousFirstChunk else {
                throw fail("stsc entry \(runIndex + 1): first_chunk \(run.firstChunk) after \(previousFirstChunk) (it must increase, from 1)", "stsc")
            }
            previousFirstChunk = run.firstChunk
            let lastChunk = runIndex + 1 < sampleToChunk.count ? Int(sampleToChunk[runIndex + 1].firstChunk) - 1 : chunkOffsets.count
            guard lastChunk <= chunkOffsets.count else { throw fail("stsc refers to chunk \(lastChunk) of \(chunkOffsets.count)", "stsc") }
            if Int(run.firstChunk) > lastChunk || run.samplesPerChunk == 0 { continue }
            for chunk in Int(run.firstChunk)...lastChunk {
                var offset = chunkOffsets[chunk - 1]
                for _ in 0..<run.samplesPerChunk {
                    guard sample < count else { break walk }
                    result.append(MovieReader.SampleEntry(offset: offset, size: sizes[sample], decodeTime: 0, compositionOffset: 0, duration: 0,
                                                          isSync: true, descriptionIndex: run.sampleDescriptionIndex, dependency: nil))
                    offset &+= UInt64(sizes[sample])
                    sample += 1
                }
            }
        }
        if result.count < count {
            // FFmpeg keeps the samples the chunks hold; so do we, and say so.
            warnings.append("\(tablePath): the chunks hold \(result.count) samples but stsz lists \(count); the first \(result.count) are used")
        }
        let kept = result.count
        var time: Int64 = 0
        var index = 0
        // Runs are walked only as far as the samples go: a damaged count must not cost
        // billions of empty iterations.
        for run in table.first(TimeToSampleBox.self)?.entries ?? [] where index < kept {
            for _ in 0..<min(Int(run.count), kept - index) {
                result[index].decodeTime = time
                result[index].duration = run.value
                time &+= Int64(run.value)
                index += 1
            }
        }
        index = 0
        for run in table.first(CompositionOffsetBox.self)?.entries ?? [] where index < kept {
            for _ in 0..<min(Int(run.count), kept - index) {
                result[index].compositionOffset = run.value
                index += 1
            }
        }
        if let stss = table.first(SyncSampleBox.self) {
            for i in result.indices { result[i].isSync = false }
            for number in stss.sampleNumbers where number >= 1 && Int(number) <= kept { result[Int(number) - 1].isSync = true }
        }
        if let sdtp = table.first(SampleDependencyTypeBox.self) {
            for i in result.indices where i < sdtp.entries.count { result[i].dependency = sdtp.entries[i] }
        }
        return result
    }

    // MARK: Fragments

    mutating func fragment(_ moof: MovieFragmentBox, moofStart: Int, defaults: [UInt32: TrackExtendsBox]) throws(ContainerError) {
        for traf in moof.all(TrackFragmentBox.self) {
            guard let header = traf.first(TrackFragmentHeaderBox.self) else { throw ContainerError(.invalidBox, "traf without tfhd", path: path, boxPath: "moof/traf") }
            guard let index = tracks.firstIndex(where: { $0.id == header.trackID }) else {
                throw ContainerError(.invalidBox, "track fragment for unknown track \(header.trackID)", path: path, boxPath: "moof/traf/tfhd", byteOffset: moofStart)
            }
            let trex = defaults[header.trackID]
            var base = header.baseDataOffset ?? UInt64(moofStart)
            let description = header.sampleDescriptionIndex ?? trex?.defaultSampleDescriptionIndex ?? 1
            let duration = header.defaultSampleDuration ?? trex?.defaultSampleDuration ?? 0
            let size = header.defaultSampleSize ?? trex?.defaultSampleSize ?? 0
            let flags = header.defaultSampleFlags ?? trex?.defaultSampleFlags ?? 0
            var decodeTime: Int64? = traf.first(TrackFragmentBaseMediaDecodeTimeBox.self).map { Int64(bitPattern: $0.baseMediaDecodeTime) }
            for run in traf.all(TrackRunBox.self) {
                var dataOffset = base
                if let relative = run.dataOffset {
                    let (sum, overflow) = Int64(clamping: base).addingReportingOverflow(Int64(relative))
                    guard base <= UInt64(Int64.max), !overflow, sum >= 0 else {
                        throw ContainerError(.invalidBox, "trun data_offset \(relative) from base \(base) points outside the file", path: path, boxPath: "moof/traf/trun", byteOffset: moofStart)
                    }
                    dataOffset = UInt64(sum)
                }
                var count = Int(run.sampleCount)
                if run.entries.isEmpty && count > 0 {
                    // No per-sample fields: the count is bounded only by what the file can
                    // hold at the default size (a sample of 0 bytes holds nothing to decode).
                    let room = dataOffset < UInt64(bytes.count) ? UInt64(bytes.count) - dataOffset : 0
                    let fit = size == 0 ? 0 : Int(min(room / UInt64(size), UInt64(count)))
                    if fit < count {
                        warnings.append("moof at byte \(moofStart): a trun of \(count) samples of \(size) bytes from byte \(dataOffset); \(fit) fit in the file")
                        count = fit
                    }
                }
                // Runs may point at the same bytes again: the budget bounds them all together.
                try spend(count, "trun sample_count", boxPath: "moof/traf/trun")
                tracks[index].isFragmented = true
                var time = decodeTime ?? tracks[index].samples.last.map { $0.decodeTime &+ Int64($0.duration) } ?? 0
                for i in 0..<count {
                    let entry = run.entries.isEmpty ? TrackRunBox.Entry() : run.entries[i]
                    let d = entry.duration ?? duration
                    let s = entry.size ?? size
                    var f = entry.flags ?? flags
                    if i == 0, let first = run.firstSampleFlags { f = first }
                    let dependsOn = UInt8(f >> 24 & 3), dependedOn = UInt8(f >> 22 & 3)
                    tracks[index].samples.append(MovieReader.SampleEntry(
                        offset: dataOffset, size: s, decodeTime: time, compositionOffset: entry.compositionOffset ?? 0, duration: d,
                        isSync: f & 0x0001_0000 == 0, descriptionIndex: description, dependency: dependsOn << 4 | dependedOn << 2))
                    dataOffset &+= UInt64(s)
                    time &+= Int64(d)
                }
                decodeTime = time
                base = dataOffset
            }
        }
    }
}
