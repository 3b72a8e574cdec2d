public import MediaCore

// The names these had before the layouts and parameter-set storage were named, kept so that
// code written against them builds (with a warning saying what to write instead).

extension MovieWriter.Options {
    /// Options by the names of the first release.
    @available(*, deprecated, message: "use init(fileType:layout:negativeCompositionOffsets:parameterSets:timecode:metadata:): layout .faststart or .fragmented(fragmentDuration:), parameterSets .inBand")
    @_disfavoredOverload
    public init(fileType: MovieFileType = .mp4, faststart: Bool = false, fragmentDuration: MediaTime? = nil, negativeCompositionOffsets: Bool = false,
                inBandParameterSets: Bool = false, timecode: MovieWriter.TimecodeTrack? = nil, metadata: [MetadataItem] = []) {
        let layout: MovieWriter.Layout = fragmentDuration.map { .fragmented(fragmentDuration: $0) } ?? (faststart ? .faststart : .progressive)
        self.init(fileType: fileType, layout: layout, negativeCompositionOffsets: negativeCompositionOffsets,
                  parameterSets: inBandParameterSets ? .inBand : .sampleEntries, timecode: timecode, metadata: metadata)
    }

    /// Whether the index goes first: ``layout`` is `.faststart`.
    @available(*, deprecated, renamed: "layout")
    public var faststart: Bool {
        get { layout == .faststart }
        set { layout = newValue ? .faststart : .progressive }
    }

    /// The fragment duration of a fragmented layout, nil for the others.
    @available(*, deprecated, renamed: "layout")
    public var fragmentDuration: MediaTime? {
        get { if case .fragmented(let duration) = layout { duration } else { nil } }
        set { layout = newValue.map { .fragmented(fragmentDuration: $0) } ?? .progressive }
    }

    /// Whether parameter sets stay in the samples: ``parameterSets`` is `.inBand`.
    @available(*, deprecated, renamed: "parameterSets")
    public var inBandParameterSets: Bool {
        get { parameterSets == .inBand }
        set { parameterSets = newValue ? .inBand : .sampleEntries }
    }
}

extension MovieReader {
    /// Every sample of the track as an array, every one shown (what this returned before the
    /// edit list could trim): `sampleBuffers(track:editList:)` with `.shift`, copied out.
    @available(*, deprecated, message: "use sampleBuffers(track:editList:), a collection that trims to the edit list by default (.shift for this one's times)")
    @_disfavoredOverload
    public func sampleBuffers(track index: Int) throws(ContainerError) -> [SampleBuffer] {
        Array(try sampleBuffers(track: index, editList: .shift))
    }
}
