public import H264Bitstream
public import MediaCore
import MPEG4Audio
import SystemIO

/// Reads MP4 and MOV files: the box tree (through the box types, with limits), tracks, edit
/// lists, sample tables and fragments, timecode and metadata (the AVAssetReader analogue).
/// The file is mapped, and samples reference the mapping without copying.
///
/// A broken file gives a `ContainerError` with the box path and offset, or, when the index
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

    /// A sample description: an H.264 format, an AAC or G.711 format, a timecode format, or
    /// another codec we only name (its entry's bytes are in ``Track/sampleEntries``, to carry it).
    public enum SampleDescription: Sendable {
        /// An `avc1` or `avc3` sample entry with its avcC, as a format description.
        case h264(VideoFormatDescription)
        /// An `mp4a` sample entry of AAC (an `esds` of MPEG-4 or MPEG-2 AAC with its
        /// AudioSpecificConfig), or a `ulaw`/`alaw` one (G.711), as a format description.
        case audio(AudioFormatDescription)
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
        /// Every sample, in decoding order, from the sample table and any movie fragments. A
        /// G.711 track's samples (a byte a channel each) are gathered into runs as its chunks
        /// hold them, at most ``MovieReader/maximumG711Run`` samples a run, as FFmpeg reads them.
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
        /// The sample entries' bytes (`stsd`), size and type included, in order: what carries a
        /// codec this reader does not read to another movie as it was.
        public var sampleEntries: [[UInt8]] = []
        /// The language (`mdhd`), an ISO 639-2/T code; nil when undetermined (`und`).
        public var language: String?
        /// `tkhd` flags: ``TrackHeaderBox/enabled``, ``TrackHeaderBox/inMovie``, ...
        public var headerFlags: UInt32 = 0
        /// `tkhd` alternate_group: tracks of one group are alternatives (audio in languages).
        public var alternateGroup: Int16 = 0
        /// The `roll` sample group's distance (AAC: -1, a frame decoded before the first shown
        /// is needed), when the track has one.
        public var rollDistance: Int16?
        /// Encoder priming from an iTunes `iTunSMPB` item, samples, when the file has one and
        /// the track no edit list says it.
        public var encoderDelay: Int?

        /// The kind of media, from the handler and the first description.
        public var mediaType: MediaType {
            switch descriptions.first {
            case .h264: return .video
            case .audio: return .audio
            case .timecode: return .timecode
            default: return handlerType == "sbtl" ? .subtitle : MediaType(rawValue: handlerType)
            }
        }

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

        /// Whether the track is AAC.
        public var isAAC: Bool { descriptions.contains { if case .audio(let format) = $0 { format.isAAC } else { false } } }

        /// The format of sample description `index` (from 0): H.264, AAC and timecode as read,
        /// anything else as an opaque description holding its sample entry's bytes.
        public func format(at index: Int) -> FormatDescription? {
            guard descriptions.indices.contains(index) else { return nil }
            switch descriptions[index] {
            case .h264(let format): return .video(format)
            case .audio(let format): return .audio(format)
            case .timecode(let format): return .timecode(format)
            case .other(let code):
                let entry = index < sampleEntries.count ? sampleEntries[index] : []
                var opaque = OpaqueFormatDescription(mediaType: mediaType, codec: code, name: MovieReader.codecName(code, entry: entry), sampleEntry: entry)
                if mediaType == .audio, entry.count >= 36 {
                    // The fixed fields of an audio sample entry: channelcount at 24, samplerate at 32.
                    opaque.channelCount = Int(entry[24]) << 8 | Int(entry[25])
                    let rate = Int(entry[32]) << 8 | Int(entry[33])
                    opaque.sampleRate = rate > 0 ? rate : Int(timescale)
                }
                return .opaque(opaque)
            }
        }

        /// The track as a source describes it: its ID, its first format, language, timescale.
        public var trackDescription: TrackDescription? {
            format(at: 0).map { TrackDescription(id: TrackID(rawValue: id), format: $0, language: language, timescale: timescale) }
        }
    }

    /// A codec's name for messages, from its sample entry type (and an `mp4a` entry's object type).
    static func codecName(_ code: FourCharCode, entry: [UInt8]) -> String {
        switch code.description {
        case "mp4a":
            // MP3 in an esds (object type 0x69 or 0x6B), or AAC without a configuration read.
            if let index = entry.indices.dropLast(16).first(where: { entry[$0] == 0x04 && entry.count > $0 + 5 }), [0x69, 0x6B].contains(entry[index + 5]) { return "MP3" }
            return "MPEG-4 audio"
        case ".mp3": return "MP3"
        case "ac-3": return "AC-3"
        case "ec-3": return "E-AC-3"
        case "Opus": return "Opus"
        case "fLaC": return "FLAC"
        case "alac": return "ALAC"
        case "ulaw": return "G.711 µ-law"
        case "alaw": return "G.711 A-law"
        case "lpcm", "sowt", "twos", "in24", "in32", "fl32", "fl64", "raw ": return "PCM"
        case "tx3g": return "3GPP timed text"
        case "wvtt": return "WebVTT"
        case "stpp": return "TTML"
        case "c608", "c708": return "closed captions"
        case "hvc1", "hev1": return "H.265"
        case "av01": return "AV1"
        case "vp09": return "VP9"
        case "mp4v": return "MPEG-4 video"
        case "mp4s": return "MPEG-4 systems"
        default: return code.description
        }
    }

    /// How a sample sequence applies the track's edit list.
    public enum EditListHandling: Sendable, Hashable {
        /// Times are shifted so the edit starts at its place on the movie timeline; every
        /// video sample is shown (a remuxer's view). An audio track's packets still carry the
        /// edit's trims, so that a remux keeps an encoder's priming out of the presentation as
        /// `ffmpeg -c copy` keeps the edit.
        case shift
        /// Shifted as for ``shift``, and samples shown before the edit's start or after its
        /// end are marked `SampleAttachments/doNotDisplay`: they are decoded for their
        /// references but not shown (a player's view, and what `ffmpeg` decodes).
        case trim
    }

    /// Limits on untrusted structure.
    public static let maximumSampleDescriptions = 1024

    /// The most G.711 samples gathered into one run (a sample buffer): 1024, FFmpeg's packet
    /// of such sound (128 ms at 8 kHz).
    public static let maximumG711Run = 1024

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

    /// The first AAC track, if any.
    public var firstAudioTrackIndex: Int? { tracks.firstIndex { $0.isAAC } }

    /// Every track with samples as a source describes it (timecode tracks, which belong to
    /// their video, left out), in `moov` order.
    public var trackDescriptions: [TrackDescription] {
        tracks.filter { !$0.samples.isEmpty && $0.mediaType != .timecode }.compactMap(\.trackDescription)
    }

    /// The index of the track with ID `id`.
    public func trackIndex(id: UInt32) -> Int? { tracks.firstIndex { $0.id == id } }

    /// The samples of track `index` in decoding order, as a random-access collection of
    /// sample buffers referencing the file, each carrying the track's ID. H.264 and AAC samples
    /// carry their format as read; other codecs' samples carry an opaque description holding
    /// their sample entry, so that a movie writer copies both as they were. Presentation times
    /// have the edit list applied (see ``EditListHandling``); for audio, a packet the edit
    /// begins or ends inside of says how much of it is not played
    /// (`SampleAttachments/trimDurationAtStart`). Throws when a sample names a description the
    /// track does not have: the collection itself cannot fail.
    public func sampleBuffers(track index: Int, editList: EditListHandling = .trim) throws(ContainerError) -> MovieSampleBuffers {
        guard tracks.indices.contains(index) else { throw ContainerError(.invalidInput, "no track at index \(index) (\(tracks.count) tracks)", path: path) }
        let track = tracks[index]
        let formats = track.descriptions.indices.map { track.format(at: $0) }
        for (number, entry) in track.samples.enumerated() {
            guard entry.descriptionIndex >= 1, Int(entry.descriptionIndex) <= formats.count else {
                throw ContainerError(.invalidBox, "sample \(number + 1) of track \(track.id) uses sample description \(entry.descriptionIndex) of \(formats.count)",
                                     path: path, boxPath: "moov/trak/mdia/minf/stbl")
            }
        }
        let (shift, delay) = editOffsets(track)
        var window: Range<Int64>?
        if editList == .trim || track.mediaType == .audio {
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
                                  timescale: track.timescale, shift: shift, delay: delay, window: window,
                                  trackID: TrackID(rawValue: track.id), trimsPackets: track.mediaType == .audio)
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
        if let edit = track.edits.first(where: { $0.mediaTime >= 0 }) {
            shift = edit.mediaTime
        } else if let priming = track.encoderDelay {
            shift = Int64(priming)  // iTunSMPB, where no edit list says it
        }
        return (shift, delay)
    }
}

/// An H.264 track's samples as sample buffers, in decoding order, random access: the file is
/// mapped and indexed, so reading a sample is making a buffer over its bytes. Made by
/// ``MovieReader/sampleBuffers(track:editList:)``.
public struct MovieSampleBuffers: RandomAccessCollection, Sendable {
    let samples: [MovieReader.SampleEntry]
    let formats: [FormatDescription?]
    let data: BlockBuffer
    let mapping: MappedFile?
    let timescale: Int32
    let shift: Int64
    let delay: Int64
    /// Presentation times shown (in the track's timescale, after the shift); nil shows all.
    let window: Range<Int64>?
    /// The track's ID, which the samples carry.
    let trackID: TrackID
    /// Whether a packet partly outside the window is trimmed (audio) rather than hidden
    /// when it starts outside (video).
    let trimsPackets: Bool

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
        var hidden = window.map { !$0.contains(presentation) } ?? false
        var trimStart: Int64 = 0, trimEnd: Int64 = 0
        if trimsPackets, let window {
            // Audio: a packet is played for the part of it inside the edit.
            let end = presentation &+ Int64(entry.duration)
            hidden = end <= window.lowerBound || presentation >= window.upperBound
            if !hidden {
                trimStart = Swift.max(0, window.lowerBound &- presentation)
                trimEnd = Swift.max(0, end &- window.upperBound)
            }
        }
        return SampleBuffer(
            data: data[Int(entry.offset)..<(Int(entry.offset) + Int(entry.size))],
            formatDescription: formats[Int(entry.descriptionIndex) - 1]!,
            timing: SampleTiming(presentationTime: MediaTime(value: presentation, timescale: timescale),
                                 decodeTime: MediaTime(value: decode, timescale: timescale),
                                 duration: MediaTime(value: Int64(entry.duration), timescale: timescale)),
            attachments: SampleAttachments(isSync: entry.isSync,
                                           dependsOnOthers: dependsOn.flatMap { $0 == 0 ? nil : $0 == 1 },
                                           isDependedOnByOthers: dependedOn.flatMap { $0 == 0 ? nil : $0 == 1 },
                                           doNotDisplay: hidden,
                                           trimDurationAtStart: MediaTime(value: trimStart, timescale: timescale),
                                           trimDurationAtEnd: MediaTime(value: trimEnd, timescale: timescale)),
            trackID: trackID)
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

    /// Where the sample at `position` starts in the file.
    public func byteOffset(of position: Int) -> Int { Int(samples[position].offset) }

    /// Lets the kernel take back the memory of the file's bytes before byte `offset` (a source
    /// reading several tracks gives back what lies behind all of them).
    public func releaseMemory(beforeByte offset: Int) {
        guard let mapping, offset > 0 else { return }
        mapping.advise(.dontNeed, range: 0..<(Swift.min(offset, mapping.count) & ~(MappedFile.pageSize - 1)))
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
        if let priming = Self.encoderDelay(movieBox) {
            for index in tracks.indices where tracks[index].isAAC && !tracks[index].edits.contains(where: { $0.mediaTime >= 0 }) {
                tracks[index].encoderDelay = priming
            }
        }
    }

    /// The encoder delay an iTunes `iTunSMPB` item gives (its second field, hexadecimal
    /// samples: ` 00000000 00000840 000001CA ...` says 2112), when the movie has one.
    static func encoderDelay(_ moov: MovieBox) -> Int? {
        for udta in moov.all(UserDataBox.self) {
            for meta in udta.all(MetaBox.self) {
                for list in meta.children.compactMap({ $0.as(ItemListBox.self) }) {
                    for item in list.children.compactMap({ $0.as(ItemListEntryBox.self) }) where item.type == "----" {
                        let texts = item.children.compactMap { $0.as(ItemListTextBox.self) }
                        guard texts.contains(where: { $0.type == "name" && String(decoding: $0.text, as: UTF8.self) == "iTunSMPB" }),
                              let data = item.first(DataBox.self) else { continue }
                        let fields = String(decoding: data.value, as: UTF8.self).split(separator: " ")
                        guard fields.count >= 2, let delay = Int(fields[1], radix: 16), (0...1 << 20).contains(delay) else { return nil }
                        return delay
                    }
                }
            }
        }
        return nil
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
            track.headerFlags = header.flags
            track.alternateGroup = header.alternateGroup
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
            track.language = MediaHeaderBox.languageCode(header.language)
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
                track.descriptions.append(try description(entry, path: tablePath + "/stsd", timescale: track.timescale))
                var bytes = BoxWriter()
                entry.write(to: &bytes)
                track.sampleEntries.append(bytes.bytes)
            }
        }
        if let roll = table.all(SampleGroupDescriptionBox.self).first(where: { $0.groupingType == "roll" }) { track.rollDistance = roll.rollDistances.first }
        track.samples = try samples(table, path: tablePath)
        if !track.descriptions.isEmpty, track.descriptions.allSatisfy({ if case .audio(let format) = $0 { format.isG711 } else { false } }) {
            track.samples = Self.gatheredRuns(track.samples, limit: MovieReader.maximumG711Run)
        }
        return track
    }

    /// Samples that follow one another in the file and in time (a chunk's G.711 samples, a
    /// byte a channel each) gathered into runs of at most `limit` samples (by duration).
    static func gatheredRuns(_ samples: [MovieReader.SampleEntry], limit: Int) -> [MovieReader.SampleEntry] {
        var runs: [MovieReader.SampleEntry] = []
        runs.reserveCapacity(samples.count / 64 + 1)
        for sample in samples {
            if var run = runs.last, run.descriptionIndex == sample.descriptionIndex, run.compositionOffset == sample.compositionOffset,
               run.offset &+ UInt64(run.size) == sample.offset, run.decodeTime &+ Int64(run.duration) == sample.decodeTime,
               Int(run.duration) + Int(sample.duration) <= limit, run.size.addingReportingOverflow(sample.size).overflow == false {
                run.size += sample.size
                run.duration += sample.duration
                runs[runs.count - 1] = run
            } else {
                runs.append(sample)
            }
        }
        return runs
    }

    mutating func description(_ entry: AnyBox, path entryPath: String, timescale: Int32) throws(ContainerError) -> MovieReader.SampleDescription {
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
        if let audio = entry.as(AudioSampleEntry.self) { return audioDescription(audio, path: entryPath, timescale: timescale) }
        return .other(entry.type)
    }

    /// An `mp4a` entry as AAC when its `esds` (in the entry or in QuickTime's `wave`) names
    /// MPEG-4 or MPEG-2 AAC and holds a configuration that reads; else it is carried as it is
    /// (MP3 in `mp4a`, say), and a configuration that does not read is said.
    mutating func audioDescription(_ entry: AudioSampleEntry, path entryPath: String, timescale: Int32) -> MovieReader.SampleDescription {
        if entry.type == "ulaw" || entry.type == "alaw" {
            // G.711: the rate and channels in the entry (16.16; a QuickTime sound description of
            // version 2 has them in its extension), else the track's timescale.
            var rate = Int(entry.sampleRate >> 16), channels = Int(entry.channelCount)
            if entry.version == 2, let extended = entry.version2, extended.count >= 16 {
                let bits = extended[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let value = Double(bitPattern: bits)
                rate = value.isFinite && value >= 1 && value <= 1_000_000 ? Int(value) : 0
                channels = Int(extended[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            }
            let sampleRate = rate > 0 ? rate : Int(timescale)
            guard sampleRate > 0 else { return .other(entry.type) }  // no rate to time it by: carried as it is
            return .audio(AudioFormatDescription(codec: entry.type, sampleRate: sampleRate, channelCount: (1...64).contains(channels) ? channels : 1,
                                                 framesPerPacket: 1))
        }
        guard let esds = entry.elementaryStreamDescriptor else { return .other(entry.type) }
        let descriptor: ElementaryStreamDescriptor
        do throws(BitstreamError) { descriptor = try esds.descriptor() } catch {
            warnings.append("\(entryPath)/\(entry.type)/esds: \(error.description); the track is carried as it is")
            return .other(entry.type)
        }
        // 0x40 MPEG-4 Audio; 0x66, 0x67, 0x68 MPEG-2 AAC Main, LC, SSR (the same configuration).
        guard [0x40, 0x66, 0x67, 0x68].contains(descriptor.decoderConfig.objectTypeIndication), let config = descriptor.decoderConfig.decoderSpecificInfo else {
            return .other(entry.type)
        }
        do throws(BitstreamError) {
            let format = try AudioFormatDescription(aacConfiguration: config)
            guard format.audioSpecificConfig?.frameLength != nil else { return .other(entry.type) }  // not the AAC family
            return .audio(format)
        } catch {
            warnings.append("\(entryPath)/\(entry.type)/esds: the AudioSpecificConfig does not read (\(error.description)); the track is carried as it is")
            return .other(entry.type)
        }
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
