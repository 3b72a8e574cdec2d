public import Foundation
import SystemIO

/// What a finished child process left.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// Finds a program on PATH (or a path to a program, as it is).
public func which(_ program: String) -> URL? {
    if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? URL(fileURLWithPath: program) : nil }
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return paths.map { URL(fileURLWithPath: "\($0)/\(program)") }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// Runs a program to completion, feeding `stdin`. Standard input, output and error go
/// through files, so no pipe can fill up and stall the child; posix_spawn rather than
/// Foundation's Process, whose `run()` leaks a weak reference (LeakSanitizer reports it under
/// scripts/sanitize.sh address).
public func runProcess(_ executable: URL, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inPath = directory.appendingPathComponent("stdin").path, outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    SystemIO.ChildProcess.closeInheritedDescriptors(&actions)
    var argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let started = SystemIO.ChildProcess.withSpawnAttributes { posix_spawn(&pid, executable.path, &actions, &$0, &argv, environ) }
    guard started == 0 else { throw TestFailure("\(executable.path): cannot start (error \(started))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 { guard errno == EINTR else { throw TestFailure("waitpid failed") } }
    // WIFEXITED / WEXITSTATUS, which Swift does not import; a signal shows as 128 + its number.
    let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return ProcessResult(status: code, stdout: try readFile(outPath), stderr: try readFile(errPath))
}

/// A file's bytes, through a handle (Data(contentsOf:) and String(contentsOfFile:) of an empty
/// file, or of a /proc file, which says it is empty, leak their buffer in this FoundationEssentials).
public func readFile(_ path: String) throws -> Data {
    let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    return try handle.readToEnd() ?? Data()
}

/// The committed fixtures and the sample media, found from this file's place in the checkout.
public enum Checkout {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    public static let fixtures = root.appendingPathComponent("Tests/Fixtures")

    public static func fixture(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    /// Writes bytes to a new temporary file and returns its path.
    public static func temporaryFile(_ bytes: [UInt8], suffix: String = ".264") throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-\(UUID().uuidString)\(suffix)")
        try Data(bytes).write(to: url)
        return url.path
    }
}

/// Runs a program found on PATH. A program that is not installed is an error: a test that
/// runs one declares it with ``Testing/Trait/requires(_:)`` and is skipped, never passed, where
/// it is missing.
public func run(_ program: String, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    guard let executable = which(program) else { throw TestFailure("\(program) is not installed (the test should declare .requires(...))") }
    return try runProcess(executable, arguments, stdin: stdin)
}

/// Encodes a test pattern with the x264 CLI (through ffmpeg's lavfi source piped as y4m).
public func x264Stream(frames: Int, size: String = "176x144", sourcePixelFormat: String = "yuv420p", arguments: [String]) throws -> [UInt8] {
    let source = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-frames:v", "\(frames)",
                                    "-pix_fmt", sourcePixelFormat, "-strict", "-1", "-f", "yuv4mpegpipe", "-"])
    guard source.status == 0 else { throw TestFailure("ffmpeg failed: \(source.stderrText)") }
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-test-\(UUID().uuidString).264")
    defer { try? FileManager.default.removeItem(at: output) }
    let encoded = try run("x264", ["--quiet", "--demuxer", "y4m", "-o", output.path] + arguments + ["-"], stdin: source.stdout)
    guard encoded.status == 0 else { throw TestFailure("x264 failed: \(encoded.stderrText)") }
    return [UInt8](try Data(contentsOf: output))
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}


/// The frame hashes ffmpeg decodes from a file (the last field of each `-f framemd5` line).
public func ffmpegFrameHashes(_ path: String, format: String? = nil, extra: [String] = []) throws -> [String] {
    var arguments = ["-v", "error", "-threads", "1"]
    if let format { arguments += ["-f", format] }
    arguments += ["-i", path] + extra + ["-map", "0:v:0", "-f", "framemd5", "-"]
    let result = try run("ffmpeg", arguments)
    return result.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
        .compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
}

/// A child process a test drives while it runs: its standard input is a pipe the test
/// writes, its output goes to `stdout` (a path: /dev/null, /dev/full, a file) and its errors to
/// a file read at the end. posix_spawn, as ``runProcess(_:_:stdin:)``.
public final class ChildProcess: @unchecked Sendable {  // (driven by one thread at a time)
    public let pid: pid_t
    private let input: Int32
    private let errorPath: String
    private let directory: URL
    private var waited: Int32?

    /// Starts `executable`; `environment` adds to (or replaces variables of) this process's.
    public init(_ executable: URL, _ arguments: [String], stdout: String = "/dev/null", environment: [String: String] = [:]) throws {
        // A child that stops reading its input (it was interrupted, it failed) makes a write
        // to it fail with EPIPE, not end the test process.
        signal(SIGPIPE, SIG_IGN)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        errorPath = directory.appendingPathComponent("stderr").path
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw TestFailure("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        SystemIO.ChildProcess.closeInheritedDescriptors(&actions)
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        let started = SystemIO.ChildProcess.withSpawnAttributes { posix_spawn(&pid, executable.path, &actions, &$0, &argv, &envp) }
        close(pipeEnds[0])
        guard started == 0 else {
            close(pipeEnds[1])
            throw TestFailure("\(executable.path): cannot start (error \(started))")
        }
        self.pid = pid
        input = pipeEnds[1]
    }

    deinit {
        closeInput()
        if waited == nil { kill(pid, SIGKILL); _ = wait() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes `data` to the child's standard input (all of it, or until the child stops reading).
    public func write(_ data: Data) {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(input, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    private var inputClosed = false
    /// Ends the child's standard input.
    public func closeInput() {
        guard !inputClosed else { return }
        inputClosed = true
        close(input)
    }

    /// Waits (at most `seconds`) until the child handles `signal` (`SigCgt` in /proc/PID/status)
    /// or has ended; whether it handles it. A signal sent before a program has installed its
    /// handler (while it is still being loaded: seconds on a loaded machine) has its default
    /// action, death, in any program: a test of what a program does at a signal waits for this.
    @discardableResult public func waitUntilHandling(_ signal: Int32, seconds: Double = 60) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while waited == nil {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
            let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }, uniquingKeysWith: { a, _ in a })
            if fields["State"]?.hasPrefix("Z") == true { return false }  // ended, not yet waited for
            if let mask = fields["SigCgt"].flatMap({ UInt64($0, radix: 16) }), mask & (1 << UInt64(signal - 1)) != 0 { return true }
            if ContinuousClock.now > deadline { return false }
            usleep(2_000)
        }
        return false
    }

    /// Waits for the child to end: its exit status, or 128 + the signal that ended it. A child
    /// still running after `limit` seconds (300) is killed, and its ``stderrText`` says so: a
    /// test never waits forever on a peer or a command that does not end (its expectation of
    /// the status then fails, naming why).
    @discardableResult public func wait(limit: Double = 300) -> Int32 {
        if let waited { return waited }
        if let status = wait(seconds: limit) { return status }
        killedAfter = limit
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        waited = code
        return code
    }

    /// Waits up to `seconds` for the child to end: its status as ``wait()`` gives it, or nil
    /// when it is still running then.
    public func wait(seconds: Double) -> Int32? {
        if let waited { return waited }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            var status: Int32 = 0
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid {
                let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
                waited = code
                return code
            }
            if ended < 0 && errno != EINTR { return nil }
            if ContinuousClock.now >= deadline { return nil }
            usleep(10_000)
        }
    }

    /// Waits (at most `seconds` of the wall clock) until `condition` holds, such as its port
    /// bound; throws, with what the child wrote to standard error, when the child ends first or
    /// the time runs out (`what` names the wait).
    public func waitUntil(_ what: String, seconds: Double = 60, _ condition: () -> Bool) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition() {
            if let status = wait(seconds: 0) { throw TestFailure("the child ended (status \(status)) before \(what): \(stderrText)") }
            if ContinuousClock.now >= deadline { throw TestFailure("no \(what) within \(seconds) s: \(stderrText)") }
            usleep(10_000)
        }
    }

    /// What the child wrote to standard error (complete once it has ended), after a note when
    /// ``wait(limit:)`` killed it.
    public var stderrText: String {
        let text = String(decoding: (try? readFile(errorPath)) ?? Data(), as: UTF8.self)
        return killedAfter.map { "[killed by the test: still running after \($0) s] " + text } ?? text
    }
    private var killedAfter: Double?
}

/// The frame hashes of `-f framemd5` output (the last field of each line that is not a comment).
public func framemd5Hashes(_ text: String) -> [String] {
    text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
}

/// Each frame's presentation time in seconds from the first, to the millisecond, as ffprobe reads it.
public func ffprobePresentationTimes(_ path: String) throws -> [Double] {
    let times = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path])
        .stdoutText.split(separator: "\n").compactMap { Double($0.split(separator: ",").first ?? "") }
    return times.map { (($0 - (times.first ?? 0)) * 1000).rounded() / 1000 }
}

/// The pictures (of `pictureSize` bytes each) at which two raw videos differ, and the picture
/// counts when the lengths differ: what a test reports instead of comparing megabytes with
/// `==` in an expectation (whose failure makes Swift Testing diff the two arrays element by
/// element, which under a sanitizer ran for over fifteen minutes).
public func differingPictures(_ decoded: [UInt8], _ source: [UInt8], pictureSize: Int) -> String? {
    let count = min(decoded.count, source.count) / pictureSize
    let differing = (0..<count).filter { decoded[$0 * pictureSize..<($0 + 1) * pictureSize] != source[$0 * pictureSize..<($0 + 1) * pictureSize] }
    guard differing.isEmpty, decoded.count == source.count else {
        return "\(decoded.count / pictureSize) pictures of \(source.count / pictureSize); of the first \(count), these differ: \(differing.prefix(20))"
    }
    return nil
}

/// Waits until the file at `path` holds at least `bytes` bytes (a peer's decoded pictures, say)
/// or `seconds` have passed; its size then. A peer that must be told to stop (GStreamer with
/// SIGINT) is told once it has what it will get, not after a fixed time that a loaded machine
/// or a first start (GStreamer builds its plugin registry) can overrun.
public func waitUntilFileHolds(_ path: String, bytes: Int, seconds: Double) async -> Int {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
    while size() < bytes, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
    return size()
}
