import H264Bitstream
import MediaCore
import SystemIO
import SystemPackage

/// Where a movie's media and index go: one strategy per ``MovieWriter/Layout``.
protocol MovieLayout: AnyObject {
    /// Whether a track first seen now can still be added (a fragmented movie's header, once
    /// written, fixes its tracks).
    func acceptsNewTrack(_ id: TrackID, declared: Bool) throws(ContainerError)
    /// Stores one placed sample of track `index`.
    func write(_ sample: consuming PlacedSample, track index: Int, tracks: inout [WrittenTrack]) throws(ContainerError)
    /// Writes the index and puts the file in place.
    func finish(tracks: inout [WrittenTrack]) throws(ContainerError) -> MovieWriter.Summary
    /// Gives up: whatever was written is removed.
    func discard()
}

extension ContainerError {
    /// A failed system call, as an I/O error of the movie being written.
    static func io(_ error: SystemError) -> ContainerError { ContainerError(systemError: error) }
}

/// The timecode track's samples (one per run) written at `target`'s position; they span the
/// first video track's presentation.
private func writeTimecodeSamples(_ options: MovieWriter.Options, tracks: [WrittenTrack], to target: FileOutput, path: String) throws(ContainerError) -> TimecodeSamples? {
    guard let timecode = options.timecode, let video = tracks.first(where: { $0.timeline.kind == .video }) ?? tracks.first else { return nil }
    let end = MediaTime(value: video.timeline.presentationDuration, timescale: video.timeline.timescale)
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

/// What was written: the first track's counts (the video's, in a movie of video) and every
/// track's.
private func summary(_ tracks: [WrittenTrack], options: MovieWriter.Options, fileSize: UInt64, fragments: Int = 0, largeOffsets: Bool = false) -> MovieWriter.Summary {
    let index = MovieIndex(options: options, tracks: tracks)
    let written = index.tracks
    let first = index.primary
    let scale = index.movieTimescale
    var result = MovieWriter.Summary(
        sampleCount: first?.timeline.sampleCount ?? 0, sampleDescriptionCount: first?.timeline.descriptions.count ?? 0,
        duration: first.map { MediaTime(value: $0.timeline.presentationDuration, timescale: $0.timeline.timescale) } ?? .zero,
        fileSize: fileSize, fragmentCount: fragments, usesLargeOffsets: largeOffsets,
        tracks: written.map { track in
            MovieWriter.WrittenTrackSummary(trackID: track.fileTrackID, sourceTrackID: track.sourceID, mediaType: track.mediaType ?? .video,
                                            codec: track.timeline.descriptions.first?.codec ?? FourCharCode(rawValue: 0), sampleCount: track.timeline.sampleCount,
                                            duration: MediaTime(value: track.timeline.presentationDuration, timescale: track.timeline.timescale),
                                            startOffset: MediaTime(value: Int64(index.startOffset(track)), timescale: scale))
        })
    result.startTime = index.origin
    return result
}

/// The media of a plain movie as it is written: the first video track's samples as they come,
/// every other track's gathered into chunks of the options' chunk duration (or 1 MiB) written
/// between them, so that each moment's samples of every track lie near each other.
final class PlainMedia {
    let output: FileOutput
    let chunkDuration: MediaTime
    /// The track whose sample was written last: a run of one track's samples is one chunk.
    private var lastWritten: Int?

    init(output: FileOutput, chunkDuration: MediaTime) {
        self.output = output
        self.chunkDuration = chunkDuration
    }

    func write(_ sample: consuming PlacedSample, track index: Int, tracks: inout [WrittenTrack]) throws(ContainerError) {
        if index == tracks.primaryIndex {
            try write(sample, track: index, continuesChunk: lastWritten == index, tracks: &tracks)
            lastWritten = index
            return
        }
        tracks[index].pendingBytes += sample.data.count
        tracks[index].pending.append(sample)  // (moved in: the caller's was consumed)
        let timescale = tracks[index].timeline.timescale
        let limit: Int64
        if let known = tracks[index].chunkLimit, known.timescale == timescale { limit = known.ticks } else {
            limit = chunkDuration.converted(toTimescale: timescale).value
            tracks[index].chunkLimit = (limit, timescale)
        }
        if tracks[index].pendingDuration >= limit || tracks[index].pendingBytes >= 1 << 20 { try flush(index, tracks: &tracks) }
    }

    /// Writes the chunk track `index` gathered.
    func flush(_ index: Int, tracks: inout [WrittenTrack]) throws(ContainerError) {
        guard !tracks[index].pending.isEmpty else { return }
        // Taken out while written (no copy of the array, no retain of each sample), given back
        // empty with its capacity.
        var samples: [PlacedSample] = []
        swap(&samples, &tracks[index].pending)
        tracks[index].pendingBytes = 0
        for number in samples.indices {
            try write(samples[number], track: index, continuesChunk: number > 0 || lastWritten == index, tracks: &tracks)
        }
        lastWritten = index
        samples.removeAll(keepingCapacity: true)
        swap(&samples, &tracks[index].pending)
    }

    /// Writes every gathered chunk, the earliest first.
    func flushAll(tracks: inout [WrittenTrack]) throws(ContainerError) {
        let starts = tracks.indices.filter { !tracks[$0].pending.isEmpty }.map { index in
            (index, MediaTime(value: tracks[index].pending[0].decodeTime, timescale: tracks[index].timeline.timescale) + (tracks[index].timeline.firstDecodeTime ?? .zero))
        }
        let order = starts.sorted { $0.1 < $1.1 }.map(\.0)
        for index in order { try flush(index, tracks: &tracks) }
    }

    private func write(_ sample: borrowing PlacedSample, track index: Int, continuesChunk: Bool, tracks: inout [WrittenTrack]) throws(ContainerError) {
        tracks[index].tables.append(sample, at: output.position, timescale: tracks[index].timeline.timescale, continuesChunk: continuesChunk)
        try output.write(sample.data)
    }
}

// MARK: - Progressive

/// `ftyp`, the media in `mdat` as it comes, `moov` at the end; written under a temporary name
/// and renamed into place when complete.
final class ProgressiveLayout: MovieLayout {
    private let options: MovieWriter.Options
    private let file: OutputFile
    private let output: FileOutput
    private let media: PlainMedia
    private var mediaDataStart: UInt64 = 0
    private var started = false

    init(path: String, options: MovieWriter.Options) throws(ContainerError) {
        self.options = options
        do { file = try OutputFile(path: path) } catch { throw .io(error) }
        if let size = options.expectedSize { file.reserve(Int64(clamping: size)) }
        output = FileOutput(descriptor: file.descriptor, path: path, ownsDescriptor: false)
        media = PlainMedia(output: output, chunkDuration: options.chunkDuration)
    }

    func acceptsNewTrack(_ id: TrackID, declared: Bool) throws(ContainerError) {}

    func write(_ sample: consuming PlacedSample, track index: Int, tracks: inout [WrittenTrack]) throws(ContainerError) {
        if !started {
            started = true
            // The brands are written before the index: a video track declared or begun (the
            // sample being written is placed already) says `avc1`.
            try output.write(MovieIndex.fileType(options, hasVideo: tracks.contains { ($0.timeline.mediaType ?? $0.declaredType) == .video }).serialized)
            // `free` is rewritten as the first half of a 64-bit mdat header if the media passes 4 GiB.
            var header = BoxWriter()
            header.u32(8); header.fourCC("free")
            header.u32(0); header.fourCC("mdat")
            mediaDataStart = output.position + 16
            try output.write(header.bytes)
        }
        try media.write(sample, track: index, tracks: &tracks)
    }

    func finish(tracks: inout [WrittenTrack]) throws(ContainerError) -> MovieWriter.Summary {
        try media.flushAll(tracks: &tracks)
        let timecode = try writeTimecodeSamples(options, tracks: tracks, to: output, path: file.path)
        try output.flush()
        let mediaSize = output.position - mediaDataStart
        let largeOffsets = output.position > UInt64(UInt32.max)
        try output.write(MovieIndex(options: options, tracks: tracks).movieBox(timecode: timecode, mediaOffset: 0, largeOffsets: largeOffsets).serialized)
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
        return summary(tracks, options: options, fileSize: size, largeOffsets: largeOffsets)
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
    private let plain: PlainMedia
    private var mediaKept = true
    /// Disk was reserved for the media past what it used: freed before the index goes in.
    private var mediaReserved = false

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
        if let size = options.expectedSize { mediaReserved = media.descriptor.reserve(Int64(clamping: size)) }
        plain = PlainMedia(output: media, chunkDuration: options.chunkDuration)
    }

    func acceptsNewTrack(_ id: TrackID, declared: Bool) throws(ContainerError) {}

    deinit { if mediaKept { removeFile(mediaPath) } }

    func write(_ sample: consuming PlacedSample, track index: Int, tracks: inout [WrittenTrack]) throws(ContainerError) {
        try plain.write(sample, track: index, tracks: &tracks)
    }

    func finish(tracks: inout [WrittenTrack]) throws(ContainerError) -> MovieWriter.Summary {
        try plain.flushAll(tracks: &tracks)
        let timecode = try writeTimecodeSamples(options, tracks: tracks, to: media, path: file.path)
        try media.flush()
        let mediaSize = media.position
        let header = faststartHeader(tracks: tracks, timecode: timecode, mediaSize: mediaSize)
        let fileSize = UInt64(header.bytes.count) + mediaSize
        if mediaReserved {
            do { try media.descriptor.releaseSpacePastEnd(path: mediaPath) } catch { throw .io(error) }
        }
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
        return summary(tracks, options: options, fileSize: fileSize, largeOffsets: header.largeOffsets)
    }

    func discard() {
        file.discard()
        if mediaKept { removeFile(mediaPath) }
        mediaKept = false
    }

    /// What goes before the media: `ftyp`, `moov`, a `free` box padding the whole to a multiple
    /// of 4096 bytes (so that the file system can insert it in front of the media by whole
    /// blocks; the same bytes are written where it cannot), and the `mdat` header.
    private func faststartHeader(tracks: [WrittenTrack], timecode: TimecodeSamples?, mediaSize: UInt64) -> (bytes: [UInt8], largeOffsets: Bool) {
        let block = 4096
        let index = MovieIndex(options: options, tracks: tracks)
        let ftyp = MovieIndex.fileType(options, hasVideo: tracks.contains { $0.timeline.kind == .video }).serialized
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
        var layout = total(index.movieBox(timecode: timecode, mediaOffset: 0, largeOffsets: largeOffsets).serialized.count)
        if !largeOffsets && UInt64(layout.size) + mediaSize > UInt64(UInt32.max) {
            largeOffsets = true
            layout = total(index.movieBox(timecode: timecode, mediaOffset: 0, largeOffsets: true).serialized.count)
        }
        var bytes = ftyp + index.movieBox(timecode: timecode, mediaOffset: UInt64(layout.size), largeOffsets: largeOffsets).serialized
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

/// `moov` up front, then `moof`+`mdat` per fragment of about the chosen duration (cut at the
/// first video track's sync samples), a track fragment per track with samples in it, `mfra` at
/// the end. Written straight to the target (or standard output): a process killed at any point
/// leaves every complete fragment playable. The `moov` is written with the first fragment, so
/// its tracks are those with samples by then (each track's edit list starts it where its first
/// sample is); a track whose first sample comes later is an error.
final class FragmentedLayout: MovieLayout {
    private let options: MovieWriter.Options
    private let path: String
    private let output: FileOutput
    private let writesFile: Bool
    private let fragmentDuration: MediaTime
    /// The pending samples of each track (by the writer's track index).
    private var samples: [[(data: BlockBuffer, entry: TrackRunBox.Entry, decodeTime: Int64)]] = []
    private var fragmentStart: Int64?
    private var fragmentCount = 0
    private var randomAccess: [Int: [TrackFragmentRandomAccessBox.Entry]] = [:]
    private var mehdOffset: UInt64?
    /// The tracks the `moov` names, once written.
    /// The file track IDs the header names, once written.
    private var headerTracks: Set<UInt32>?

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

    func acceptsNewTrack(_ id: TrackID, declared: Bool) throws(ContainerError) {
        guard headerTracks == nil else {
            throw ContainerError(.invalidInput, "track \(id)'s first sample came after the movie's header was written with the first fragment; "
                                 + "a fragmented movie's tracks are those with samples in its first fragment (write a progressive or faststart movie, or a longer first fragment)", path: path)
        }
    }

    func write(_ sample: consuming PlacedSample, track index: Int, tracks: inout [WrittenTrack]) throws(ContainerError) {
        if let named = headerTracks, !named.contains(tracks[index].fileTrackID) {
            // Declared, but with no sample when the header was written: it is not in the file.
            try acceptsNewTrack(tracks[index].sourceID, declared: true)
        }
        while samples.count < tracks.count { samples.append([]) }
        // The previous sample lasts until this one is decoded (before its fragment is written).
        if sample.gapBefore != 0, let last = samples[index].indices.last {
            samples[index][last].entry.duration = UInt32(Int64(samples[index][last].entry.duration ?? 0) + sample.gapBefore)
        }
        if index == tracks.primaryIndex {
            if let start = fragmentStart, sample.isSync, samples.contains(where: { !$0.isEmpty }),
               MediaTime(value: sample.decodeTime - start, timescale: tracks[index].timeline.timescale) >= fragmentDuration {
                try flushFragment(tracks: tracks)
            }
            if fragmentStart == nil || samples[index].isEmpty && samples.allSatisfy(\.isEmpty) { fragmentStart = sample.decodeTime }
        }
        samples[index].append((sample.data, MovieFragment.entry(sample), sample.decodeTime))
    }

    /// Writes the `ftyp` and `moov` of the tracks so far.
    private func writeHeader(tracks: [WrittenTrack]) throws(ContainerError) {
        let ftyp = MovieIndex.fileType(options, hasVideo: tracks.contains { $0.timeline.kind == .video }).serialized
        let (moov, mehdValueOffset) = MovieIndex(options: options, tracks: tracks).fragmentedMovieBox()
        mehdOffset = output.position + UInt64(ftyp.count + mehdValueOffset)
        try output.write(ftyp)
        try output.write(moov.serialized)
        try output.flush()
        headerTracks = Set(tracks.filter { $0.timeline.sampleCount > 0 }.map(\.fileTrackID))
    }

    /// Writes the pending samples as one `moof` + `mdat` and flushes them to the file, so a
    /// kill after this point keeps them.
    private func flushFragment(tracks: [WrittenTrack]) throws(ContainerError) {
        guard samples.contains(where: { !$0.isEmpty }) else { return }
        if headerTracks == nil { try writeHeader(tracks: tracks) }
        fragmentCount += 1
        let moofOffset = output.position
        let runs = samples.indices.filter { !samples[$0].isEmpty }.map { index in
            MovieFragment.Run(trackID: tracks[index].fileTrackID, entries: samples[index].map(\.entry), baseDecodeTime: UInt64(max(0, samples[index][0].decodeTime)),
                              mediaBytes: samples[index].reduce(0) { $0 + $1.data.count })
        }
        for index in samples.indices where !samples[index].isEmpty {
            randomAccess[index, default: []].append(TrackFragmentRandomAccessBox.Entry(time: UInt64(max(0, samples[index][0].decodeTime)), moofOffset: moofOffset))
        }
        let fragment = MovieFragment(runs: runs, sequenceNumber: UInt32(fragmentCount), signedOffsets: options.negativeCompositionOffsets)
        try output.write(fragment.header)
        for index in samples.indices { for sample in samples[index] { try output.write(sample.data) } }
        try output.flush()
        for index in samples.indices { samples[index].removeAll(keepingCapacity: true) }
        fragmentStart = nil
    }

    func finish(tracks: inout [WrittenTrack]) throws(ContainerError) -> MovieWriter.Summary {
        while samples.count < tracks.count { samples.append([]) }
        try flushFragment(tracks: tracks)
        // mfra: a random-access box per track with its fragments, then mfro giving its size.
        func index(size: UInt32) -> MovieFragmentRandomAccessBox {
            let boxes = randomAccess.keys.sorted().map { AnyBox(TrackFragmentRandomAccessBox(trackID: tracks[$0].fileTrackID, entries: randomAccess[$0]!)) }
            return MovieFragmentRandomAccessBox(children: boxes + [AnyBox(MovieFragmentRandomAccessOffsetBox(size: size))])
        }
        try output.write(index(size: UInt32(index(size: 0).serialized.count)).serialized)
        let movie = MovieIndex(options: options, tracks: tracks)
        if let mehdOffset, writesFile {
            var w = BoxWriter()
            w.u64(movie.tracks.map { movie.startOffset($0) + movie.presentationLength($0) }.max() ?? 0)
            try output.patch(w.bytes, at: mehdOffset)
        }
        try output.flush()
        return summary(tracks, options: options, fileSize: output.position, fragments: fragmentCount)
    }

    func discard() { if writesFile { removeFile(path) } }
}
