import Foundation
import H264Network
import MediaCore
import Testing

/// Sound renditions in the multivariant playlist (`EXT-X-MEDIA`, a variant's `AUDIO=`) and in
/// the DASH manifest (an audio adaptation set each), and the language tags they carry.
@Suite struct AlternativeRenditionTests {
    @Test("EXT-X-MEDIA: TYPE, GROUP-ID, NAME, LANGUAGE, DEFAULT, AUTOSELECT, CHANNELS, URI; before the variants; AUDIO= on the variant alone, never on an I-frame variant")
    func multivariantPlaylistNamesTheSound() {
        let playlist = HLSMultivariantPlaylist(
            variants: [.init(uri: "v.m3u8", bandwidth: 900_000, codecs: ["avc1.64001e", "mp4a.40.2"], audioGroup: "audio")],
            iFrameVariants: [.init(uri: "i.m3u8", bandwidth: 50_000, codecs: ["avc1.64001e"])],
            alternativeRenditions: [
                .init(groupID: "audio", name: "English", language: "en", isDefault: true, autoselect: false, channels: 2, uri: "a.m3u8"),
                .init(groupID: "audio", name: "French", language: "fr", isDefault: false, channels: 1, uri: "b.m3u8"),
            ])
        let lines = playlist.rendered.split(separator: "\n").map(String.init)
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"2\",URI=\"a.m3u8\""))
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=NO,AUTOSELECT=YES,CHANNELS=\"1\",URI=\"b.m3u8\""))
        let media = lines.lastIndex { $0.hasPrefix("#EXT-X-MEDIA:") } ?? .max, variant = lines.firstIndex { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? -1
        #expect(media < variant)
        #expect(lines[variant].hasSuffix(",AUDIO=\"audio\""))
        #expect(lines.first { $0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") }?.contains("AUDIO") == false)
    }

    @Test("DASH: an audio adaptation set per sound, lang, the main role first, its channels and rate, its timeline; sound alone has no video adaptation set")
    func dashManifestHasAnAdaptationSetPerSound() {
        let sound = { (id: String, language: String?) in
            DASHManifest.AudioRepresentation(id: id, codecs: "mp4a.40.2", language: language, sampleRate: 48000, channelCount: 2, bandwidth: 130_000, timescale: 48000,
                                             initialization: "\(id)-init.mp4", media: "\(id)-$Number%05d$.m4s", startNumber: 0,
                                             segments: [(2176, 288_768), (290_944, 287_744)])
        }
        let manifest = DASHManifest(kind: .static(duration: 12), minimumBufferTime: 6, representations: [], audioRepresentations: [sound("audio", "en"), sound("audio-2", nil)])
        let text = manifest.rendered
        #expect(text.components(separatedBy: "<AdaptationSet contentType=\"audio\" mimeType=\"audio/mp4\"").count == 3)
        #expect(text.contains("<AdaptationSet contentType=\"audio\" mimeType=\"audio/mp4\" lang=\"en\" segmentAlignment=\"true\" startWithSAP=\"1\">"))
        #expect(text.contains("value=\"main\"") && text.contains("value=\"alternate\""))
        #expect(text.contains("<Representation id=\"audio\" codecs=\"mp4a.40.2\" audioSamplingRate=\"48000\" bandwidth=\"130000\">"))
        #expect(text.contains("audio_channel_configuration:2011\" value=\"2\""))
        #expect(text.contains("<S t=\"2176\" d=\"288768\"/>") && text.contains("<S t=\"290944\" d=\"287744\"/>"))
        #expect(!text.contains("contentType=\"video\""), "sound alone: no (empty) video adaptation set")
    }

    @Test("language tags: ISO 639-2 (B and T) to the two-letter code and a name; und, mul and anything not two or three letters give none", arguments: [
        ("eng", "en", "English"), ("fre", "fr", "French"), ("fra", "fr", "French"), ("ger", "de", "German"), ("DEU", "de", "German"), ("en", "en", "English"),
        ("tlh", "tlh", nil), ("und", nil, nil), ("mul", nil, nil), ("", nil, nil), ("e\"n", nil, nil), ("english", nil, nil), ("e1g", nil, nil),
    ] as [(String, String?, String?)])
    func languageTags(_ code: String, _ tag: String?, _ name: String?) {
        let found = LanguageTag(code)
        #expect(found?.tag == tag && found?.name == name, "\(code): \(String(describing: found))")
    }
}
