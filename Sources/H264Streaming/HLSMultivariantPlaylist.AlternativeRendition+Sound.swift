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
        let language = LanguageTag(track.language)
        self.init(groupID: Self.soundGroup, name: language?.name ?? (isDefault ? "Main" : "Sound \(track.id)"), language: language?.tag, isDefault: isDefault,
                  channels: format.channelCount, uri: uri)
    }
}
