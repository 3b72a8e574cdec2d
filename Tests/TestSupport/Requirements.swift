public import Foundation
public import Testing

/// A program a test runs as its oracle or peer.
public enum Tool: String, Sendable, CaseIterable {
    case ffmpeg, ffprobe, x264, mediainfo, chromium
    case gstLaunch = "gst-launch-1.0"
    case python3
    /// Ray's command line (`pip install ray`), which starts a cluster.
    case ray
    /// util-linux `unshare`, which makes the namespaces network tests and Ray clusters run in.
    case unshare
    /// nginx, the caching reverse proxy (a CDN's edge) in front of the HLS origin.
    case nginx

    /// Whether the program is on the PATH (or, for daemons such as nginx, in /usr/sbin, which a
    /// user's PATH may lack).
    public var isInstalled: Bool { location != nil }

    /// Where the program is.
    public var location: URL? { which(rawValue) ?? which("/usr/sbin/" + rawValue) }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where `tools` are installed; elsewhere it is reported *skipped*, with
    /// the reason, never passed. CI installs every tool and fails on any skip.
    public static func requires(_ tools: Tool...) -> Self {
        let missing = tools.filter { !$0.isInstalled }.map(\.rawValue)
        return .enabled(if: missing.isEmpty, Comment(rawValue: "needs \(tools.map(\.rawValue).joined(separator: ", ")) on the PATH (missing: \(missing.joined(separator: ", ")))"))
    }

    /// Runs the test only when `H264KIT_CORPUS` names the shared corpus.
    public static var requiresCorpus: Self {
        .enabled(if: Corpus.directory != nil, "needs the shared corpus: set H264KIT_CORPUS to a directory with MANIFEST.tsv")
    }
}

/// Runs each test of a suite on threads of its own (``TimelyExecutor``), not on Swift's
/// cooperative pool. That pool has one thread a core and a parallel run fills it with blocking
/// work (the corpus, synchronous waits for child processes): a test whose timing matters (a
/// server, a stream at its pace, a client's timeouts) then waits behind them, measured in CI:
/// a server task not started for over a minute, a receiver's task resumed ten minutes late.
/// The test and its child tasks prefer the timely executor; an unstructured task it starts
/// names it too (`Task(executorPreference: TimelyExecutor.shared)`). Task-locals go with it
/// (the test being run, for `#expect`).
public struct TimelyTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(TimelyExecutor.shared) { try await function() }
    }
}

extension Trait where Self == TimelyTrait {
    /// Runs the tests on threads of their own (see ``TimelyTrait``).
    public static var timely: Self { TimelyTrait() }
}
