public import Testing

/// Runs each test case while no other test case with this trait runs, across every suite and
/// test target of the run. For tests that judge real-time behaviour with a heavy peer (a
/// Chromium page playing at 1x, a minute of live HTTP pulled by three players): two of them
/// at once on the machine's two cores make each drop frames that neither drops alone (seen in
/// CI: four HLS pages played beside the display suite's page, each dropping frames).
///
/// The wait for the turn counts against a `.timeLimit`; a test with this trait keeps its own
/// deadlines inside instead.
public struct ExclusiveTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // An `.alone` test in an `.exclusive` suite runs with no other timely test beside it,
        // which is more than exclusive: holding the exclusive turn while it waits to be alone
        // would deadlock with a test that holds its shared turn and waits for the exclusive one
        // (CI here: the timely tests stopped, every one waiting).
        if test.traits.contains(where: { $0 is AloneTrait }) {
            try await function()
            return
        }
        await ExclusiveTurn.shared.acquire()
        do {
            try await function()
        } catch {
            await ExclusiveTurn.shared.release()
            throw error
        }
        await ExclusiveTurn.shared.release()
    }
}

extension Trait where Self == ExclusiveTrait {
    /// Runs each test case alone among the `.exclusive` ones (see ``ExclusiveTrait``).
    public static var exclusive: Self { ExclusiveTrait() }
}

/// The one turn the `.exclusive` test cases take in order of arrival.
actor ExclusiveTurn {
    static let shared = ExclusiveTurn()

    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !isTaken {
            isTaken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            isTaken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
