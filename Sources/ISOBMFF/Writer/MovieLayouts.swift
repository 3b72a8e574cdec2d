import H264Bitstream
import MediaCore
import SystemIO
import SystemPackage

/// Where a movie's media and index go: one strategy per ``MovieWriter/Layout``.
protocol MovieLayout: AnyObject {
    /// Stores one placed sample.
    func write(_ sample: PlacedSample, track: VideoTrack) throws(ContainerError)
    /// Writes the index and puts the file in place.
    func finish(track: VideoTrack) throws(ContainerError) -> MovieWriter.Summary
    /// Gives up: whatever was written is removed.
    func discard()
}

extension ContainerError {
    /// A failed system call, as an I/O error of the movie being written.
    static func io(_ error: SystemError) -> ContainerError { ContainerError(systemError: error) }
}

/// The timecode track's samples (one per run) written at `target`'s position.
private func writeTimecodeSamples(_ options: MovieWriter.Options, track: VideoTrack, to target: FileOutput, path: String) throws(ContainerError) -> TimecodeSamples? {
    guard let timecode = options.timecode else { return nil }
    let end = MediaTime(value: track.presentationDuration, timescale: track.timescale)
    let scale = timecode.format.frameDuration.timescale
    func ticks(_ time: MediaTime) -> Int64 { time.converted(toTimescale: scale).value }
    var samples = TimecodeSamples(samples: [], offset: target.position)
    for (index, run) in timecode.runs.enumerated() {
        let next = index + 1 < timecode.runs.count ? timecode.runs[index + 1].time : end
        guard run.time < end else {
            throw ContainerError(.invalidInput, "a timecode run starts at \(run.time), after the video ends (\(end))", path: path)
        }
        let data: [UInt8]
        do { data = try timecode.format.sampleData(forFrameNumber: run.frameNumber) } catch { throw ContainerError(.invalidInput, "timecode", path: path, cause: error) }
        samples.samples.append((data, ticks(MediaTime.minimum(next, end)) - ticks(run.time)))
    }
    for sample in samples.samples { try target.write(sample.data) }
    return samples
}

private func summary(_ track: VideoTrack, descriptions: Int, fileSize: UInt64, fragments: Int = 0, largeOffsets: Bool = false) -> MovieWriter.Summary {
    MovieWriter.Summary(sampleCount: track.sampleCount, sampleDescriptionCount: descriptions,
                        duration: MediaTime(value: track.presentationDuration, timescale: track.timescale),
                        fileSize: fileSize, fragmentCount: fragments, usesLargeOffsets: largeOffsets)
}

// MARK: - Progressive

/// `ftyp`, the media in `mdat` as it comes, `moov` at the end; written under a temporary name
/// and renamed into place when complete.
final class ProgressiveLayout: MovieLayout {
    private let options: MovieWriter.Options
    private let file: OutputFile
    private let output: FileOutput
    private var tables = SampleTables()
    private var mediaDataStart: UInt64 = 0
    private var started = false

    init(path: String, options: MovieWriter.Options) throws(ContainerError) {
        self.options = options
        do { file = try OutputFile(path: path) } catch { throw .io(error) }
        output = FileOutput(descriptor: file.descriptor, path: path, ownsDescriptor: false)
    }

    func write(_ sample: PlacedSample, track: VideoTrack) throws(ContainerError) {
        if !started {
            started = true
            try output.write(MovieIndex.fileType(options).serialized)
            // `free` is rewritten as the first half of a 64-bit mdat header if the media passes 4 GiB.
            var header = BoxWriter()
            header.u32(8); header.fourCC("free")
            header.u32(0); header.fourCC("mdat")
            mediaDataStart = output.position + 16
            try output.write(header.bytes)
        }
        tables.append(sample, at: output.position, timescale: track.timescale)
        try output.write(sample.data)
    }

    func finish(track: VideoTrack) throws(ContainerError) -> MovieWriter.Summary {
        let timecode = try writeTimecodeSamples(options, track: track, to: output, path: file.path)
        try output.flush()
        let mediaSize = output.position - mediaDataStart
        let largeOffsets = output.position > UInt64(UInt32.max)
        try output.write(MovieIndex(options: options, track: track).movieBox(tables: tables, timecode: timecode, mediaOffset: 0, largeOffsets: largeOffsets).serialized)
        // The mdat header: a 32-bit size after `free`, or a 64-bit one over both.
        if mediaSize + 8 <= UInt64(UInt32.max) {
            var w = BoxWriter()
            w.u32(UInt32(mediaSize + 8))
            try output.patch(w.bytes, at: mediaDataStart - 8)
        } else {
            try output.patch(FileOutput.mediaDataHeader(size: mediaSize, large: true), at: mediaDataStart - 16)
        }
        try output.flush()
        let size = output.position
        do { try file.commit() } catch { throw .io(error) }
        return summary(track, descriptions: track.descriptions.count, fileSize: size, largeOffsets: largeOffsets)
    }

    func discard() { file.discard() }
}

// MARK: - Faststart

/// `moov` before `mdat`. The media goes to a temporary file first; the index, padded with
/// `free` to whole 4096-byte blocks, is then inserted in front of it by the file system
/// (`fallocate(FALLOC_FL_INSERT_RANGE)`, ext4 and XFS: no copy, writeback started as the
/// media is written so the insert waits for little), or where that is not supported the
/// media is copied after the index in the kernel (`sendfile`). The same bytes either way;
/// neither the media nor the input is held in memory or read twice.
final class FaststartLayout: MovieLayout {
    private let options: MovieWriter.Options
    private let file: OutputFile
    private let mediaPath: String
    private let media: FileOutput
    private var tables = SampleTables()
    private var mediaKept = true

    init(path: String, options: MovieWriter.Options) throws(ContainerError) {
        self.options = options
        do { file = try OutputFile(path: path) } catch { throw .io(error) }
        mediaPath = OutputFile.temporaryName(for: path) + ".mdat"
        do {
            media = FileOutput(descriptor: try FileDescriptor.creating(mediaPath), path: mediaPath, ownsDescriptor: true)
        } catch {
            file.discard()
            throw .io(error)
        }
        media.startsWriteback = true
    }

    deinit { if mediaKept { removeFile(mediaPath) } }

    func write(_ sample: PlacedSample, track: VideoTrack) throws(ContainerError) {
        tables.append(sample, at: media.position, timescale: track.timescale)
        try media.write(sample.data)
    }

    func finish(track: VideoTrack) throws(ContainerError) -> MovieWriter.Summary {
        let timecode = try writeTimecodeSamples(options, track: track, to: media, path: file.path)
        try media.flush()
        let mediaSize = media.position
        let header = faststartHeader(track: track, timecode: timecode, mediaSize: mediaSize)
        let fileSize = UInt64(header.bytes.count) + mediaSize
        if (try? media.descriptor.insertRange(at: 0, length: Int64(header.bytes.count), path: mediaPath)) != nil {
            // The file system moved the media up by whole blocks: the index goes in front of
            // it without a copy, and the media file is the result.
            try media.patch(header.bytes, at: 0)
            mediaKept = false
            do { try file.commit(replacingWith: mediaPath) } catch { throw .io(error) }
        } else {
            // No INSERT_RANGE here (tmpfs, btrfs, NFS): copy the media after the index.
            let output = FileOutput(descriptor: file.descriptor, path: file.path, ownsDescriptor: false)
            try output.write(header.bytes)
            try output.flush()
            try copy(size: mediaSize, to: output)
            do { try file.commit() } catch { throw .io(error) }
        }
        return summary(track, descriptions: track.descriptions.count, fileSize: fileSize, largeOffsets: header.largeOffsets)
    }

    func discard() {
        file.discard()
        if mediaKept { removeFile(mediaPath) }
        mediaKept = false
    }

    /// What goes before the media: `ftyp`, `moov`, a `free` box padding the whole to a multiple
    /// of 4096 bytes (so that the file system can insert it in front of the media by whole
    /// blocks; the same bytes are written where it cannot), and the `mdat` header.
    private func faststartHeader(track: VideoTrack, timecode: TimecodeSamples?, mediaSize: UInt64) -> (bytes: [UInt8], largeOffsets: Bool) {
        let block = 4096
        let index = MovieIndex(options: options, track: track)
        let ftyp = MovieIndex.fileType(options).serialized
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
        var layout = total(index.movieBox(tables: tables, timecode: timecode, mediaOffset: 0, largeOffsets: largeOffsets).serialized.count)
        if !largeOffsets && UInt64(layout.size) + mediaSize > UInt64(UInt32.max) {
            largeOffsets = true
            layout = total(index.movieBox(tables: tables, timecode: timecode, mediaOffset: 0, largeOffsets: true).serialized.count)
        }
        var bytes = ftyp + index.movieBox(tables: tables, timecode: timecode, mediaOffset: UInt64(layout.size), largeOffsets: largeOffsets).serialized
        if layout.padding > 0 { bytes += FreeSpaceBox(size: layout.padding).serialized }
        bytes += FileOutput.mediaDataHeader(size: mediaSize, large: mdatHeader == 16)
        return (bytes, largeOffsets)
    }

    /// Copies the media file after the index, in the kernel where it can.
    private func copy(size: UInt64, to output: FileOutput) throws(ContainerError) {
        let copied: Int64
        do { copied = try output.descriptor.copy(Int64(size), from: media.descriptor, at: 0, to: Int64(output.position), path: output.path) } catch {
            throw .io(error)
        }
        var inputOffset = UInt64(copied)
        var outputOffset = output.position + UInt64(copied)
        var remaining = size - UInt64(copied)
        if remaining > 0 {
            // Fallback: read and write through a buffer.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
            defer { buffer.deallocate() }
            while remaining > 0 {
                let n = try media.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(remaining, UInt64(buffer.count)))]), at: inputOffset)
                guard n > 0 else { throw ContainerError(.io, "the media file ended early while it was copied into place", path: output.path) }
                try output.patch(Array(buffer[..<n]), at: outputOffset)
                inputOffset += UInt64(n); outputOffset += UInt64(n); remaining -= UInt64(n)
            }
        }
        output.skipped(size)
    }
}

// MARK: - Fragmented

/// `moov` up front, then `moof`+`mdat` per fragment of about the chosen duration (cut at sync
/// samples), `mfra` at the end. Written straight to the target (or standard output): a
/// process killed at any point leaves every complete fragment playable.
final class FragmentedLayout: MovieLayout {
    private let options: MovieWriter.Options
    private let path: String
    private let output: FileOutput
    private let writesFile: Bool
    private let fragmentDuration: MediaTime
    private var samples: [(data: BlockBuffer, entry: TrackRunBox.Entry)] = []
    private var fragmentStart: Int64 = 0
    private var fragmentBytes = 0
    private var fragmentCount = 0
    private var randomAccess: [TrackFragmentRandomAccessBox.Entry] = []
    private var mehdOffset: UInt64?
    private var headerWritten = false

    init(path: String, options: MovieWriter.Options, fragmentDuration: MediaTime) throws(ContainerError) {
        self.options = options
        self.path = path
        self.fragmentDuration = fragmentDuration
        if path == "-" {
            output = FileOutput(descriptor: .standardOutput, path: "stdout", ownsDescriptor: false)
            writesFile = false
        } else {
            // In place, so that a killed process leaves the fragments written so far.
            do { output = FileOutput(descriptor: try FileDescriptor.truncating(path), path: path, ownsDescriptor: true) } catch { throw .io(error) }
            writesFile = true
        }
    }

    func write(_ sample: PlacedSample, track: VideoTrack) throws(ContainerError) {
        if !headerWritten {
            headerWritten = true
            let ftyp = MovieIndex.fileType(options).serialized
            let (moov, mehdValueOffset) = MovieIndex(options: options, track: track).fragmentedMovieBox()
            mehdOffset = output.position + UInt64(ftyp.count + mehdValueOffset)
            try output.write(ftyp)
            try output.write(moov.serialized)
            try output.flush()
            fragmentStart = sample.decodeTime
        }
        // The previous sample lasts until this one is decoded (before its fragment is written).
        if sample.gapBefore != 0, let last = samples.indices.last {
            samples[last].entry.duration = UInt32(Int64(samples[last].entry.duration ?? 0) + sample.gapBefore)
        }
        if sample.isSync, !samples.isEmpty, MediaTime(value: sample.decodeTime - fragmentStart, timescale: track.timescale) >= fragmentDuration {
            try flushFragment()
            fragmentStart = sample.decodeTime
        }
        samples.append((sample.data, MovieFragment.entry(sample)))
        fragmentBytes += sample.data.count
    }

    /// Writes the pending samples as one `moof` + `mdat` and flushes them to the file, so a
    /// kill after this point keeps them.
    private func flushFragment() throws(ContainerError) {
        guard !samples.isEmpty else { return }
        fragmentCount += 1
        let moofOffset = output.position
        let fragment = MovieFragment(entries: samples.map(\.entry), sequenceNumber: UInt32(fragmentCount), baseDecodeTime: UInt64(fragmentStart),
                                     signedOffsets: options.negativeCompositionOffsets, mediaBytes: fragmentBytes)
        randomAccess.append(TrackFragmentRandomAccessBox.Entry(time: UInt64(fragmentStart), moofOffset: moofOffset))
        try output.write(fragment.header)
        for sample in samples { try output.write(sample.data) }
        try output.flush()
        samples.removeAll(keepingCapacity: true)
        fragmentBytes = 0
    }

    func finish(track: VideoTrack) throws(ContainerError) -> MovieWriter.Summary {
        try flushFragment()
        // mfra: a random-access entry per fragment, then mfro giving its size.
        func index(size: UInt32) -> MovieFragmentRandomAccessBox {
            MovieFragmentRandomAccessBox(children: [
                AnyBox(TrackFragmentRandomAccessBox(trackID: 1, entries: randomAccess)), AnyBox(MovieFragmentRandomAccessOffsetBox(size: size)),
            ])
        }
        try output.write(index(size: UInt32(index(size: 0).serialized.count)).serialized)
        if let mehdOffset, writesFile {
            var w = BoxWriter()
            w.u64(UInt64(track.presentationDuration))
            try output.patch(w.bytes, at: mehdOffset)
        }
        try output.flush()
        return summary(track, descriptions: 1, fileSize: output.position, fragments: fragmentCount)
    }

    func discard() { if writesFile { removeFile(path) } }
}
