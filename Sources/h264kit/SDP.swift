import ArgumentParser
import H264Kit

struct SDP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdp",
        abstract: "Print the session description (SDP) that sending INPUT over RTP to a destination announces.",
        discussion: """
            RFC 6184 §8.2.1: a video medium with a=rtpmap H264/90000 and a=fmtp carrying packetization-mode, \
            profile-level-id and sprop-parameter-sets (base64 SPS and PPS of the first sample's description); \
            and, when INPUT has AAC (and not --no-audio), an audio medium on PORT+2 (RFC 3640 mpeg4-generic, \
            AAC-hbr, config= the AudioSpecificConfig), as `stream` sends it. ffmpeg, ffplay, VLC and GStreamer \
            open it (ffmpeg: -protocol_whitelist file,udp,rtp -i FILE.sdp).
            """
    )

    @Argument(help: "An Annex-B stream, a transport stream, MP4 or MOV.")
    var input: String

    @Argument(help: ArgumentHelp("Where the RTP goes.", valueName: "rtp://HOST:PORT"))
    var destination: String

    @Option(help: "Packetization mode: 0 (single NAL unit) or 1 (STAP-A and FU-A).")
    var packetizationMode = 1

    @Option(help: "The RTP payload type (dynamic: 96-127).")
    var payloadType: UInt8 = 96

    @Flag(help: "Announce the video alone (as `stream --no-audio` sends it).")
    var noAudio = false

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        guard (0...1).contains(packetizationMode) else { throw ValidationError("--packetization-mode \(packetizationMode): 0 or 1") }
        guard (96...127).contains(payloadType) else { throw ValidationError("--payload-type \(payloadType): a dynamic type, 96-127") }
    }

    mutating func run() throws {
        var options = MediaSource.Options.decoding
        options.movieLimits = limits.movie
        do {
            let target = try RTPDestination(parsing: destination)
            let format = try H264PayloadFormat(firstSampleOf: input, options: options, payloadType: payloadType, packetizationMode: packetizationMode)
            // The medium `stream` sends beside the video: the same choice.
            let audio = try StreamedTracks(path: input, options: options, carriesAudio: !noAudio, sound: .aacOrG711).audio?.format.audio
            let audioFormat = audio.flatMap { AudioPayloadFormat(sending: $0, dynamicPayloadType: Stream.audioPayloadType(besideVideo: payloadType)) }
            print(target.sessionDescription(video: format, sound: audioFormat).text, terminator: "")
        } catch {
            throw ToolError(error)
        }
    }
}
