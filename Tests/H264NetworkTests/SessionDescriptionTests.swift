import H264Network
import MediaCore
import Testing

@Suite("SessionDescription and H264PayloadFormat")
struct SessionDescriptionTests {
    /// As Debian's ffmpeg 5.1 writes it (`-f rtp -sdp_file`) for Samples/Media's stream, with its spacing.
    static let ffmpegSDP = """
        v=0\r
        o=- 0 0 IN IP4 127.0.0.1\r
        s=No Name\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        a=tool:libavformat LIBAVFORMAT_VERSION\r
        m=video 5004 RTP/AVP 96\r
        b=AS:200\r
        a=rtpmap:96 H264/90000\r
        a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z2QADazZQUH7ARAAAD6QAA6mCPFCmWA=,aOvjyyLA; profile-level-id=64000D\r

        """

    @Test func readsWhatFFmpegWrites() throws {
        let description = try SessionDescription(parsing: Self.ffmpegSDP)
        #expect(description.connection == "IN IP4 127.0.0.1" && description.attribute("tool") == "libavformat LIBAVFORMAT_VERSION")
        #expect(description.media.count == 1 && description.media[0].port == 5004 && description.media[0].formats == ["96"])
        let format = try H264PayloadFormat(medium: description.media[0])
        #expect(format.payloadType == 96 && format.packetizationMode == 1)
        #expect(format.profileLevelID.map { [$0.profile, $0.constraints, $0.level] } == [0x64, 0, 0x0D])
        #expect(format.parameterSets.count == 2)
        let video = try #require(try format.formatDescription())
        #expect(video.width == 320 && video.height == 240)
        // Written back and read again: the same parameters.
        let again = try SessionDescription(parsing: SessionDescription(media: [format.medium(port: 5004)]).text)
        #expect(try H264PayloadFormat(medium: again.media[0]) == format)
    }

    @Test func theDefaultPacketizationModeIsZeroAndParameterSetsMayBeInBand() throws {
        let text = "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=cam\nm=video 0 RTP/AVP 97\na=rtpmap:97 h264/90000\na=control:track1\n"
        let format = try H264PayloadFormat(medium: try SessionDescription(parsing: text).media[0])
        #expect(format.payloadType == 97 && format.packetizationMode == 0 && format.control == "track1")
        #expect(try format.formatDescription() == nil)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var testDescription: String { name }
    }

    static let bad: [Bad] = [
        Bad(name: "not SDP", text: "hello\n"),
        Bad(name: "no version", text: "s=x\nm=video 1 RTP/AVP 96\n"),
        Bad(name: "bad media line", text: "v=0\nm=video port RTP/AVP\n"),
        Bad(name: "bad fmtp mode", text: "v=0\nm=video 1 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 packetization-mode=7\n"),
        Bad(name: "bad base64", text: "v=0\nm=video 1 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 sprop-parameter-sets=@@@\n"),
        Bad(name: "no H264 rtpmap", text: "v=0\nm=video 1 RTP/AVP 96\na=rtpmap:96 VP8/90000\n"),
    ]

    @Test(arguments: bad) func malformedDescriptionsAreErrorsNamingTheProblem(_ case: Bad) {
        #expect(throws: NetworkError.self) {
            let description = try SessionDescription(parsing: `case`.text)
            _ = try H264PayloadFormat(medium: try #require(description.media.first))
        }
    }
}
