import MediaCore

/// One movie fragment as it is written: a `moof` (its header, and a track fragment per track
/// with samples in it: the track's base decode time and a run of its samples) and the `mdat`
/// header before the samples' bytes, track after track. Shared by the fragmented movie layout
/// and ``CMAFWriter``.
struct MovieFragment {
    /// One track's samples in the fragment.
    struct Run {
        /// The track's `track_ID`.
        var trackID: UInt32
        /// The samples' fields, in decoding order.
        var entries: [TrackRunBox.Entry]
        /// `tfdt` baseMediaDecodeTime: the first sample's decode time, media ticks.
        var baseDecodeTime: UInt64
        /// Bytes of the samples.
        var mediaBytes: Int
    }

    /// The track runs, in the order their bytes follow in the `mdat`.
    var runs: [Run]
    /// `mfhd` sequence_number, from 1.
    var sequenceNumber: UInt32
    /// Whether the composition offsets are signed (`trun` version 1).
    var signedOffsets: Bool

    /// A fragment of one track (track 1).
    init(entries: [TrackRunBox.Entry], sequenceNumber: UInt32, baseDecodeTime: UInt64, signedOffsets: Bool, mediaBytes: Int, trackID: UInt32 = 1) {
        self.init(runs: [Run(trackID: trackID, entries: entries, baseDecodeTime: baseDecodeTime, mediaBytes: mediaBytes)], sequenceNumber: sequenceNumber,
                  signedOffsets: signedOffsets)
    }

    /// A fragment of these runs.
    init(runs: [Run], sequenceNumber: UInt32, signedOffsets: Bool) {
        self.runs = runs
        self.sequenceNumber = sequenceNumber
        self.signedOffsets = signedOffsets
    }

    /// The `moof` and the `mdat` header, each run's data offset pointing at its samples past
    /// both (the `moof`'s size does not depend on the offsets' values).
    var header: [UInt8] {
        func moof(dataOffset: Int32) -> MovieFragmentBox {
            var offset = dataOffset
            var children = [AnyBox(MovieFragmentHeaderBox(sequenceNumber: sequenceNumber))]
            for run in runs {
                let trun = TrackRunBox(entries: run.entries, dataOffset: offset, signedCompositionOffsets: signedOffsets)
                children.append(AnyBox(TrackFragmentBox(children: [
                    AnyBox(TrackFragmentHeaderBox(trackID: run.trackID, defaultBaseIsMoof: true)),
                    AnyBox(TrackFragmentBaseMediaDecodeTimeBox(baseMediaDecodeTime: run.baseDecodeTime)),
                    AnyBox(trun),
                ])))
                offset += Int32(clamping: run.mediaBytes)
            }
            return MovieFragmentBox(children: children)
        }
        let size = moof(dataOffset: 0).serialized.count
        let bytes = runs.reduce(0) { $0 + $1.mediaBytes }
        return moof(dataOffset: Int32(size + 8)).serialized + FileOutput.mediaDataHeader(size: UInt64(bytes), large: false)
    }

    /// The run entry of a placed sample: duration, size, flags (dependency bits, non-sync) and
    /// composition offset.
    static func entry(_ sample: PlacedSample) -> TrackRunBox.Entry {
        // sample_flags: depends_on (bits 24-25), is_depended_on (22-23), non-sync (16).
        let dependency = SampleDependencyTypeBox.entry(sample.attachments)
        var flags = UInt32(dependency >> 4 & 3) << 24 | UInt32(dependency >> 2 & 3) << 22
        if !sample.isSync { flags |= 0x0001_0000 }
        return TrackRunBox.Entry(duration: UInt32(sample.duration), size: UInt32(sample.data.count), flags: flags,
                                 compositionOffset: Int32(sample.compositionOffset))
    }
}
