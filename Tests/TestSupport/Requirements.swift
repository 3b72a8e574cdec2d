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
    /// OpenSSL's command line, which makes the tests' self-signed certificates.
    case openssl
    /// curl, an HTTP/1.1 and HTTP/2 client (over TLS by ALPN, or h2c with prior knowledge).
    case curl
    /// nghttp2's load generator (nghttp2-client), HTTP/2 clients by the hundred.
    case h2load

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
///
/// Each timely test case also takes a shared turn (``RealTimeTurns``), which an ``AloneTrait``
/// test waits for every other to give back.
public struct TimelyTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // (A test applies the trait once a level: its suite's, its own. One turn a test; an
        // `.alone` test takes its own turn instead.)
        if RealTimeTurns.holdsTurn || test.traits.contains(where: { $0 is AloneTrait }) {
            try await withTaskExecutorPreference(TimelyExecutor.shared) { try await function() }
            return
        }
        try await RealTimeTurns.shared.holding(alone: false, function)
    }
}

/// Runs a test case with no other timely test case running in this process (it waits for
/// those running to end; those that come meanwhile wait for it): for a test that measures
/// latency under hundreds of clients, which the peers of three other real-time tests on two
/// cores turn into a measure of the machine (CI: 300 HLS followers at p95 5.2 s beside them,
/// 170 ms alone). The rest of the run, at a lower priority, goes on. Use it with `.timely`,
/// at the test (not the suite). In an `.exclusive` suite the alone test does not take the
/// exclusive turn (alone is more than exclusive; holding it while waiting to be alone would
/// deadlock with a test that holds its shared turn and waits for the exclusive one).
public struct AloneTrait: TestTrait, TestScoping {
    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await RealTimeTurns.shared.holding(alone: true, function)
    }
}

extension Trait where Self == AloneTrait {
    /// Runs each test case with no other timely test case beside it (see ``AloneTrait``).
    public static var alone: Self { AloneTrait() }
}

/// The timely test cases' turns: any number share, one runs alone; granted in order of
/// arrival (a test that wants to run alone is not starved by those that share).
public actor RealTimeTurns {
    /// The process's turns.
    public static let shared = RealTimeTurns()

    /// Whether the current task's test holds a turn already.
    @TaskLocal public static var holdsTurn = false

    private var sharing = 0
    private var isAlone = false

    /// Turns of their own (the timely tests use ``shared``).
    public init() {}
    private var waiting: [(alone: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    /// Waits for a turn: shared with the other timely tests, or `alone`.
    public func acquire(alone: Bool) async {
        if waiting.isEmpty && fits(alone) {
            take(alone)
            return
        }
        await withCheckedContinuation { waiting.append((alone, $0)) }
    }

    /// Gives a turn back; the next ones in order that fit start.
    public func release(alone: Bool) {
        if alone { isAlone = false } else { sharing -= 1 }
        while let next = waiting.first, fits(next.alone) {
            waiting.removeFirst()
            take(next.alone)
            next.continuation.resume()
        }
    }

    /// Runs a test case's `function` on the timely executor while holding a turn (shared, or
    /// `alone`), given back however it ends.
    public nonisolated func holding(alone: Bool, _ function: @Sendable () async throws -> Void) async throws {
        await acquire(alone: alone)
        do {
            try await Self.$holdsTurn.withValue(true) {
                try await withTaskExecutorPreference(TimelyExecutor.shared) { try await function() }
            }
        } catch {
            await release(alone: alone)
            throw error
        }
        await release(alone: alone)
    }

    private func fits(_ alone: Bool) -> Bool { alone ? !isAlone && sharing == 0 : !isAlone }
    private func take(_ alone: Bool) { if alone { isAlone = true } else { sharing += 1 } }
}

extension Trait where Self == TimelyTrait {
    /// Runs the tests on threads of their own (see ``TimelyTrait``).
    public static var timely: Self { TimelyTrait() }
}
