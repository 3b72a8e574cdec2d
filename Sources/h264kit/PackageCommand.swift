import ArgumentParser
import H264Kit

struct PackageCommand: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        commandName: "package",
        abstract: "Package a stream or movie for HLS (and DASH): segments and playlists, without re-encoding (or a ladder, encoded).",
        discussion: """
            Segments are cut at the first sync sample at or after each multiple of --segment-duration (6 s): CMAF \
            fragmented MP4 after an initialization segment (fmp4, the default; HLS version 6 or 7 and DASH), or MPEG-TS \
            (ts). OUT.m3u8 is the multivariant playlist: BANDWIDTH (the peak segment bit rate) and AVERAGE-BANDWIDTH \
            measured, CODECS, RESOLUTION and FRAME-RATE from the stream, and an I-frame playlist. Beside it go, per \
            rendition NAME: OUT-NAME.m3u8 (VOD; EXT-X-INDEPENDENT-SEGMENTS when every segment decodes on its own), \
            OUT-NAME-iframes.m3u8 (a byte range per sync sample), OUT-NAME-init.mp4 and OUT-NAME-00000.m4s... \
            Sound: ts segments carry the input's first AAC track muxed beside the video; fmp4 packages put every AAC \
            track in an audio rendition of its own (EXT-X-MEDIA TYPE=AUDIO, GROUP-ID "audio": OUT-audio.m3u8, \
            OUT-audio-init.mp4, OUT-audio-00000.m4s..., segments aligned with the video's; in the DASH manifest an \
            audio adaptation set each); CODECS and BANDWIDTH count the sound; --no-audio leaves it out; a track \
            left out is named. \
            --dash OUT.mpd writes a DASH manifest of the same segments. --ladder encodes renditions (1080p, 720p, \
            480p, 360p, 240p: heights) with keyframes every segment, so their segments align. A failed or interrupted \
            run removes what it wrote.
            """
    )

    @Argument(help: "The input: an Annex-B stream, a transport stream, MP4 or MOV (- for a stream on standard input).")
    var input: String

    @Argument(help: "The multivariant playlist, OUT.m3u8; the rest goes beside it.")
    var output: String

    @Option(help: ArgumentHelp("The target segment length.", valueName: "seconds"))
    var segmentDuration: Double = 6

    @Option(help: "The segments' container: fmp4 (CMAF) or ts.")
    var segmentFormat: String = "fmp4"

    @Option(help: ArgumentHelp("Write a DASH manifest of the same segments too (fmp4 only).", valueName: "OUT.mpd"))
    var dash: String?

    @Flag(help: "Cut only at clean sync samples, so that every segment decodes on its own even from an open-GOP source.")
    var cleanCuts = false

    @Option(help: ArgumentHelp("Encode renditions of these heights (1080p,720p,...) instead of packaging the input as it is.", valueName: "list"))
    var ladder: String?

    @Option(help: "The x264 preset for --ladder.")
    var preset: String = "veryfast"

    @Flag(help: "Leave the sound out (by default ts segments carry the first AAC track muxed beside the video, fmp4 packages every AAC track as an audio rendition).")
    var noAudio = false

    func validate() throws {
        guard segmentDuration > 0, segmentDuration <= 3600 else { throw ValidationError("--segment-duration \(segmentDuration): 0 to 3600 seconds") }
        guard MediaSegmenter.Format(rawValue: segmentFormat) != nil else { throw ValidationError("--segment-format \(segmentFormat): expected fmp4 or ts") }
        guard output.lowercased().hasSuffix(".m3u8") else { throw ValidationError("\(output): the output is the multivariant playlist, an .m3u8 file") }
        if dash != nil && segmentFormat != "fmp4" { throw ValidationError("--dash needs fmp4 segments (DASH plays CMAF, not MPEG-TS)") }
        if let ladder { _ = try Self.heights(ladder) }
    }

    /// The heights a ladder names ("1080p,720p" or "1080,720").
    static func heights(_ text: String) throws -> [Int] {
        try text.split(separator: ",").map { item in
            let digits = String(item.filter { $0 != " " }).lowercased()
            guard let height = Int(digits.hasSuffix("p") ? String(digits.dropLast()) : digits), height >= 64, height <= 4320, height % 2 == 0 else {
                throw ValidationError("--ladder \(item): expected a height such as 720p")
            }
            return height
        }
    }

    @OptionGroup var damage: DamageOptions

    func work() throws {
        var segmenter = MediaSegmenter.Options(format: MediaSegmenter.Format(rawValue: segmentFormat)!,
                                               segmentDuration: MediaTime(seconds: segmentDuration, preferredTimescale: 90_000),
                                               cutsOnlyAtCleanSyncSamples: cleanCuts)
        segmenter.transportStream = .init()
        let source = damage.applied(to: HLSPackager.Options().source)
        let name = input == "-" ? "stdin" : input
        let progress = Progress()
        let summary: HLSPackager.Summary
        do {
            if let ladder {
                summary = try LadderPackager(options: .init(packaging: .init(segmenter: segmenter, dashManifest: dash, source: source), heights: try Self.heights(ladder),
                                                            preset: preset)).run(path: input, to: output) { state in
                    progress.update(done: state.frames, total: nil, unit: "frames", note: state.rendition)
                }
            } else {
                var options = HLSPackager.Options(segmenter: segmenter, dashManifest: dash, source: source)
                options.carriesAudio = !noAudio
                summary = try HLSPackager(options: options).run(path: input, to: output) { read, total in
                    progress.update(done: read, total: total, unit: "MB", note: "")
                }
            }
        } catch {
            progress.clear()
            throw ToolError("\(name): \(error)")
        }
        progress.clear()
        for warning in summary.warnings { printError("\(name): warning: \(warning)") }
        for rendition in summary.renditions {
            let durations = rendition.segments.map(\.duration.seconds)
            printError("\(rendition.playlist): \(rendition.segments.count) segments, \(decimal(rendition.duration)) s, longest \(decimal(durations.max() ?? 0)) s; "
                + "BANDWIDTH \(rendition.variant.bandwidth), AVERAGE-BANDWIDTH \(rendition.variant.averageBandwidth ?? 0), \(rendition.variant.codecs.joined(separator: ","))"
                + (rendition.independentSegments ? "" : "; segments not independent (open GOP: --clean-cuts cuts only where they are)"))
        }
        for sound in summary.audioRenditions {
            printError("\(sound.playlist): sound of track \(sound.track.id)\(sound.alternative.language.map { " (\($0))" } ?? ""), \(sound.segments.count) segments, "
                + "\(decimal(sound.duration)) s, \(sound.peakBandwidth) bit/s peak, \(sound.codecs)\(sound.alternative.isDefault ? ", the default" : "")")
        }
        printError("\(output): \(summary.renditions.count) rendition(s)" + (summary.renditions.isEmpty ? " of pictures: sound alone" : "")
            + (summary.dashManifest.map { "; \($0)" } ?? ""))
    }

    private func decimal(_ value: Double) -> String {
        let thousandths = Int((value * 1000).rounded())
        let fraction = thousandths % 1000
        return "\(thousandths / 1000)." + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)"
    }
}
