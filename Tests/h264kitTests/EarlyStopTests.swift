import Foundation
import TestSupport
import Testing

/// Every way a run ends early, on a stream of at least 50 MB (many of the reader's 1 MB
/// windows, the size at which stopping early used to crash): `--frames`, `--duration`,
/// `--start`, a reader closing the output pipe, SIGINT. Each ends with the frames asked for, a
/// clear status (0, or 130 for an interruption, 1 for a closed pipe) and never a signal's death,
/// and leaves no partial file behind.
@Suite("Early stops on a 50 MB stream", .requires(.ffmpeg, .ffprobe), .serialized)
struct EarlyStopTests {
    static func work() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-stops-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The large stream muxed to MP4 once (by this tool: it is the stream's own samples).
    static let movie: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-large-\(getpid()).mp4").path
        _ = try? h264kit(["mux", LargeStream.annexB, path])
        return path
    }()

    /// The large stream as a transport stream, once (by this tool).
    static let transportStream: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-large-\(getpid()).ts").path
        _ = try? h264kit(["mux", LargeStream.annexB, path])
        return path
    }()

    static var inputs: [String] { [LargeStream.annexB, movie, transportStream] }

    /// Files whose names say a writer left them (`.NAME.PID.N.partial`).
    static func partialFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".partial") }
    }

    /// The first `count` frame hashes ffmpeg decodes from the repeated piece.
    static func expectedHashes(_ count: Int) throws -> [String] {
        Array(try ffmpegFrameHashes(LargeStream.piece, format: "h264").prefix(count))
    }

    @Test func theLargeStreamIsLarge() throws {
        let size = try FileManager.default.attributesOfItem(atPath: LargeStream.annexB)[.size] as? Int ?? 0
        #expect(size >= LargeStream.minimumBytes)
        #expect(FileManager.default.fileExists(atPath: Self.movie), "the movie of the large stream was not written")
        let transportSize = try FileManager.default.attributesOfItem(atPath: Self.transportStream)[.size] as? Int ?? 0
        #expect(transportSize >= LargeStream.minimumBytes, "the transport stream of the large stream")
    }

    @Test(arguments: [0, 1, 2]) func decodeFramesStopsAfterThem(input: Int) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try h264kit(["decode", Self.inputs[input], "-o", work + "/five.framemd5", "--frames", "5"])
        #expect(result.status == 0, "\(result.stderr)")
        let hashes = framemd5Hashes(String(decoding: try readFile(work + "/five.framemd5"), as: UTF8.self))
        #expect(hashes == (try Self.expectedHashes(5)))
        #expect(Self.partialFiles(in: work).isEmpty)
    }

    @Test(.requires(.x264), arguments: [0, 1, 2]) func transcodeStartAndDurationStopEarly(input: Int) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        for (name, range) in [("first.mp4", ["--duration", "1"]), ("second.mp4", ["--start", "1", "--duration", "1"])] {
            let result = try h264kit(["transcode", Self.inputs[input], work + "/" + name, "--preset", "ultrafast"] + range)
            #expect(result.status == 0, "\(result.stderr)")
            let times = try ffprobePresentationTimes(work + "/" + name)
            #expect(times.count == 30, "\(name): \(times.count) frames for one second at 30 fps")
        }
        #expect(Self.partialFiles(in: work).isEmpty)
    }

    @Test(arguments: [0, 1, 2]) func streamFramesStopsAfterThem(input: Int) throws {
        let receiver = try LoopbackUDPSocket(receiveTimeout: 1)
        let result = try h264kit(["stream", Self.inputs[input], "rtp://127.0.0.1:\(receiver.port)", "--frames", "10"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A reader that takes a few kilobytes and closes the pipe: the writer stops with a write
    /// error (exit 1, "Broken pipe" named), not killed by SIGPIPE.
    @Test(arguments: [["decode", LargeStream.annexB, "-o", "-", "--format", "y4m"], ["demux", movie, "-"], ["inspect", "--samples", LargeStream.annexB],
                      ["mux", movie, "-", "--format", "ts"], ["demux", transportStream, "-"], ["inspect", "--samples", transportStream]])
    func aClosedOutputPipeEndsTheRunWithAnError(arguments: [String]) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let fifo = work + "/out"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The reading end first, without waiting for a writer (posix_spawn holds this process
        // until the child has opened its end, which would otherwise wait for this one).
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        let process = try ChildProcess(try h264kitURL(), arguments, stdout: fifo)
        _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) & ~O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var taken = 0
        while taken < 16_384 {
            let n = read(reader, &buffer, buffer.count)
            if n <= 0 { break }
            taken += n
        }
        close(reader)
        let status = process.wait(seconds: 60)
        #expect(status == 1, "exit \(String(describing: status)) (141 is SIGPIPE's death): \(process.stderrText)")
        #expect(process.stderrText.contains("Broken pipe"), "\(process.stderrText)")
    }

    /// SIGINT while a command runs: it ends with 130 having finished what it wrote (a decode,
    /// mux, demux, split) or leaving nothing (a transcode, a join), or, if it was done by then,
    /// with 0 and its whole output. Never a signal's death, never a partial file.
    @Test(arguments: Interrupted.all) func sigintEndsCleanly(command: Interrupted) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let process = try ChildProcess(try h264kitURL(), command.arguments(work))
        // (From the tool's first instruction: CI saw a loaded machine still loading the tool when
        // a SIGINT sent after the delay alone came, which killed it as it kills any program.)
        process.waitUntilHandling(SIGINT)
        Thread.sleep(forTimeInterval: command.delay)
        kill(process.pid, SIGINT)
        let status = process.wait(seconds: 60)
        #expect(status == 0 || status == 130, "\(command): exit \(String(describing: status)): \(process.stderrText)")
        if status == 130 { #expect(process.stderrText.contains("interrupted"), "\(process.stderrText)") }
        #expect(Self.partialFiles(in: work).isEmpty, "\(command) left \(Self.partialFiles(in: work))")
        let output = work + "/" + command.output
        if status == 130 && !FileManager.default.fileExists(atPath: output) {
            // Interrupted before the first sample: nothing to finish, and nothing is left.
            #expect(command.leavesNothingWhenInterrupted || process.stderrText.contains("interrupted"))
        } else if command.leavesNothingWhenInterrupted && status == 130 {
            #expect(!FileManager.default.fileExists(atPath: output), "\(command): an interrupted run left \(command.output)")
        } else if command.output.hasSuffix(".mp4") || command.output.hasSuffix(".264") || command.output.hasSuffix(".ts") {
            let probe = try run("ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", output])
            #expect(probe.status == 0 && probe.stderrText.isEmpty && (Int(probe.stdoutText.split(separator: "\n").first ?? "") ?? 0) > 0,
                    "\(command): \(command.output) does not read whole: \(probe.stderrText)")
        } else if command.output.hasSuffix(".framemd5") {
            let hashes = framemd5Hashes(String(decoding: try readFile(output), as: UTF8.self))
            #expect(!hashes.isEmpty)
            // The frames written are the stream's first, in order: the piece's hashes, repeating.
            let piece = try Self.expectedHashes(LargeStream.framesPerPiece)
            #expect(hashes.enumerated().allSatisfy { $0.element == piece[$0.offset % piece.count] })
        } else if command.output.hasSuffix("segments") {
            let index = work + "/segments/index.json"
            #expect(FileManager.default.fileExists(atPath: index), "an interrupted split writes the index of its segments")
        }
    }

    /// A command interrupted, with the file it writes.
    struct Interrupted: Sendable, CustomTestStringConvertible {
        var name: String
        var base: [String]
        var output: String
        var leavesNothingWhenInterrupted = false
        var delay = 0.3

        func arguments(_ work: String) -> [String] { base.map { $0 == "OUT" ? work + "/" + output : $0 } }
        var testDescription: String { name }

        static let all: [Interrupted] = [
            Interrupted(name: "decode .264", base: ["decode", LargeStream.annexB, "-o", "OUT"], output: "x.framemd5"),
            Interrupted(name: "decode .mp4 to raw", base: ["decode", EarlyStopTests.movie, "-o", "OUT"], output: "x.yuv"),
            Interrupted(name: "mux", base: ["mux", LargeStream.annexB, "OUT"], output: "x.mp4", delay: 0.1),
            Interrupted(name: "demux", base: ["demux", EarlyStopTests.movie, "OUT"], output: "x.264", delay: 0.1),
            Interrupted(name: "inspect", base: ["inspect", "--samples", LargeStream.annexB], output: "none", delay: 0.1),
            Interrupted(name: "split", base: ["split", LargeStream.annexB, "OUT", "--segment-duration", "20"], output: "segments"),
            Interrupted(name: "transcode .264", base: ["transcode", LargeStream.annexB, "OUT", "--preset", "ultrafast"], output: "x.mp4", leavesNothingWhenInterrupted: true),
            Interrupted(name: "concat", base: ["concat", EarlyStopTests.movie, EarlyStopTests.movie, "OUT"], output: "x.mp4", leavesNothingWhenInterrupted: true, delay: 0.1),
            Interrupted(name: "mux .ts", base: ["mux", EarlyStopTests.transportStream, "OUT"], output: "x.mp4", delay: 0.1),
            Interrupted(name: "mux to .ts", base: ["mux", EarlyStopTests.movie, "OUT"], output: "x.ts", delay: 0.1),
            Interrupted(name: "demux .ts", base: ["demux", EarlyStopTests.transportStream, "OUT"], output: "x.264", delay: 0.1),
            Interrupted(name: "decode .ts", base: ["decode", EarlyStopTests.transportStream, "-o", "OUT"], output: "x.framemd5"),
            Interrupted(name: "inspect .ts", base: ["inspect", EarlyStopTests.transportStream], output: "none", delay: 0.1),
        ]
    }

    /// SIGINT while the input comes from a pipe (what a shell's Ctrl-C does to `cat | h264kit`
    /// too: the writer goes, the pipe ends): the mux finishes the movie with the samples read,
    /// from an Annex-B stream and from a transport stream.
    @Test(arguments: [0, 2]) func sigintWhileReadingAPipeFinishesTheMovie(input: Int) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let process = try ChildProcess(try h264kitURL(), ["mux", "-", work + "/piped.mp4"])
        let stream = try Data(contentsOf: URL(fileURLWithPath: Self.inputs[input]))
        process.write(stream.prefix(20 << 20))
        process.waitUntilHandling(SIGINT)
        kill(process.pid, SIGINT)
        Thread.sleep(forTimeInterval: 0.2)
        // The rest of the input: 1 MB more. Under load the SIGINT may be handled only after
        // the reader took all of it, so its end must not cut a picture that cannot be known
        // cut: an Annex-B stream ends at a piece's end (a cut NAL unit looks whole; ffmpeg's
        // reader keeps it too), while a transport stream ends mid-packet, which its reader
        // tells (the cut picture is left out).
        var end = (20 << 20) + (1 << 20)
        if input == 0 {
            let piece = try Data(contentsOf: URL(fileURLWithPath: LargeStream.piece)).count
            end = (end + piece - 1) / piece * piece
        }
        process.write(stream.prefix(end).dropFirst(20 << 20))
        process.closeInput()
        let status = process.wait(seconds: 60)
        #expect(status == 130, "\(process.stderrText)")
        let hashes = try ffmpegFrameHashes(work + "/piped.mp4")
        let piece = try Self.expectedHashes(LargeStream.framesPerPiece)
        #expect(hashes.count > LargeStream.framesPerPiece)
        #expect(Self.isDecodeOrderPrefix(hashes, of: piece), "the frames of the movie are the stream's first: \(hashes.suffix(8)) against \(piece)")
        #expect(Self.partialFiles(in: work).isEmpty)
    }

    /// Whether `hashes` (a movie's frames in presentation order) are what a prefix of the
    /// repeated `piece` in decoding order gives: the piece's frames in order, where only the
    /// last few may skip frames (the B-frames of the last group, not read when the stop came
    /// between their reference and them, as ffmpeg's `-c copy` stopped by `q` leaves them),
    /// at most `reorder` in all.
    static func isDecodeOrderPrefix(_ hashes: [String], of piece: [String], reorder: Int = 3) -> Bool {
        var position = -1  // in the repeated piece
        for (index, hash) in hashes.enumerated() {
            guard let found = (1...(reorder + 1)).first(where: { piece[(position + $0) % piece.count] == hash }) else { return false }
            position += found
            if position != index, index < hashes.count - reorder { return false }
        }
        return position - (hashes.count - 1) <= reorder
    }
}
