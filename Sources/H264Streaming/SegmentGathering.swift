import MediaCore
import NIOCore
import SampleFlow
import SystemIO

/// The publisher's side: the chunks a segmenter hands out gathered into parts (low latency)
/// and segments, each published to the store as it is whole.
struct SegmentGathering {
    let lowLatency: Bool
    let rendition: String
    /// The bytes of the segment being made that are in no part yet.
    private var pending = ByteBuffer()
    /// The parts of the segment being made (low latency).
    private var parts: [ByteBuffer] = []
    /// When the segment being made started: its first sample's date on the program clock.
    private var segmentStart: Double?
    /// Dates segments from the media timeline (``WallClockMapping``).
    private var clock = WallClockMapping()

    init(lowLatency: Bool, rendition: String) {
        self.lowLatency = lowLatency
        self.rendition = rendition
    }

    /// Publishes what the segmenter made of the sample that entered at `sampleEntered` (with
    /// `decodeTime`; nil when the segmenter was finished). `date`, when given, dates it instead
    /// (a sound dated on its picture's mapping, ``date(ofMediaTime:)``).
    mutating func take(_ made: MediaSegmenter.Output, from segmenter: MediaSegmenter, sampleEntered: Double, decodeTime: MediaTime?, date given: Double? = nil,
                       into store: OriginStore) {
        let date = given ?? decodeTime.flatMap { $0.isNumeric ? clock.date(ofMediaTime: $0.seconds, arrival: sampleEntered) : nil } ?? sampleEntered
        if segmentStart == nil, !made.chunks.isEmpty { segmentStart = date }
        var chunks = made.chunks[...]
        // The chunks of each completed segment, then its report; then the next segment's.
        for report in made.completed {
            while let chunk = chunks.first, chunk.segment == report.index {
                add(chunk, segmenter: segmenter, store: store)
                chunks.removeFirst()
            }
            var bytes: ByteBuffer
            if lowLatency {
                bytes = ByteBuffer()
                bytes.reserveCapacity(parts.map(\.readableBytes).reduce(0, +) + pending.readableBytes)
                for part in parts { bytes.writeImmutableBuffer(part) }
                bytes.writeBuffer(&pending)
                parts = []
            } else {
                // An exact-size copy: the gathering buffer grew by doubling, and a window of such
                // buffers would keep up to twice the segments' bytes (measured: an origin of a
                // 40 Mbit/s stream drifting from 110 to 190 MB over ten minutes).
                bytes = ByteBuffer()
                bytes.reserveCapacity(pending.readableBytes)
                bytes.writeBuffer(&pending)
            }
            let size = bytes.readableBytes
            pending = ByteBuffer()
            if !lowLatency { pending.reserveCapacity(size + size / 4) }
            store.publish(bytes, rendition: rendition, report: report, initialization: segmenter.initializationSegment, format: Self.format(of: segmenter),
                          timescale: segmenter.timescale, startedAt: segmentStart ?? date)
            segmentStart = date
        }
        for chunk in chunks { add(chunk, segmenter: segmenter, store: store) }
    }

    /// The date of `mediaTime` (seconds) on this rendition's mapping, without noting anything;
    /// nil before its first sample.
    func date(ofMediaTime mediaTime: Double) -> Double? {
        clock.date(ofMediaTime: mediaTime)
    }

    /// What the segmenter cuts: its picture's format, or its sound's.
    static func format(of segmenter: MediaSegmenter) -> FormatDescription? {
        segmenter.formatDescription.map { .video($0) } ?? segmenter.audioFormatDescription.map { .audio($0) }
    }

    private mutating func add(_ chunk: MediaSegmenter.Chunk, segmenter: MediaSegmenter, store: OriginStore) {
        chunk.data.forEachSegment { pending.writeBytes($0) }
        guard lowLatency, let fragment = chunk.completedFragment else { return }
        let part = pending
        pending = ByteBuffer()
        parts.append(part)
        store.publishPart(part, rendition: rendition, segment: chunk.segment, report: fragment, initialization: segmenter.initializationSegment, format: Self.format(of: segmenter),
                          timescale: segmenter.timescale, startedAt: segmentStart ?? WallClock.seconds)
    }
}
