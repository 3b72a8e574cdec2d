public import Foundation

/// What a finished child process left.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// Finds a program on PATH.
public func which(_ program: String) -> URL? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return paths.map { URL(fileURLWithPath: "\($0)/\(program)") }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// Runs a program to completion, feeding `stdin`; stderr goes through a file so neither pipe
/// can fill up and stall the child.
public func runProcess(_ executable: URL, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let out = Pipe()
    let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-stderr-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errURL) }
    let err = try FileHandle(forWritingTo: errURL)
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try err.close()
    return ProcessResult(status: process.terminationStatus, stdout: output, stderr: try Data(contentsOf: errURL))
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
