import MediaCore

/// One movie fragment as it is written: a `moof` (its header, one track fragment with its base
/// decode time and a run of samples) and the `mdat` header before the samples' bytes. Shared by
/// the fragmented movie layout and ``CMAFWriter``.
struct MovieFragment {
    /// The samples' fields, in decoding order.
    var entries: [TrackRunBox.Entry]
    /// `mfhd` sequence_number, from 1.
    var sequenceNumber: UInt32
    /// `tfdt` baseMediaDecodeTime: the first sample's decode time, media ticks.
    var baseDecodeTime: UInt64
    /// Whether the composition offsets are signed (`trun` version 1).
    var signedOffsets: Bool
    /// Bytes of the samples.
    var mediaBytes: Int

    /// The `moof` and the `mdat` header, with the run's data offset pointing past both (the
    /// `moof`'s size does not depend on the offset's value).
    var header: [UInt8] {
        func moof(dataOffset: Int32) -> MovieFragmentBox {
            let run = TrackRunBox(entries: entries, dataOffset: dataOffset, signedCompositionOffsets: signedOffsets)
            let traf = TrackFragmentBox(children: [
                AnyBox(TrackFragmentHeaderBox(trackID: 1, defaultBaseIsMoof: true)),
                AnyBox(TrackFragmentBaseMediaDecodeTimeBox(baseMediaDecodeTime: baseDecodeTime)),
                AnyBox(run),
            ])
            return MovieFragmentBox(children: [AnyBox(MovieFragmentHeaderBox(sequenceNumber: sequenceNumber)), AnyBox(traf)])
        }
        let size = moof(dataOffset: 0).serialized.count
        return moof(dataOffset: Int32(size + 8)).serialized + FileOutput.mediaDataHeader(size: UInt64(mediaBytes), large: false)
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
