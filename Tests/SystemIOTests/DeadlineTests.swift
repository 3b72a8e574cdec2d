import Foundation
import Testing
import TestSupport

/// The tests' own bound on waiting (``withDeadline(seconds:_:_:)``): it must end a test even
/// when what it bounds does not answer cancellation (CI once ran out of time behind a test
/// whose body waited on a frozen browser). Timely: its figures are of the clock, and in the
/// other test process the cooperative pool is held by blocking work for minutes (CI here: a
/// body of `42` not run within 30 s).
@Suite("Test deadline", .timely)
struct DeadlineTests {
    @Test("a body that ignores cancellation: the deadline throws on time, without waiting for it")
    func deafBody() async throws {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(seconds: 0.5, "a deaf body") {
                // Blocks a thread of its own until released: cancellation does not reach it.
                try await offThePool { release.wait(); return 1 }
            }
        }
        let took = clock.now - start
        #expect(took >= .milliseconds(500) && took < .seconds(5), "the deadline threw after \(took)")
    }

    @Test("a body that ends first: its value, and its error")
    func bodyFirst() async throws {
        #expect(try await withDeadline(seconds: 30, "a quick body") { 42 } == 42)
        await #expect(throws: TestFailure.self) {
            try await withDeadline(seconds: 30, "a failing body") { () async throws -> Int in throw TestFailure("no") }
        }
    }

    @Test("cancelling the caller cancels the body")
    func cancelled() async throws {
        let outer = Task {
            try await withDeadline(seconds: 30, "a long body") { try await Task.sleep(for: .seconds(30)); return 1 }
        }
        try await Task.sleep(for: .milliseconds(100))
        outer.cancel()
        await #expect(throws: CancellationError.self) { try await outer.value }
    }
}
