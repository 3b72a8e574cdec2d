public import H264Network
public import MediaCore

extension HLSMultivariantPlaylist.AlternativeRendition {
    /// The group every variant with sound plays (`GROUP-ID`).
    public static let soundGroup = "audio"

    /// A sound track as an alternative rendition of ``soundGroup``, as the packager and the
    /// live origin list it: NAME and LANGUAGE from the track's ISO 639-2 code (`eng`: "English",
    /// `en`), else "Main" for the default and "Sound N" for another; CHANNELS from `format`;
    /// AUTOSELECT; DEFAULT when `isDefault` (the first).
    public init(sound track: TrackDescription, format: AudioFormatDescription, uri: String, isDefault: Bool) {
        self.init(soundOf: track.id, language: track.language, format: format, uri: uri, isDefault: isDefault)
    }

    /// The same for the sound of track `id` in `language` (ISO 639-2, if known), as a live
    /// source's sound is known before its format.
    public init(soundOf id: TrackID, language: String?, format: AudioFormatDescription, uri: String, isDefault: Bool) {
        let tag = LanguageTag(language)
        self.init(groupID: Self.soundGroup, name: tag?.name ?? (isDefault ? "Main" : "Sound \(id)"), language: tag?.tag, isDefault: isDefault,
                  channels: format.channelCount, uri: uri)
    }
}
