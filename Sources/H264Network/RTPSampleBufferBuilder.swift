import H264Bitstream
public import MediaCore

/// Access units from an ``H264Depacketizer`` into sample buffers: AVCC data, a format
/// description from out-of-band (SDP) or in-band parameter sets, and timing.
///
/// RTP carries only presentation times (the 90 kHz timestamp). Decoding times are rebuilt the
/// way a muxer needs them: with the stream's reordering depth D (the SPS's
/// `max_num_reorder_frames`, or what its profile and level allow), the i-th decoding time is the
/// i-th smallest presentation time less D frame durations (the largest frame step seen, so that
/// unevenly rounded times cannot put a decoding time past its presentation time), so decoding
/// times rise and never pass their presentation times. The builder holds D + 2 access units to know them and the
/// durations; times
/// count from the first access unit's timestamp (the first presentation time is its RTP
/// timestamp's distance from the first one received, usually 0).
public struct RTPSampleBufferBuilder: Sendable {
    /// How samples are made.
    public struct Options: Sendable, Hashable {
        /// Keep SPS and PPS NAL units inside the samples as well as in the description (avc3).
        public var keepsParameterSetsInBand: Bool
        /// The AVCC length-prefix size.
        public var nalUnitLengthSize: Int
        /// Hand each sample on as soon as it is complete when the stream reorders no frame
        /// (its SPS says so): for a live consumer (a display, a relay), no frame of latency. Its
        /// duration is then an estimate, the smallest step between presentation times seen so
        /// far (1 tick for the first), which a movie writer stretches to meet the next sample.
        /// Off, a sample waits for the next, whose time gives its exact duration.
        public var isLowLatency: Bool

        /// Options.
        public init(keepsParameterSetsInBand: Bool = false, nalUnitLengthSize: Int = 4, isLowLatency: Bool = false) {
            self.keepsParameterSetsInBand = keepsParameterSetsInBand
            self.nalUnitLengthSize = nalUnitLengthSize
            self.isLowLatency = isLowLatency
        }
    }

    /// How samples are made.
    public let options: Options
    /// The description of the samples made last (nil until parameter sets have come).
    public private(set) var formatDescription: VideoFormatDescription?
    /// Access units dropped because no parameter sets had come before them.
    public private(set) var droppedBeforeParameterSets = 0
    /// Access units dropped because, with frames lost before them, no decoding time both after
    /// the previous one's and not after their own presentation time was left.
    public private(set) var droppedOutOfOrder = 0

    private struct Pending {
        var data: [UInt8]
        var description: VideoFormatDescription
        var presentation: Int64
        var isSync: Bool
    }

    private var pending: [Pending] = []
    /// Presentation times seen and not yet used as a decoding time, smallest first.
    private var times: [Int64] = []
    private var shift: Int64?
    private var lastDuration: Int64 = 3000
    /// The sample whose decoding time is known, waiting for the next one's (its duration).
    private var ready: (unit: Pending, decode: Int64)?
    private var sps: [UInt8]?
    private var pps: [UInt8]?
    /// The low-latency path's last decoding time and smallest step.
    private var lastImmediate: Int64?
    private var smallestStep: Int64?

    /// The RTP clock rate of H.264 (RFC 6184 §8.2.1).
    public static let timescale: Int32 = 90_000

    /// A builder starting from `formatDescription` (from the SDP's `sprop-parameter-sets`), or
    /// from the first in-band parameter sets when nil.
    public init(formatDescription: VideoFormatDescription? = nil, options: Options = Options()) {
        self.formatDescription = formatDescription
        self.options = options
        sps = formatDescription?.sequenceParameterSets.first
        pps = formatDescription?.pictureParameterSets.first
    }

    /// Takes one access unit; returns the samples now complete, in decoding order.
    public mutating func append(_ unit: H264Depacketizer.AccessUnit) throws(NetworkError) -> [SampleBuffer] {
        var data: [UInt8] = []
        var changed = false
        for nal in unit.nalUnits {
            switch nal[0] & 0x1F {
            case 7:
                if nal != sps { sps = nal; changed = true }
                if !options.keepsParameterSetsInBand { continue }
            case 8:
                if nal != pps { pps = nal; changed = true }
                if !options.keepsParameterSetsInBand { continue }
            default:
                break
            }
            do { try AVCC.append(nalUnit: nal.span, lengthSize: options.nalUnitLengthSize, to: &data) } catch {
                throw NetworkError(.tooLarge, "a \(nal.count)-byte NAL unit does not fit \(options.nalUnitLengthSize)-byte lengths")
            }
        }
        if changed || formatDescription == nil, let sps, let pps {
            do {
                let description = try VideoFormatDescription(sequenceParameterSets: [sps], pictureParameterSets: [pps], nalUnitLengthSize: options.nalUnitLengthSize)
                if description != formatDescription { formatDescription = description }
            } catch {
                throw NetworkError(.invalidPayload, "in-band parameter sets do not parse", cause: error)
            }
        }
        guard let description = formatDescription, !data.isEmpty else {
            droppedBeforeParameterSets += 1
            return []
        }
        if options.isLowLatency, description.sps.reorderDepth == 0, pending.isEmpty, ready == nil {
            // No reordering: the decoding time is the presentation time, known now.
            var decode = unit.extendedTimestamp
            if let last = lastImmediate {
                if decode <= last { decode = last + 1 }
                smallestStep = min(smallestStep ?? (decode - last), decode - last)
            }
            lastImmediate = decode
            let now = Pending(data: data, description: description, presentation: unit.extendedTimestamp, isSync: unit.isIDR)
            return [Self.sample(now, decode: decode, duration: smallestStep ?? 1)]
        }
        pending.append(Pending(data: data, description: description, presentation: unit.extendedTimestamp, isSync: unit.isIDR))
        let insertion = times.firstIndex { $0 > unit.extendedTimestamp } ?? times.count
        times.insert(unit.extendedTimestamp, at: insertion)
        var samples: [SampleBuffer] = []
        while pending.count > depth + 1 { if let sample = emit() { samples.append(sample) } }
        return samples
    }

    /// The end: the samples still held.
    public mutating func finish() -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while !pending.isEmpty { if let sample = emit() { samples.append(sample) } }
        if let (unit, decode) = ready { samples.append(Self.sample(unit, decode: decode, duration: lastDuration)) }
        ready = nil
        return samples
    }

    /// The reordering depth of the held samples' stream.
    private var depth: Int { pending.first.map { $0.description.sps.reorderDepth } ?? 0 }

    /// Gives the next held access unit its decoding time; returns the one before it, whose
    /// duration that decides.
    private mutating func emit() -> SampleBuffer? {
        let unit = pending.removeFirst()
        let smallest = times.removeFirst()
        if shift == nil {
            // D frame durations: the step between the presentation times held now. Times
            // rounded to 90 kHz from another clock step unevenly (3003, 3004, 3002 at 29.97
            // fps), so the largest step of a frame's size is taken: with a smaller one a
            // decoding time could pass its presentation time by a tick or two.
            let held = [smallest] + times
            let steps = zip(held, held.dropFirst()).map { $1 - $0 }.filter { $0 > 0 }
            if let step = steps.min() {
                lastDuration = steps.filter { $0 * 2 <= step * 3 }.max() ?? step
            }
            shift = Int64(depth) * lastDuration
        }
        // Never decoded after it is shown, and decoding times rising (equal presentation times).
        var decode = min(smallest - (shift ?? 0), unit.presentation)
        var previous: SampleBuffer?
        if let (before, beforeDecode) = ready {
            if decode <= beforeDecode { decode = beforeDecode + 1 }
            guard decode <= unit.presentation else {
                // Frames lost before it put this one's turn after its own time (it would be
                // shown before it is decoded): it cannot be placed, and is counted.
                droppedOutOfOrder += 1
                return nil
            }
            lastDuration = decode - beforeDecode
            previous = Self.sample(before, decode: beforeDecode, duration: lastDuration)
        }
        ready = (unit, decode)
        return previous
    }

    private static func sample(_ unit: Pending, decode: Int64, duration: Int64) -> SampleBuffer {
        let timing = SampleTiming(presentationTime: MediaTime(value: unit.presentation, timescale: timescale),
                                  decodeTime: MediaTime(value: decode, timescale: timescale),
                                  duration: MediaTime(value: max(1, duration), timescale: timescale))
        return SampleBuffer(data: BlockBuffer(unit.data), formatDescription: unit.description, timing: timing, attachments: SampleAttachments(isSync: unit.isSync))
    }
}
