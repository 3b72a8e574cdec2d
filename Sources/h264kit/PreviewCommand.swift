import ArgumentParser
import Dispatch
import FoundationEssentials
import H264Kit
import SystemIO

struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Show SOURCE in a web browser: the page decodes with WebCodecs and draws each frame on time.",
        discussion: """
            The first line on standard output is the page's URL (open it in Chrome, Edge or Firefox; --open \
            starts the desktop's browser). A file plays in each page from its start, paced by the control \
            timebase, with play/pause, rate, seek (to the exact frame) and frame step; a live source \
            (rtp://@:PORT, FILE.sdp, rtsp://HOST:PORT/PATH) is drawn as it arrives. A file's first AAC track \
            plays with the picture on the same clock, and so does a live source's AAC (both 0.3 s behind the \
            stream then, for the sound to be decoded before it is heard; --no-audio: the picture alone, as it \
            arrives; a browser starts sound after a click on the page). The server stops reading while the page is saturated, so memory \
            stays flat for any file length. Localhost by default; --https with --cert and --key serves the page \
            by TLS (HTTP/2 or HTTP/1.1, its WebSocket wss://), --secret-file only by the signed URL printed.
            """
    )

    @Argument(help: ArgumentHelp("A file (.264, .ts, .mp4, .mov), or a live source as `receive` takes.", valueName: "SOURCE"))
    var source: String

    @Option(help: "The address to listen on (another than loopback only when you mean it).")
    var host = "127.0.0.1"

    @Option(help: "The port (0: any free port).")
    var port = 8080

    @Flag(help: "Start the file again after its end, times rising.")
    var loop = false

    @Option(help: "Play at this rate (0.25 to 4).")
    var rate: Double = 1

    @Option(help: ArgumentHelp("Start at this time of the file.", valueName: "SECONDS"))
    var start: Double?

    @Flag(help: "Show the picture alone (a file's first AAC track, or a live source's AAC, plays with it otherwise).")
    var noAudio = false

    @Flag(help: "Open the page in the desktop's browser (xdg-open).")
    var open = false

    @Flag(help: "End once a page has shown the stream to its end.")
    var exitAfterPlayback = false

    @Option(help: ArgumentHelp("Write what the page measured as JSON.", valueName: "FILE.json"))
    var report: String?

    @Option(help: ArgumentHelp("Frames (presentation order, from 0) the page sends back as PNG.", valueName: "N,N,..."))
    var capture: String?

    @Option(help: ArgumentHelp("Where the captures go (DIR/frame-N.png).", valueName: "DIR"))
    var captureDir: String?

    @Flag(help: "Serve the page by TLS (https://, with --cert and --key): the page's sound decoder needs a secure context anywhere but on localhost.")
    var https = false

    @OptionGroup var access: AccessOptions

    @OptionGroup var tls: TLSClientOptions

    @OptionGroup var limits: LimitOptions

    var isLive: Bool { LiveSource.isLive(source) }

    var captureNumbers: [Int] { capture?.split(separator: ",").compactMap { Int($0.filter { $0 != " " }) } ?? [] }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port): 0-65535") }
        guard rate >= 0.25, rate <= 4 else { throw ValidationError("--rate \(rate): 0.25 to 4") }
        if let start, !(start >= 0 && start.isFinite) { throw ValidationError("--start \(start): a time in seconds, 0 or more") }
        if let capture {
            let numbers = capture.split(separator: ",").map { Int($0.filter { $0 != " " }) }
            guard !numbers.isEmpty, numbers.allSatisfy({ ($0 ?? -1) >= 0 }) else { throw ValidationError("--capture \(capture): frame numbers, as 0,30,59") }
            guard captureDir != nil else { throw ValidationError("--capture needs --capture-dir DIR") }
            if isLive { throw ValidationError("--capture names frames of a file") }
        }
        if https != (access.tlsFiles != nil) { throw ValidationError("--https and --cert/--key go together") }
        if isLive, loop || start != nil { throw ValidationError("--loop and --start are for a file; a live source plays as it comes") }
    }

    func run() async throws {
        let previewSource: Preview.Source
        do {
            if LiveSource.isLive(source) {
                // RTP has no session to end it: it waits for packets an hour; RTSP keeps its client's timeout.
                let rtsp = RTSPURL.hasScheme(source)
                previewSource = .live(try LiveSource(parsing: source, options: rtsp ? .init() : .init(idleTimeout: .seconds(3600)), audio: !noAudio, trust: tls.trust))
            } else {
                let file = FilePreview(path: source, options: limits.mediaSource, loops: loop, start: start.map { MediaTime(seconds: $0, preferredTimescale: 90_000) },
                                       rate: rate, playsSound: !noAudio)
                let sound = (try? file.soundTrack()) ?? nil
                for track in (try? MediaSource.otherTracks(path: source)) ?? [] where track.id != sound?.id {
                    let why = noAudio && track.mediaType == .audio ? "the picture alone was asked for" : "the preview plays the picture and one AAC track"
                    printError("\(source): warning: track \(track.id) (\(track.mediaType), \(track.format.codecName)): left out: \(why)")
                }
                previewSource = .file(file)
            }
        } catch { throw ToolError("\(source): \(error)") }
        if let captureDir { try FileManager.default.createDirectory(atPath: captureDir, withIntermediateDirectories: true) }

        var server = DisplayServer.Options(host: host, port: port)
        if let files = access.tlsFiles { server.transport = .tls(files) }
        let key = try access.accessKey()
        server.accessKey = key
        let preview = Preview(source: previewSource, options: .init(server: server, exitsAfterPlayback: exitAfterPlayback, captures: captureNumbers))
        let hangup = access.reloadingOnHangup { try preview.reloadCertificate() }
        defer { hangup?.restore() }
        let opens = open, directory = captureDir, expires = access.expiry
        let task = Task {
            try await preview.run(onListening: { plain in
                // (With a secret, only the signed URL opens the page.)
                let url = key.flatMap { try? $0.signedURL(plain, expires: expires) } ?? plain
                // The URL first, at once (a script or test reads it from a pipe).
                writeToStandardOutput(url + "\n")
                if opens { DispatchQueue.global().async { _ = try? SystemIO.ChildProcess.run(["/usr/bin/xdg-open", url]) } }
            }, onCapture: { number, png in
                guard let directory else { return }
                do { try writeFile("\(directory)/frame-\(number).png", png) } catch { printError("capture \(number): \(error)") }
            })
        }
        let token = Interruption.shared.onInterrupt { task.cancel() }
        defer { Interruption.shared.remove(token) }
        let reports: [PageReport]
        do { reports = try await task.value } catch { throw ToolError("\(source): \(error)") }
        if let report {
            try writeFile(report, try jsonBytes(reports.first ?? PageReport()))
        }
        if let warning = reports.first?.warning { printError("warning: \(source): \(warning)") }
        if let shown = reports.first, shown.error == nil, shown.decodeErrors > 0 {
            printError("warning: \(source): the page could not decode \(shown.decodeErrors) sample(s) and went on at the next sync sample")
        }
        if let failure = reports.compactMap(\.error).first {
            throw ToolError("\(source): the page could not play it: \(failure)")
        }
    }
}
