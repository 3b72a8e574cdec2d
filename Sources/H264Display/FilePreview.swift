public import SampleFlow
public import MediaCore
import ISOBMFF
import MPEGTS
import SystemIO

/// Plays a media file (anything `MediaSource` reads: Annex-B, MP4, MOV) into a
/// ``DisplayLayer``: seed 003's case study 1 as one call. Samples are enqueued while the layer is
/// ready (``DisplayLayer/requestMediaDataWhenReady()``), so memory stays flat for any file, and
/// the layer's control timebase starts at `rate` from the first frame.
///
/// A page's seek is carried out here: the layer is flushed, the file is read again from the
/// sync sample before the target (a movie seeks there; an Annex-B stream is read from its start
/// keeping one group of pictures), and the frames before the target are decoded but not shown,
/// so the page lands on the exact frame. At the end of the file the layer is told (or, looping,
/// the file starts again with times rising); a seek after the end plays again from there.
///
/// The file's first AAC track plays beside the picture (``playsSound``): its samples go to the
/// layer interleaved with the pictures by decoding time, and the page plays them on the same
/// timebase (paused, sought and rate-changed with the picture).
public struct FilePreview: Sendable {
    /// The file.
    public let path: String
    /// How it is read.
    public let options: MediaSource.Options
    /// Start again after the last sample, without end.
    public let loops: Bool
    /// Where to start (a seek before playing), nil for the beginning.
    public let start: MediaTime?
    /// The rate to play at (1: real time).
    public let rate: Double
    /// Whether the file's first AAC track plays beside the picture (false: the picture alone).
    public let playsSound: Bool

    /// A preview of the file at `path`.
    public init(path: String, options: MediaSource.Options = .init(), loops: Bool = false, start: MediaTime? = nil, rate: Double = 1,
                playsSound: Bool = true) {
        self.path = path
        self.options = options
        self.loops = loops
        self.start = start
        self.rate = rate
        self.playsSound = playsSound
    }

    /// The sound track that plays beside the picture: the file's first AAC track, when
    /// ``playsSound`` and the picture is read as the first video track (nil: none).
    public func soundTrack() throws(SampleFlowError) -> TrackDescription? {
        guard playsSound, options.tracks == .firstVideo, options.trackID == nil else { return nil }
        return try MediaSource.otherTracks(path: path, options: options).first { $0.format.audio?.isAAC == true }
    }

    /// The presentation times of the file's frames, in presentation order (to name frames by
    /// their number, as `preview --capture` does).
    public func presentationTimes() throws(SampleFlowError) -> [MediaTime] {
        let source = try MediaSource(path: path, options: options)
        var times: [MediaTime] = []
        while let sample = try source.next() { if !sample.attachments.doNotDisplay { times.append(sample.presentationTime) } }
        return times.sorted { $0 < $1 }
    }

    /// Feeds `layer` until the task is cancelled (the page went away), or the file has ended and
    /// no seek follows.
    public func feed(_ layer: DisplayLayer) async {
        let seeks = SeekInbox()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The player flushes when it takes the seek: it is the one that enqueues, so no
                // sample of the old position can follow the flush (one read before a flush made
                // here would have gone out after it, and set the layer's last time past the
                // target). A player waiting for room is woken to take it.
                for await request in layer.controlRequests {
                    if case .seek(let time) = request {
                        seeks.request(time)
                        layer.wakeProducer()
                    }
                }
            }
            group.addTask {
                do { try await play(layer, seeks) } catch {}
                layer.endOfStream()
            }
            _ = await group.next()
            group.cancelAll()
        }
    }

    private func play(_ layer: DisplayLayer, _ seeks: SeekInbox) async throws {
        var target = start
        var reader = try Reader(path: path, options: options, sound: try soundTrack()?.id, loops: loops, layer: layer)
        var first = true, initial = true
        while true {
            try Task.checkCancellation()
            if let seek = seeks.take() {
                layer.flush()
                target = seek
                first = true
            }
            if first {
                if let target { try reader.seek(to: target) } else { try reader.restart() }
                let time = target ?? reader.firstPresentation ?? .zero
                // The first time at the preview's rate; after a seek, at the rate the page has.
                if initial { layer.setRate(rate, time: time) } else { layer.setTime(time) }
                initial = false
                first = false
            }
            try await layer.requestMediaDataWhenReady(orWhen: { seeks.pending })
            if seeks.pending { continue }
            guard let sample = try reader.next() else {
                layer.endOfStream()
                // Ended: a seek plays again.
                while !seeks.pending { try await Task.sleep(for: .milliseconds(20)) }
                continue
            }
            // (A sound's frame that ends after the target is heard: from the target on.)
            let end = sample.audioFormatDescription == nil ? sample.presentationTime : sample.presentationTime + sample.duration
            let hidden = target.map { sample.audioFormatDescription == nil ? end < $0 : end <= $0 } ?? false
            layer.enqueue(sample, hidden: hidden)
        }
    }
}

/// The seek a page asked for last, between the control reader and the player.
private final class SeekInbox: Sendable {
    private let target = Locked<MediaTime?>(nil)

    func request(_ time: MediaTime) { target.withLock { $0 = time } }
    func take() -> MediaTime? { target.withLock { value in defer { value = nil }; return value } }
    var pending: Bool { target.withLock { $0 != nil } }
}

/// A file's samples (the picture's, and the sound's when one plays), looped with rising
/// times, positioned by presentation time.
private struct Reader {
    let path: String
    let options: MediaSource.Options
    /// The sound track read beside the picture.
    let sound: TrackID?
    let loops: Bool
    var source: MediaSource
    // (Its first pass may start where a seek put it.)
    var timeline = LoopTimeline(firstPassIsWhole: false)
    var passSamples = 0
    /// Samples read ahead while seeking in a stream that cannot seek (one group of pictures).
    var buffered: [SampleBuffer] = []
    var firstPresentation: MediaTime?

    init(path: String, options: MediaSource.Options, sound: TrackID?, loops: Bool, layer: DisplayLayer) throws {
        self.path = path
        self.sound = sound
        self.loops = loops
        let picture = try MediaSource(path: path, options: options)
        if let track = picture.track, track.timescale > 0 {
            layer.mediaDuration = MediaTime(value: Int64(clamping: track.mediaDuration), timescale: track.timescale)
        }
        var read = options
        if sound != nil { read.tracks = .all }
        self.options = read
        source = try MediaSource(path: path, options: read)
    }

    /// Whether a sample read is one shown or heard (every track is read when a sound plays).
    func plays(_ sample: SampleBuffer) -> Bool {
        guard let sound else { return true }
        return sample.videoFormatDescription != nil || sample.trackID == sound
    }

    /// The next sample of the picture or the sound, from the file.
    mutating func read() throws -> SampleBuffer? {
        while let sample = try source.next() {
            if plays(sample) { return sample }
        }
        return nil
    }

    mutating func restart() throws {
        source = try MediaSource(path: path, options: options)
        timeline = LoopTimeline(firstPassIsWhole: false)
        passSamples = 0
        buffered = []
        firstPresentation = nil
        if let sample = try read() {
            firstPresentation = sample.presentationTime
            buffered = [sample]
        }
    }

    /// Positions at the sync sample before `time` (a movie seeks; a stream is read from its
    /// start, keeping the group of pictures that holds `time`).
    mutating func seek(to time: MediaTime) throws {
        try restart()
        // (The first sample, which restart read, is where a stream's search starts: dropping
        // it lost the first sync sample, and a seek into the first group of pictures landed
        // on the second.)
        var pending = buffered
        buffered = []
        if source.seek(toPresentationTime: time) { return }
        var group: [SampleBuffer] = []
        while let sample = try pending.isEmpty ? read() : pending.removeFirst() {
            // (A sound's frames are all sync samples: the groups are the picture's.)
            if sample.isSync, sample.videoFormatDescription != nil {
                if sample.presentationTime > time, !group.isEmpty {
                    buffered = group + [sample]
                    return
                }
                group = []
            }
            group.append(sample)
            guard group.count <= 4096 else { break }  // a group of pictures past any real one
        }
        buffered = group
    }

    mutating func next() throws -> SampleBuffer? {
        while true {
            var sample: SampleBuffer
            if !buffered.isEmpty {
                sample = buffered.removeFirst()
            } else if let read = try read() {
                sample = read
            } else {
                guard loops, passSamples > 0 else { return nil }
                source = try MediaSource(path: path, options: options)
                passSamples = 0
                timeline.beginPass()
                guard let read = try read() else { return nil }
                sample = read
            }
            passSamples += 1
            timeline.place(&sample)
            return sample
        }
    }
}
