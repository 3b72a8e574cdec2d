import ArgumentParser
import H264Kit
import SystemIO

struct Stream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Send INPUT as RTP over UDP (RFC 6184), or serve it over RTSP, or as a live HLS/DASH origin over HTTP.",
        discussion: """
            rtp://HOST:PORT sends RTP to the host, RTCP sender reports to PORT+1, paced by the timestamps \
            (as ffmpeg -re does), and a BYE at the end or on SIGINT, which ends ffmpeg's and GStreamer's \
            receivers; the input's first AAC or G.711 track goes beside the video to PORT+2 (AAC as RFC 3640, \
            G.711 as PCMU/PCMA; RTCP on PORT+3), \
            as ffmpeg sends a file with sound (--no-audio: the video alone). --sdp writes what `h264kit sdp` \
            prints, for the receiver (ffmpeg -protocol_whitelist file,udp,rtp -i FILE.sdp).
            rtsp://HOST:PORT/PATH serves INPUT on HOST:PORT at PATH to any number of clients (RTP over UDP or \
            interleaved in TCP): a file to each client from its start, or with --loop as one live stream clients \
            join at its next keyframe; until SIGINT; the input's first AAC or G.711 track is a second medium \
            beside the video (RFC 3640, PCMU/PCMA; --no-audio: the video alone). --user USER:PASS makes clients authenticate. \
            rtsps://HOST:PORT/PATH (with --cert and --key) is RTSP over TLS, the packets interleaved in the connection.
            A .y4m (or raw .yuv) INPUT is encoded live with x264 (tune zerolatency unless --tune says otherwise), \
            and a receiver's RTCP picture loss indication makes the next picture an IDR picture.
            With --transcode (http://), a file's picture is decoded and encoded again live with x264 (the encoder \
            options, tune zerolatency, an IDR picture at each segment's start) and its sound goes as it is.
            http://HOST:PORT/PATH.m3u8 is a live HLS origin: INPUT (a file, paced, with --loop for ever; pictures \
            encoded live; or a live source as `receive` takes it: rtsp://, rtp://, .sdp) cut into segments of \
            --segment-duration (2 s) at keyframes, fMP4 (CMAF) or TS, a window of --window segments (6) in the \
            playlist with EXT-X-PROGRAM-DATE-TIME, the multivariant playlist at PATH.m3u8, a DASH MPD at PATH.mpd \
            (fMP4); segments in memory, dropped two target durations after they leave the window. Until SIGINT \
            (or the input's end: the playlist then gets EXT-X-ENDLIST). A file's first AAC track (a live source's \
            AAC sound, placed by its sender reports) goes with its picture: muxed in TS segments; in fMP4 every AAC track as an audio rendition \
            (PATH-audio.m3u8, PATH-audio2.m3u8, …: EXT-X-MEDIA TYPE=AUDIO with NAME and LANGUAGE, the first the default, their \
            segments ending with the picture's; in the MPD an audio adaptation set); --no-audio: the video alone. \
            A live source (rtsp://, rtp://, .sdp) is relayed to rtsp://HOST:PORT/PATH as one stream, its AAC or G.711 sound \
            beside the picture, until it ends. --rendition SOURCE adds a rendition (a \
            camera's sub stream, another encoder's output) beside INPUT's (its picture alone). --low-latency adds Low-Latency HLS: parts \
            of --part-duration (0.5 s), blocking playlist reloads, preload hints and delta updates (fMP4). At the \
            end the origin's counts are printed.
            """
    )

    @Argument(help: "An Annex-B or transport stream (or - for standard input), MP4 or MOV; pictures to encode live (.y4m, raw .yuv); or, for http://, a live source (rtsp://, rtp://, .sdp).")
    var input: String

    @Argument(help: ArgumentHelp("Where the stream goes.", valueName: "rtp://HOST:PORT | rtsp://HOST:PORT/PATH | http(s)://HOST:PORT/PATH.m3u8"))
    var destination: String

    @Option(help: ArgumentHelp("HTTP: the target segment length.", valueName: "seconds"))
    var segmentDuration: Double = 2

    @Option(help: "HTTP: the segments' container, fmp4 (CMAF) or ts.")
    var segmentFormat: String = "fmp4"

    @Option(help: "HTTP: segments listed in the live playlist (low latency: at least enough for delta updates).")
    var window: Int = 6

    @Flag(help: "HTTP: Low-Latency HLS (parts, blocking reloads, preload hints, delta updates; fmp4).")
    var lowLatency = false

    @Option(name: .customLong("rendition"), help: ArgumentHelp("HTTP: another rendition of the same stream from SOURCE (a file, paced like INPUT, or rtsp://, rtp://, .sdp): video2, video3, … beside INPUT's video; repeat for more.", valueName: "SOURCE"))
    var renditions: [String] = []

    @Option(help: ArgumentHelp("HTTP, --low-latency: the longest part (PART-TARGET; default 0.5).", valueName: "seconds"))
    var partDuration: Double?

    @Option(help: ArgumentHelp("Write the session description to FILE first (rtp://).", valueName: "FILE"))
    var sdp: String?

    @Option(help: "The largest RTP packet in bytes, header included (the path MTU less IP and UDP headers).")
    var mtu = 1200

    @Option(help: "Packetization mode: 0 (single NAL unit) or 1 (STAP-A and FU-A).")
    var packetizationMode = 1

    @Option(help: "The RTP payload type (dynamic: 96-127).")
    var payloadType: UInt8 = 96

    @Flag(help: "Send as fast as the socket takes packets instead of at the stream's pace.")
    var noPace = false

    @Flag(help: "Send the video alone, leaving out the input's sound.")
    var noAudio = false

    @Flag(help: "HTTP: decode INPUT's picture and encode it again live with x264 (the encoder options; tune zerolatency, an IDR picture at each segment's start), its sound passed through as it is (ffmpeg -c:v libx264 -c:a copy).")
    var transcode = false

    @Option(help: "Pace at this many times real time (ffmpeg's -readrate).")
    var rate: Double = 1

    @Flag(help: "Start again at the first sample after the last, times rising, until interrupted.")
    var loop = false

    @Option(help: "Stop after N pictures (rtp://, or pictures encoded live).")
    var frames: Int?

    @Option(help: ArgumentHelp("RTSP: clients must give this user and password (Digest or Basic).", valueName: "USER:PASS"))
    var user: String?

    @Flag(name: .shortAndLong, help: "Print what is sent: a line a second while serving RTSP, a summary at the end.")
    var verbose = false

    @OptionGroup var access: AccessOptions

    @OptionGroup var sourceTLS: TLSClientOptions

    @Flag(help: "http://: HTTP/2 in the clear with prior knowledge (h2c), for a proxy in front that speaks it; HTTP/1.1 clients are not served.")
    var cleartextHTTP2 = false

    /// The origin's options from the destination URL and the TLS options.
    func originOptions() throws -> HLSOrigin.Options {
        var options = try HLSOrigin.Options(url: destination, tls: access.tlsFiles)
        if cleartextHTTP2 { options.transport = .cleartextHTTP2 }
        return options
    }

    @OptionGroup var pictureInput: PictureInputOptions
    @OptionGroup var encoder: Encode.EncoderOptions
    @OptionGroup var limits: LimitOptions
    @OptionGroup var damage: DamageOptions

    var isRTSP: Bool { RTSPURL.hasScheme(destination) }
    var isSecure: Bool { destination.lowercased().hasPrefix("https://") || destination.lowercased().hasPrefix("rtsps://") }
    var isHTTP: Bool { destination.lowercased().hasPrefix("http://") || destination.lowercased().hasPrefix("https://") }
    var isLive: Bool { pictureInput.isPictures(input) }

    func validate() throws {
        guard (0...1).contains(packetizationMode) else { throw ValidationError("--packetization-mode \(packetizationMode): 0 or 1") }
        guard (96...127).contains(payloadType) else { throw ValidationError("--payload-type \(payloadType): a dynamic type, 96-127") }
        guard (H264Packetizer.smallestPacketSize...H264Packetizer.largestPacketSize).contains(mtu) else {
            throw ValidationError("--mtu \(mtu): \(H264Packetizer.smallestPacketSize)-\(H264Packetizer.largestPacketSize) bytes")
        }
        if sdp != nil, input == "-" { throw ValidationError("--sdp reads the input's first sample before sending: give a file, not standard input") }
        if sdp != nil, isRTSP { throw ValidationError("--sdp is for rtp://: an RTSP client gets the description from DESCRIBE") }
        if user != nil, !isRTSP { throw ValidationError("--user is for rtsp:// (RTP over UDP has no authentication)") }
        if access.secretFile != nil, !isHTTP, !isRTSP { throw ValidationError("--secret-file is for an HTTP origin or an RTSP server (http://, https://, rtsp://)") }
        if !isHTTP, cleartextHTTP2 { throw ValidationError("--cleartext-http2 is for an HTTP origin (http://)") }
        if isSecure != access.givesCertificate { throw ValidationError("--cert and --key go with https:// and rtsps:// (and those need them)") }
        if let user { _ = try RTSPCredentials(parsing: user) }
        guard rate > 0, rate <= 1000 else { throw ValidationError("--rate \(rate): more than 0, at most 1000") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): at least 1") }
        if isHTTP {
            guard segmentDuration > 0, segmentDuration <= 60 else { throw ValidationError("--segment-duration \(segmentDuration): 0 to 60 seconds") }
            guard MediaSegmenter.Format(rawValue: segmentFormat) != nil else { throw ValidationError("--segment-format \(segmentFormat): fmp4 or ts") }
            guard (3...10_000).contains(window) else { throw ValidationError("--window \(window): 3 to 10000 segments") }
            if lowLatency {
                guard segmentFormat == "fmp4" else { throw ValidationError("--low-latency: parts are fMP4 fragments; --segment-format fmp4") }
                let part = partDuration ?? 0.5
                guard part >= 0.1, part <= segmentDuration else {
                    throw ValidationError("--part-duration \(part): 0.1 s up to the segment duration (\(segmentDuration) s)")
                }
            } else if partDuration != nil {
                throw ValidationError("--part-duration is for --low-latency")
            }
            guard renditions.count <= 8 else { throw ValidationError("--rendition: at most 8 more renditions") }
            for other in renditions where other.lowercased().hasSuffix(".y4m") || other.lowercased().hasSuffix(".yuv") {
                throw ValidationError("--rendition \(other): pictures are encoded live for INPUT only; give an encoded stream or a live source")
            }
            if cleartextHTTP2, destination.lowercased().hasPrefix("https://") { throw ValidationError("--cleartext-http2 is for http:// (https:// offers HTTP/2 by ALPN)") }
            do { _ = try originOptions() } catch { throw ValidationError("\(error)") }
        } else if LiveSource.isLive(input), !isRTSP {
            throw ValidationError("\(input): a live source is relayed to an http:// origin or an rtsp:// server; receive records it")
        }
        if transcode {
            guard isHTTP else { throw ValidationError("--transcode is for http:// (a live origin); rtp:// and rtsp:// send INPUT's picture as it is") }
            guard !isLive, !LiveSource.isLive(input), input != "-" else { throw ValidationError("--transcode takes a file (MP4, MOV, TS, Annex-B); pictures to encode are encoded anyway") }
        }
        if frames != nil, isRTSP, !isLive { throw ValidationError("--frames with rtsp:// limits pictures encoded live; a served file goes to each client whole") }
        if isLive {
            try pictureInput.validate(for: input)
            if encoder.passes != 1 { throw ValidationError("--passes 2 cannot encode live") }
        }
    }

    func run() async throws {
        let packetizer = H264Packetizer.Configuration(packetizationMode: packetizationMode, maximumPacketSize: mtu, payloadType: payloadType)
        do {
            let live = try isLive ? liveSamples() : nil
            // The picture goes, and over RTP and RTSP the first AAC or G.711 track; say what does not.
            let tracks = live != nil || input == "-" || LiveSource.isLive(input) ? nil
                : try streamedTracks()
            for track in tracks?.leftOut ?? [] { printError("\(input): warning: \(track)") }
            if isHTTP {
                try await serveHLS(live: live, tracks: tracks)
            } else if isRTSP {
                try await serveRTSP(live: live, packetizer: packetizer)
            } else {
                try await sendRTP(live: live, packetizer: packetizer, audio: tracks?.audio)
            }
        } catch let error as ToolError { throw error } catch let error as NetworkError where error.code == .source {
            throw ToolError("\(input): \(error)")  // (a source's error does not name it)
        } catch { throw ToolError("\(error)") }
    }

    /// The tracks of INPUT that go beside its picture: over HTTP in fMP4 every AAC track (a
    /// rendition each), in TS segments the first, over RTP/RTSP the first AAC or G.711 one.
    func streamedTracks() throws -> StreamedTracks {
        if isHTTP, segmentFormat == "fmp4" {
            return try StreamedTracks(path: input, carriesAudio: !noAudio, othersReason: StreamedTracks.notAACOverHTTP, everyAACTrack: true)
        }
        return try StreamedTracks(path: input, carriesAudio: !noAudio, othersReason: isHTTP ? StreamedTracks.oneAACTrackInTransportStream : StreamedTracks.oneAACTrack,
                                  sound: isHTTP ? .aac : .aacOrG711)
    }

    /// Pictures encoded as they come, keyframes on request.
    func liveSamples() throws -> LivePictureSamples {
        let (input, limits, pictureInput) = (input, limits.pictures, pictureInput)
        let probe = try pictureInput.openReader(input, limits: limits)
        let settings = encoder.settings(width: probe.width, height: probe.height, format: probe.format, frameRate: probe.frameRate)
        return try LivePictureSamples(settings: settings, options: .init(paced: !noPace, loops: loop, frameLimit: frames)) { () throws(MediaIOError) in
            try pictureInput.openReader(input, limits: limits)
        }
    }

    func sendRTP(live: LivePictureSamples?, packetizer: H264Packetizer.Configuration, audio: TrackDescription?) async throws {
        var options = damage.applied(to: limits.mediaSource)
        if audio != nil { options.tracks = .all }  // (the sender leaves out all but the video and the first AAC track)
        let target = try RTPDestination(parsing: destination)
        let audioPacketizer = AACPacketizer.Configuration(maximumPacketSize: mtu, payloadType: Self.audioPayloadType(besideVideo: payloadType))
        var senderOptions = RTPSender.Options(packetizer: packetizer, audioPacketizer: audioPacketizer, paced: !noPace, rate: rate, sampleLimit: frames)
        senderOptions.audioTrack = audio?.id
        let sender = try RTPSender(destination: target, options: senderOptions)
        if let sdp {
            let format = if let live { try await H264PayloadFormat(firstSampleOf: live, payloadType: payloadType, packetizationMode: packetizationMode) }
                else { try H264PayloadFormat(firstSampleOf: input, options: options, payloadType: payloadType, packetizationMode: packetizationMode) }
            let audioFormat = audio?.format.audio.flatMap { AudioPayloadFormat(sending: $0, dynamicPayloadType: audioPacketizer.payloadType) }
            try writeFile(sdp, Array(target.sessionDescription(video: format, sound: audioFormat).text.utf8))
        }
        // SIGINT and SIGTERM stop the stream the way its end does: with an RTCP BYE.
        let task = Task {
            if let live { return try await sender.send(live, onPictureLoss: { live.requestKeyframe() }) }
            return try await sender.send(MediaFileSamples(path: input, options: options, loops: loop, onWarnings: Self.printWarnings(of: input)))
        }
        let token = Interruption.shared.onInterrupt { task.cancel() }
        defer { Interruption.shared.remove(token) }
        let summary = try await task.value
        if verbose {
            let feedback = summary.receiverFeedback
            printError("\(summary.samples) samples, \(summary.packets) RTP packets, \(summary.octets) payload bytes, \(summary.controlPackets) RTCP packets, SSRC \(summary.ssrc); "
                       + "receivers: \(feedback.receptionReports) reports, \(feedback.pictureLossIndications) picture loss indications")
            if let audio = summary.audio {
                printError("audio (track \(audio.trackID)): \(audio.samples) frames, \(audio.packets) RTP packets, \(audio.octets) payload bytes, SSRC \(audio.ssrc)")
            }
        }
    }

    /// The audio medium's payload type: 97, or 98 when the video took 97.
    static func audioPayloadType(besideVideo video: UInt8) -> UInt8 { video == 97 ? 98 : 97 }

    func serveRTSP(live: LivePictureSamples?, packetizer: H264Packetizer.Configuration) async throws {
        let url = try RTSPURL(parsing: destination)
        let media = damage.applied(to: limits.mediaSource)
        var serverOptions = RTSPServer.Options(host: url.host, port: url.port, credentials: try user.map(RTSPCredentials.init(parsing:)),
                                               packetizer: packetizer, paced: !noPace, rate: rate)
        serverOptions.carriesAudio = !noAudio
        let key = try access.accessKey()
        serverOptions.accessKey = key
        if url.isSecure { serverOptions.tls = access.tlsFiles }
        let server = try RTSPServer(options: serverOptions)
        let hangup = access.reloadingOnHangup { try server.reloadCertificate() }
        defer { hangup?.restore() }
        let (verbose, expiresIn, expires) = (verbose, access.expiresIn, access.expiry)
        let listening: @Sendable (Int) -> Void = { port in
            let plain = RTSPURL(host: url.host, port: port, path: url.path, isSecure: url.isSecure).description
            if let key, let signed = try? key.signedURL(plain, expires: expires) {
                printError("serving \(signed) (signed, good for \(expiresIn) s)")
            } else if verbose {
                printError("serving \(plain)")
            }
        }
        // A live source is served until its pictures end (each client told by a BYE), a file
        // until SIGINT; a relayed source until it ends.
        let relayed = LiveSource.isLive(input) ? try LiveSource(parsing: input, audio: !noAudio, trust: sourceTLS.trust) : nil
        if live == nil, relayed == nil { try server.serve(.file(path: input, options: media, loops: loop), at: url.path) }
        let (input, path) = (input, url.path)
        let serving = Task {
            if let live {
                try await server.run(live: live, at: path, onListening: listening)
            } else if let relayed {
                let report = try await server.run(relaying: relayed, at: path, onListening: listening)
                for medium in report.mediaNotReceived { printError("warning: \(input): \(medium) not relayed") }
            } else {
                try await server.run(onListening: listening)
            }
        }
        let token = Interruption.shared.onInterrupt { serving.cancel() }
        defer { Interruption.shared.remove(token) }
        let reporter = Task {
            guard verbose else { return }
            var last = server.statistics
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                let now = server.statistics
                printError("clients \(now.sessionsPlaying), \(now.packetsSent - last.packetsSent) packets/s, \(now.requests) requests, "
                           + "\(now.errorsAnswered) refused, \(now.clientsFellBehind) fell behind")
                last = now
            }
        }
        defer { reporter.cancel() }
        try await serving.value
    }

    /// A live HLS/DASH origin of INPUT, until SIGINT or the input's end.
    func serveHLS(live: LivePictureSamples?, tracks: StreamedTracks?) async throws {
        var options = try originOptions()
        options.segmenter = MediaSegmenter.Options(format: MediaSegmenter.Format(rawValue: segmentFormat)!,
                                                   segmentDuration: MediaTime(seconds: segmentDuration, preferredTimescale: 90_000))
        options.segmenter.transportStream = .init()
        options.windowSize = window
        options.servesDASH = options.segmenter.format == .fragmentedMP4
        options.lowLatency = lowLatency ? .init(partDuration: MediaTime(seconds: partDuration ?? 0.5, preferredTimescale: 90_000)) : nil
        let key = try access.accessKey()
        options.accessKey = key
        let origin = try HLSOrigin(options: options)
        let (expires, expiresIn) = (access.expiry, access.expiresIn)
        let hangup = access.reloadingOnHangup { try origin.reloadCertificate() }
        defer { hangup?.restore() }
        let (input, loop, paced, verbose, media, carriesSound) = (input, loop, !noPace, verbose, damage.applied(to: limits.mediaSource), !noAudio)
        let trust = sourceTLS.trust
        // (--transcode: the stream's size, format and rate replace these.)
        let transcoding = transcode ? TranscodedSamples<MediaFileSamples>.Options(
            encoder: encoder.settings(width: 16, height: 16, format: .yuv420p, frameRate: FrameRate(25, 1)),
            keyframeInterval: options.segmenter.segmentDuration, limits: limits.pictures) : nil
        let serving = Task {
            try await origin.run(onListening: { url in
                guard let key, let port = Int(url.split(separator: ":").last?.prefix { $0.isNumber } ?? "") else { return printError("serving \(url)") }
                printError("serving \((try? origin.url(port: port, signedBy: key, expires: expires)) ?? url) (signed, good for \(expiresIn) s)")
            })
        }
        // One rendition from INPUT ("video"), and one from each --rendition source (video2, …).
        @Sendable func publish(_ input: String, as rendition: String, tracks: StreamedTracks?) async throws {
            if LiveSource.isLive(input) {
                // (The sound beside INPUT's picture; a --rendition source's picture alone.)
                let report = try await origin.publish(try LiveSource(parsing: input, audio: carriesSound && rendition == "video", trust: trust), rendition: rendition)
                for medium in report.mediaNotReceived { printError("warning: \(input): \(medium) not relayed") }
            } else {
                let options = tracks?.sourceOptions(media) ?? media
                let samples = MediaFileSamples(path: input, options: options, loops: loop, onWarnings: Self.printWarnings(of: input))
                if let transcoding, rendition == "video" {
                    try await origin.publish(TranscodedSamples(samples, options: transcoding), paced: paced, rendition: rendition, sounds: tracks?.audioTracks ?? [])
                } else {
                    try await origin.publish(samples, paced: paced, rendition: rendition, sounds: tracks?.audioTracks ?? [])
                }
            }
        }
        let others = renditions
        let publishing = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    if let live { try await origin.publish(live, paced: false) } else { try await publish(input, as: "video", tracks: tracks) }
                }
                for (index, other) in others.enumerated() { group.addTask { try await publish(other, as: "video\(index + 2)", tracks: nil) } }
                try await group.waitForAll()
            }
        }
        let token = Interruption.shared.onInterrupt { publishing.cancel(); serving.cancel() }
        defer { Interruption.shared.remove(token) }
        let reporter = Task {
            guard verbose else { return }
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                let now = origin.statistics
                printError("segments \(now.segmentsPublished), parts \(now.partsPublished), requests \(now.requests) (\(now.requestsHeld) held), \(now.bytesServed) bytes served, \(now.notFound) not found")
            }
        }
        defer {
            reporter.cancel()
            let end = origin.statistics
            printError("origin: \(end.segmentsPublished) segments, \(end.partsPublished) parts published; \(end.requests) requests (\(end.served) served, \(end.requestsHeld) held, "
                + "\(end.heldRequestsTimedOut) held past their time, \(end.notFound) not found, \(end.badRequests) bad, \(end.badMethods) bad methods, \(end.badRanges) bad ranges), "
                + "\(end.bytesServed) bytes served")
        }
        do { try await publishing.value } catch {
            serving.cancel()
            throw error
        }
        // The input ended: its playlist says so; clients finish fetching until SIGINT.
        try await serving.value
    }

    /// Prints what reading `input` warned of (the first pass of a loop).
    static func printWarnings(of input: String) -> @Sendable ([String]) -> Void {
        { warnings in for warning in warnings { printError("\(input): warning: \(warning)") } }
    }
}
