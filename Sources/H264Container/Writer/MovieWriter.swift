#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSystemShims
import H264Bitstream
public import MediaCore

/// The container flavour: ISO BMFF `.mp4` or QuickTime `.mov`.
public enum MovieFileType: String, Sendable, Hashable, CaseIterable {
    case mp4, mov

    /// The type a file name's extension implies (".mov"/".qt" → MOV, else MP4).
    public init(path: String) {
        let lower = path.lowercased()
        self = lower.hasSuffix(".mov") || lower.hasSuffix(".qt") ? .mov : .mp4
    }
}

/// Writes one H.264 video track of sample buffers to an MP4 or MOV file: the AVAssetWriter
/// analogue.
///
/// - Plain: `ftyp`, the media in `mdat` as it comes, `moov` at the end. The file is written
///   under a temporary name beside the target and renamed when complete, so a failure never
///   leaves a file that looks complete; a failed or abandoned writer removes its files.
/// - Faststart: `moov` before `mdat`. The media goes to a temporary file first; the index, padded
///   with `free` to whole 4096-byte blocks, is then inserted in front of it by the file system
///   (`fallocate(FALLOC_FL_INSERT_RANGE)`, ext4 and XFS: no copy, writeback started as the media
///   is written so the insert waits for little), or where that is not supported the media is
///   copied after the index in the kernel (`sendfile`). The same bytes either way; neither the
///   media nor the input is held in memory or read twice.
/// - Fragmented: `moov` up front, then `moof`+`mdat` per fragment of about the chosen duration
///   (cut at sync samples), `mfra` at the end. Written straight to the target (or a pipe):
///   a process killed at any point leaves every complete fragment playable.
///
/// Chunk offsets switch from `stco` to `co64` by themselves past 4 GiB, and `mdat` takes a
/// 64-bit size. Output is deterministic: no wall-clock times are written.
public final class MovieWriter {
    public struct Options: Sendable, Hashable {
        public var fileType: MovieFileType
        public var faststart: Bool
        /// Fragment length; nil for a plain file.
        public var fragmentDuration: MediaTime?
        /// Composition offsets as signed `ctts` version 1 values instead of an edit list shift.
        public var negativeCompositionOffsets: Bool
        /// `avc3` sample entries: parameter sets stay in the samples, one entry for the whole
        /// stream. Otherwise `avc1`, with a new sample entry at each parameter-set change.
        public var inBandParameterSets: Bool
        /// A timecode track for the video (TN2310), referenced from it by `tref`/`tmcd`.
        public var timecode: TimecodeTrack?
        /// Movie metadata; an item the file type cannot hold is an error at `init`.
        public var metadata: [MetadataItem]

        public init(fileType: MovieFileType = .mp4, faststart: Bool = false, fragmentDuration: MediaTime? = nil,
                    negativeCompositionOffsets: Bool = false, inBandParameterSets: Bool = false,
                    timecode: TimecodeTrack? = nil, metadata: [MetadataItem] = []) {
            self.fileType = fileType
            self.faststart = faststart
            self.fragmentDuration = fragmentDuration
            self.negativeCompositionOffsets = negativeCompositionOffsets
            self.inBandParameterSets = inBandParameterSets
            self.timecode = timecode
            self.metadata = metadata
        }
    }

    /// A timecode track: its format, and the timecode of the video's first shown frame; later
    /// runs start where the timecode jumps (an edit), each written as one sample lasting until
    /// the next run or the end of the video's presentation (never longer: the B-frame delay
    /// does not count).
    public struct TimecodeTrack: Sendable, Hashable {
        public struct Run: Sendable, Hashable {
            /// Presentation time from the first shown frame.
            public var time: MediaTime
            public var frameNumber: Int64
            public init(time: MediaTime, frameNumber: Int64) {
                self.time = time
                self.frameNumber = frameNumber
            }
        }

        public var format: TimecodeFormatDescription
        public var runs: [Run]

        public init(format: TimecodeFormatDescription, startFrameNumber: Int64) {
            self.format = format
            self.runs = [Run(time: .zero, frameNumber: startFrameNumber)]
        }

        public init(format: TimecodeFormatDescription, start: Timecode) throws(TimecodeError) {
            self.init(format: format, startFrameNumber: try format.frameNumber(for: start))
        }

        /// From presentation time `time` on, the frames count from `frameNumber`.
        public mutating func jump(at time: MediaTime, to frameNumber: Int64) {
            runs.append(Run(time: time, frameNumber: frameNumber))
        }
    }

    /// What was written.
    public struct Summary: Sendable {
        public var sampleCount: Int
        public var sampleDescriptionCount: Int
        public var duration: MediaTime
        public var fileSize: UInt64
        public var fragmentCount: Int
        public var usesLargeOffsets: Bool
    }

    public let path: String
    public let options: Options
    let output: FileOutput
    /// The name written to until the file is complete (nil when writing in place).
    let temporaryPath: String?
    /// Faststart: the media, written first; the index is then inserted before it (see ``finish()``).
    let media: FileOutput?
    /// Faststart: the media file's temporary name.
    let mediaPath: String?
    var finished = false
    var failed = false

    // Track state
    var descriptions: [VideoFormatDescription] = []
    var timescale: Int32 = 0
    var firstDecodeTime: MediaTime?
    var nextDecodeTime: Int64 = 0
    var sampleCount = 0
    var sizes: [UInt32] = []
    var timeToSample: [(count: UInt32, delta: UInt32)] = []
    var compositionOffsets: [(count: UInt32, offset: Int32)] = []
    var syncSamples: [UInt32] = []
    var dependencyFlags: [UInt8] = []
    var chunks: [(offset: UInt64, samples: UInt32, description: UInt32)] = []
    var chunkBytes = 0
    var chunkStartTime: Int64 = 0
    var minimumPresentation: Int64 = .max
    var maximumPresentationEnd: Int64 = .min
    var mediaDataStart: UInt64 = 0
    var lastDuration: Int64 = 0
    var largestSample = 0
    var totalBytes: UInt64 = 0

    // Fragment state
    var fragmentSamples: [(data: BlockBuffer, duration: UInt32, flags: UInt32, offset: Int32)] = []
    var fragmentStart: Int64 = 0
    var fragmentBytes = 0
    var fragmentCount = 0
    var fragmentIndex: [(time: UInt64, offset: UInt64)] = []
    var headerWritten = false
    var mehdOffset: UInt64?

    // Timecode track state: its samples (frame numbers, durations in the format's timescale)
    // and where they were written.
    var timecodeSamples: [(data: [UInt8], duration: Int64)] = []
    var timecodeOffset: UInt64 = 0

    /// Opens `path` for writing (`"-"` is standard output, fragmented mode only).
    public init(path: String, options: Options = Options()) throws(ContainerError) {
        self.path = path
        self.options = options
        if let duration = options.fragmentDuration {
            guard duration.isNumeric, duration.seconds > 0 else { throw ContainerError(.invalidInput, "fragment duration \(duration) is not positive", path: path) }
            guard !options.faststart else { throw ContainerError(.invalidInput, "a fragmented file has its moov first already; faststart does not apply", path: path) }
            guard options.timecode == nil else {
                throw ContainerError(.invalidInput, "a timecode track is not written in fragmented files yet; write a plain or faststart file for --timecode", path: path)
            }
        }
        try MetadataItem.validate(options.metadata, for: options.fileType, path: path)
        if let timecode = options.timecode {
            guard let first = timecode.runs.first, first.time == .zero else {
                throw ContainerError(.invalidInput, "the timecode track's first run must start at time 0", path: path)
            }
            for (previous, run) in zip(timecode.runs, timecode.runs.dropFirst()) where !(run.time > previous.time) {
                throw ContainerError(.invalidInput, "timecode runs must start at increasing times (\(run.time) after \(previous.time))", path: path)
            }
            for run in timecode.runs {
                do { _ = try timecode.format.sampleData(forFrameNumber: run.frameNumber) } catch {
                    throw ContainerError(.invalidInput, "timecode: \(error)", path: path)
                }
            }
        }
        var existing = stat()
        if path != "-" && stat(path, &existing) == 0 && existing.st_mode & S_IFMT != S_IFREG {
            // Never rename over a device, a pipe or a directory (the output is written under a
            // temporary name and renamed into place).
            throw ContainerError(.invalidInput, "not a regular file; an MP4/MOV file is written under a temporary name and renamed into place", path: path)
        }
        if path == "-" {
            guard options.fragmentDuration != nil else {
                throw ContainerError(.invalidInput, "only a fragmented file can be written to standard output (a plain MP4 needs to seek)", path: "stdout")
            }
            output = FileOutput(fd: 1, path: "stdout", ownsDescriptor: false)
            temporaryPath = nil
            media = nil
            mediaPath = nil
            return
        }
        if options.fragmentDuration != nil {
            // In place, so that a killed process leaves the fragments written so far.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw .system("cannot create", path: path) }
            output = FileOutput(fd: fd, path: path, ownsDescriptor: true)
            temporaryPath = nil
            media = nil
            mediaPath = nil
            return
        }
        let temporary = Self.temporaryName(for: path)
        output = try FileOutput(creating: temporary)
        temporaryPath = temporary
        if options.faststart {
            let mediaPath = Self.temporaryName(for: path) + ".mdat"
            do {
                media = try FileOutput(creating: mediaPath, readable: true)
                media?.startsWriteback = true
            } catch {
                unlink(temporary)
                throw error
            }
            self.mediaPath = mediaPath
        } else {
            media = nil
            mediaPath = nil
        }
    }

    deinit {
        if !finished, let temporaryPath { unlink(temporaryPath) }
        if !finished, let mediaPath { unlink(mediaPath) }
    }

    static func temporaryName(for path: String) -> String {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return "\(directory).\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).partial"
    }

    var isFragmented: Bool { options.fragmentDuration != nil }

    // MARK: Samples

    /// Appends the next sample, in decoding order.
    public func append(_ sample: SampleBuffer) throws(ContainerError) {
        precondition(!finished, "append after finish")
        guard !failed else { throw ContainerError(.invalidInput, "the writer failed earlier", path: path) }
        do { try appendSample(sample) } catch {
            failed = true
            throw error
        }
    }

    private func appendSample(_ sample: SampleBuffer) throws(ContainerError) {
        let timing = sample.timing
        guard timing.decodeTime.isNumeric, timing.presentationTime.isNumeric, timing.duration.isNumeric else {
            throw ContainerError(.invalidInput, "sample \(sampleCount) has no numeric timing (\(sample))", path: path)
        }
        if firstDecodeTime == nil { try start(with: sample) }
        var data = sample.data
        var description = try descriptionIndex(for: sample.formatDescription)
        if isFragmented && description > 1 {
            // A fragmented file's sample entries are fixed in its moov: carry the new parameter
            // sets in band, before the sample's NAL units.
            data = Self.prependingParameterSets(of: sample.formatDescription, to: data)
            description = 1
        }
        let decode = try mediaTime(timing.decodeTime - firstDecodeTime!, "decode time")
        let presentation = try mediaTime(timing.presentationTime - firstDecodeTime!, "presentation time")
        let duration = try mediaTime(timing.duration, "duration")
        guard decode >= nextDecodeTime || sampleCount == 0 else {
            throw ContainerError(.invalidInput, "sample \(sampleCount): decode time \(timing.decodeTime) is before the previous sample's end; samples must come in decoding order", path: path)
        }
        if decode > nextDecodeTime, sampleCount > 0 {
            // A gap: the previous sample lasts until this one starts.
            try extendLastDuration(by: decode - nextDecodeTime)
        }
        guard duration > 0, duration <= Int64(UInt32.max) else {
            throw ContainerError(.invalidInput, "sample \(sampleCount): duration \(timing.duration) is not positive", path: path)
        }
        var offset = presentation - decode
        if options.negativeCompositionOffsets { offset -= initialDelay }
        guard offset >= Int64(Int32.min), offset <= Int64(Int32.max) else {
            throw ContainerError(.invalidInput, "sample \(sampleCount): composition offset \(offset) out of range", path: path)
        }
        guard options.negativeCompositionOffsets || offset >= 0 else {
            throw ContainerError(.invalidInput, "sample \(sampleCount) is presented before it is decoded (\(sample)); use negative composition offsets", path: path)
        }
        nextDecodeTime = decode + duration
        lastDuration = duration
        minimumPresentation = min(minimumPresentation, presentation)
        maximumPresentationEnd = max(maximumPresentationEnd, presentation + duration)
        largestSample = max(largestSample, data.count)
        totalBytes += UInt64(data.count)
        guard data.count <= Int(UInt32.max) else { throw ContainerError(.invalidInput, "sample \(sampleCount) is over 4 GiB", path: path) }

        if isFragmented {
            try appendToFragment(sample, data: data, decode: decode, duration: duration, offset: offset)
        } else {
            let target = media ?? output
            let position = target.position
            try target.write(data)
            let newChunk = chunks.isEmpty || chunks[chunks.count - 1].description != UInt32(description)
                || chunkBytes >= 1 << 20 || decode - chunkStartTime >= Int64(timescale)
            if newChunk {
                chunks.append((position, 0, UInt32(description)))
                chunkBytes = 0
                chunkStartTime = decode
            }
            chunks[chunks.count - 1].samples += 1
            chunkBytes += data.count
            sizes.append(UInt32(data.count))
            Self.appendRun(&timeToSample, UInt32(duration))
            Self.appendRun(&compositionOffsets, Int32(offset))
            if sample.isSync { syncSamples.append(UInt32(sampleCount + 1)) }
            dependencyFlags.append(Self.dependencyByte(sample.attachments))
        }
        sampleCount += 1
    }

    /// The delay of the first shown sample, in media time (the B-frame reorder delay).
    var initialDelay: Int64 = 0

    private func start(with sample: SampleBuffer) throws(ContainerError) {
        firstDecodeTime = sample.decodeTime
        var scale = sample.duration.timescale
        while scale < 10000 && scale <= Int32.max / 2 { scale *= 2 }
        timescale = scale
        initialDelay = try mediaTime(sample.presentationTime - sample.decodeTime, "composition offset")
        if !isFragmented && media == nil {
            try output.write(Self.fileTypeBox(options, fragmented: false))
            // `free` is rewritten as the first half of a 64-bit mdat header if the media passes 4 GiB.
            do {
                var header = BoxWriter()
                header.u32(8); header.fourCC("free")
                header.u32(0); header.fourCC("mdat")
                mediaDataStart = output.position + 16
                try output.write(header.bytes)
            }
        }
    }

    private func mediaTime(_ time: MediaTime, _ what: String) throws(ContainerError) -> Int64 {
        let converted = time.converted(toTimescale: timescale)
        guard converted.isNumeric, !converted.flags.contains(.hasBeenRounded) else {
            throw ContainerError(.invalidInput, "sample \(sampleCount): \(what) \(time) is not a whole number of 1/\(timescale) s", path: path)
        }
        return converted.value
    }

    private func descriptionIndex(for description: VideoFormatDescription) throws(ContainerError) -> Int {
        if let index = descriptions.firstIndex(of: description) { return index + 1 }
        if options.inBandParameterSets, !descriptions.isEmpty { return 1 }
        guard descriptions.count < 1000 else { throw ContainerError(.invalidInput, "over 1000 parameter-set changes; use in-band parameter sets (avc3)", path: path) }
        descriptions.append(description)
        return descriptions.count
    }

    private func extendLastDuration(by extra: Int64) throws(ContainerError) {
        if isFragmented {
            guard let last = fragmentSamples.indices.last else { return }
            fragmentSamples[last].duration += UInt32(extra)
        } else {
            let last = timeToSample.count - 1
            if timeToSample[last].count == 1 {
                timeToSample[last].delta += UInt32(extra)
            } else {
                timeToSample[last].count -= 1
                timeToSample.append((1, timeToSample[last].delta + UInt32(extra)))
            }
        }
    }

    static func appendRun<T: Equatable>(_ runs: inout [(count: UInt32, delta: T)], _ value: T) {
        if let last = runs.indices.last, runs[last].delta == value { runs[last].count += 1 } else { runs.append((1, value)) }
    }
    static func appendRun<T: Equatable>(_ runs: inout [(count: UInt32, offset: T)], _ value: T) {
        if let last = runs.indices.last, runs[last].offset == value { runs[last].count += 1 } else { runs.append((1, value)) }
    }

    /// The `sdtp` byte: is_leading 0, sample_depends_on, sample_is_depended_on, has_redundancy 0.
    static func dependencyByte(_ attachments: SampleAttachments) -> UInt8 {
        let dependsOn: UInt8 = attachments.dependsOnOthers.map { $0 ? 1 : 2 } ?? 0
        let dependedOn: UInt8 = attachments.isDependedOnByOthers.map { $0 ? 1 : 2 } ?? 0
        return dependsOn << 4 | dependedOn << 2
    }

    static func prependingParameterSets(of description: VideoFormatDescription, to data: BlockBuffer) -> BlockBuffer {
        var bytes: [UInt8] = []
        for nal in description.sequenceParameterSets + description.pictureParameterSets {
            try? AVCC.append(nalUnit: nal.span, lengthSize: description.nalUnitLengthSize, to: &bytes)
        }
        data.withUnsafeBytes { bytes.append(contentsOf: $0) }
        return BlockBuffer(bytes)
    }

    // MARK: Finishing

    /// Completes the file: writes the index, and renames it into place. After an error the
    /// partial output is removed.
    @discardableResult
    public func finish() throws(ContainerError) -> Summary {
        precondition(!finished, "finish called twice")
        defer { finished = true }
        do throws(ContainerError) {
            guard !failed else { throw ContainerError(.invalidInput, "the writer failed earlier; no file written", path: path) }
            guard sampleCount > 0 else { throw ContainerError(.invalidInput, "no samples to write", path: path) }
            var largeOffsets = false
            var fileSize: UInt64?
            var complete = temporaryPath
            if isFragmented {
                try flushFragment()
                try writeFragmentIndex()
                if let mehdOffset, path != "-" {
                    var w = BoxWriter()
                    w.u64(UInt64(maximumPresentationEnd - minimumPresentation))
                    try output.patch(w.bytes, at: mehdOffset)
                }
                try output.flush()
            } else if let media, let mediaPath {
                try writeTimecodeSamples(to: media)
                try media.flush()
                let mediaSize = media.position
                let header = faststartHeader(mediaSize: mediaSize)
                largeOffsets = header.largeOffsets
                fileSize = UInt64(header.bytes.count) + mediaSize
                if csystem_insert_range(media.fd, 0, off_t(header.bytes.count)) == 0 {
                    // The file system moved the media up by whole blocks: the index goes in front
                    // of it without a copy, and the media file is the result.
                    try media.patch(header.bytes, at: 0)
                    unlink(output.path)
                    complete = mediaPath
                } else {
                    // No INSERT_RANGE here (tmpfs, btrfs, NFS): copy the media after the index.
                    try output.write(header.bytes)
                    try output.flush()
                    try Self.copy(from: media, size: mediaSize, to: output)
                    try output.flush()
                    unlink(mediaPath)
                }
            } else {
                try writeTimecodeSamples(to: output)
                try output.flush()
                let mediaSize = output.position - mediaDataStart
                largeOffsets = output.position > UInt64(UInt32.max)
                try output.write(movieBox(mediaOffset: 0, largeOffsets: largeOffsets))
                // Patch the mdat header: 32-bit size after `free`, or 64-bit over both.
                if mediaSize + 8 <= UInt64(UInt32.max) {
                    var w = BoxWriter(); w.u32(UInt32(mediaSize + 8))
                    try output.patch(w.bytes, at: mediaDataStart - 8)
                } else {
                    try output.patch(Self.mediaDataHeader(size: mediaSize, large: true), at: mediaDataStart - 16)
                }
                try output.flush()
            }
            if let complete {
                guard rename(complete, path) == 0 else { throw ContainerError.system("cannot rename \(complete) to the output", path: path) }
            }
            return Summary(sampleCount: sampleCount, sampleDescriptionCount: max(descriptions.count, 1),
                           duration: MediaTime(value: maximumPresentationEnd - minimumPresentation, timescale: timescale),
                           fileSize: fileSize ?? output.position, fragmentCount: fragmentCount, usesLargeOffsets: largeOffsets)
        } catch {
            if let temporaryPath { unlink(temporaryPath) }
            if let mediaPath { unlink(mediaPath) }
            throw error
        }
    }

    /// Writes the timecode track's samples after the video's: one per run, each lasting until
    /// the next run, the last until the end of the video's presentation.
    private func writeTimecodeSamples(to target: FileOutput) throws(ContainerError) {
        guard let timecode = options.timecode else { return }
        let end = MediaTime(value: maximumPresentationEnd - minimumPresentation, timescale: timescale)
        let scale = timecode.format.frameDuration.timescale
        func ticks(_ time: MediaTime) -> Int64 { time.converted(toTimescale: scale).value }
        timecodeSamples = []
        for (index, run) in timecode.runs.enumerated() {
            let next = index + 1 < timecode.runs.count ? timecode.runs[index + 1].time : end
            guard run.time < end else {
                throw ContainerError(.invalidInput, "a timecode run starts at \(run.time), after the video ends (\(end))", path: path)
            }
            let data: [UInt8]
            do { data = try timecode.format.sampleData(forFrameNumber: run.frameNumber) } catch { throw ContainerError(.invalidInput, "timecode: \(error)", path: path) }
            timecodeSamples.append((data, ticks(MediaTime.minimum(next, end)) - ticks(run.time)))
        }
        timecodeOffset = target.position
        for sample in timecodeSamples { try target.write(sample.data) }
    }

    static func mediaDataHeader(size: UInt64, large: Bool) -> [UInt8] {
        var w = BoxWriter()
        if large { w.u32(1); w.fourCC("mdat"); w.u64(size + 16) } else { w.u32(UInt32(size + 8)); w.fourCC("mdat") }
        return w.bytes
    }

    /// What goes before the media in a faststart file: `ftyp`, `moov`, a `free` box padding the
    /// whole to a multiple of 4096 bytes (so that the file system can insert it in front of the
    /// media by whole blocks; the same bytes are written where it cannot), and the `mdat` header.
    func faststartHeader(mediaSize: UInt64) -> (bytes: [UInt8], largeOffsets: Bool) {
        let block = 4096
        let ftyp = Self.fileTypeBox(options, fragmented: false)
        let mdatHeader = mediaSize + 8 > UInt64(UInt32.max) ? 16 : 8
        func total(_ moovSize: Int) -> (size: Int, padding: Int) {
            let unpadded = ftyp.count + moovSize + mdatHeader
            var padding = (block - unpadded % block) % block
            if padding > 0 && padding < 8 { padding += block }  // a free box takes at least 8
            return (unpadded + padding, padding)
        }
        // The moov's size depends on whether its chunk offsets need 64 bits, which depends on
        // where the media starts: size it with 32-bit offsets first (when the media alone fits).
        var largeOffsets = mediaSize > UInt64(UInt32.max)
        var layout = total(movieBox(mediaOffset: 0, largeOffsets: largeOffsets).count)
        if !largeOffsets && UInt64(layout.size) + mediaSize > UInt64(UInt32.max) {
            largeOffsets = true
            layout = total(movieBox(mediaOffset: 0, largeOffsets: true).count)
        }
        let moov = movieBox(mediaOffset: UInt64(layout.size), largeOffsets: largeOffsets)
        var bytes = ftyp + moov
        if layout.padding > 0 {
            var free = BoxWriter()
            free.u32(UInt32(layout.padding)); free.fourCC("free")
            bytes += free.bytes + [UInt8](repeating: 0, count: layout.padding - 8)
        }
        bytes += Self.mediaDataHeader(size: mediaSize, large: mdatHeader == 16)
        precondition(bytes.count == layout.size)
        return (bytes, largeOffsets)
    }

    /// Copies the faststart media file after the index, in the kernel where it can.
    static func copy(from media: FileOutput, size: UInt64, to output: FileOutput) throws(ContainerError) {
        var inputOffset: off_t = 0
        var remaining = size
        var outputOffset = off_t(output.position)
        // sendfile(2) copies file to file in the kernel; it writes at the output's file offset.
        guard lseek(output.fd, outputOffset, SEEK_SET) == outputOffset else { throw .system("cannot seek", path: output.path) }
        while remaining > 0 {
            let n = sendfile(output.fd, media.fd, &inputOffset, Int(min(remaining, 1 << 30)))
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EINVAL || errno == ENOSYS { break }
                throw .system("copying the media into place failed", path: output.path)
            }
            if n == 0 { break }
            remaining -= UInt64(n)
            outputOffset += off_t(n)
        }
        if remaining > 0 {
            // Fallback: read and write through a buffer.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
            defer { buffer.deallocate() }
            while remaining > 0 {
                let n = pread(media.fd, buffer.baseAddress, Int(min(remaining, UInt64(buffer.count))), inputOffset)
                guard n > 0 else { throw .system("reading back the media failed", path: output.path) }
                let written = pwrite(output.fd, buffer.baseAddress, n, outputOffset)
                guard written == n else { throw .system("writing the media failed", path: output.path) }
                inputOffset += off_t(n); outputOffset += off_t(n); remaining -= UInt64(n)
            }
        }
        output.advance(by: size)
    }
}

extension FileOutput {
    /// Accounts for bytes written around the buffer (by `copy_file_range`).
    func advance(by count: UInt64) { skipped(count) }
}
