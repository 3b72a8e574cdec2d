import Foundation
import SystemIO
import SystemPackage
import Synchronization
import Testing

/// The one syscall layer: files put in place whole or not at all, mappings, gathered writes,
/// the read-ahead thread and its teardown in any state, clocks, child processes.
@Suite("SystemIO")
struct SystemIOTests {
    static func temporaryPath(_ suffix: String = "") -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-systemio-\(UUID().uuidString)\(suffix)").path
    }

    @Test func anOutputFileAppearsWholeAtCommitAndNotAtAllOtherwise() throws {
        let path = Self.temporaryPath()
        defer { removeFile(path) }
        do {
            let file = try OutputFile(path: path)
            try file.write(Array("hello".utf8))
            #expect(!FileManager.default.fileExists(atPath: path), "visible before its commit")
            #expect(file.temporaryPath.map { FileManager.default.fileExists(atPath: $0) } == true)
            try file.commit()
        }
        #expect(String(decoding: try readWholeFile(path), as: UTF8.self) == "hello")
        let discarded = Self.temporaryPath()
        var temporary: String?
        do {
            let file = try OutputFile(path: discarded)
            temporary = file.temporaryPath
            try file.write(Array("gone".utf8))
        }  // let go without a commit
        #expect(!FileManager.default.fileExists(atPath: discarded))
        #expect(temporary.map { !FileManager.default.fileExists(atPath: $0) } == true, "the temporary file is removed")
        // A directory is refused with the operation, the path and errno.
        #expect { try OutputFile(path: FileManager.default.temporaryDirectory.path) } throws: {
            ($0 as? SystemError)?.errno == .isDirectory && ($0 as? SystemError)?.operation == .create
        }
    }

    @Test func aMissingFileIsASystemErrorNamingIt() throws {
        let path = Self.temporaryPath("-missing")
        #expect { try MappedFile(path: path) } throws: { error in
            guard let error = error as? SystemError else { return false }
            return error.errno == .noSuchFileOrDirectory && error.path == path && "\(error)".contains(path)
        }
        #expect(try FileStatus.of(path: path) == nil)
    }

    @Test func aMappingHoldsTheFilesBytes() throws {
        let path = Self.temporaryPath()
        defer { removeFile(path) }
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try MappedFile(path: path)
        #expect(file.count == bytes.count && Array(file.bytes) == bytes)
        file.advise(.populate, range: 0..<file.count)
        file.advise(.dontNeed, range: 0..<4096)
        #expect(Array(file.bytes.prefix(4096)) == Array(bytes.prefix(4096)), "pages dropped fault back in")
        let status = try FileStatus.of(path: path)
        #expect(status?.kind == .regular && status?.size == bytes.count)
        #expect(Array(try filePrefix(path, count: 10)) == Array(bytes.prefix(10)))
    }

    /// Pieces merged where contiguous, written a part at a time (the rest kept, in order),
    /// compacted to the start of their buffer.
    @Test func gatheredWritesKeepTheirOrder() throws {
        let path = Self.temporaryPath()
        defer { removeFile(path) }
        let descriptor = try FileDescriptor.creating(path)
        defer { descriptor.closeQuietly() }
        let first = Array(repeating: UInt8(1), count: 3000), second = Array(repeating: UInt8(2), count: 5000)
        let region = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 16)
        defer { region.deallocate() }
        region.initializeMemory(as: UInt8.self, repeating: 3)
        var writes = GatheredWrites()
        first.withUnsafeBytes { writes.append($0) }
        second.withUnsafeBytes { writes.append($0) }
        writes.append(UnsafeRawBufferPointer(rebasing: region[100..<200]))
        writes.append(UnsafeRawBufferPointer(rebasing: region[200..<300]))  // contiguous: merged
        #expect(writes.count == 8200)
        try first.withUnsafeBytes { _ in try second.withUnsafeBytes { _ in try writes.write(4000, to: descriptor, path: path) } }
        #expect(writes.count == 4200)
        #expect(writes.references(region))
        #expect(writes.compact(into: region) == 200, "the 200 bytes in the region moved to its start")
        try second.withUnsafeBytes { _ in try writes.write(writes.count, to: descriptor, path: path) }
        #expect(writes.isEmpty && !writes.references(region))
        let written = try readWholeFile(path)
        #expect(written == first + second + [UInt8](repeating: 3, count: 200))
    }

    /// The read-ahead thread in order, and let go in every state: before it starts, while it
    /// waits with every window filled (the state that trapped with dispatch semaphores), after
    /// its end.
    @Test func readAheadGivesItemsInOrderAndStopsInAnyState() async throws {
        let ahead = ReadAhead(count: 100, depth: 4, name: "test") { $0 * 2 }
        var got: [Int] = []
        while let item = ahead.next() { got.append(item) }
        #expect(got == (0..<100).map { $0 * 2 })
        #expect(ahead.next() == nil)

        for taken in [0, 1, 50] {
            let produced = Atomic<Int>(0)
            do {
                let reader = ReadAhead(count: 1000, depth: 4, name: "test") { index in
                    produced.add(1, ordering: .relaxed)
                    return index
                }
                for _ in 0..<taken { _ = reader.next() }
                // Wait until the helper has filled every slot it may and waits for room.
                for _ in 0..<2000 where produced.load(ordering: .relaxed) < taken + 4 { try await Task.sleep(for: .milliseconds(1)) }
                #expect(produced.load(ordering: .relaxed) == taken + 4, "the helper is \(produced.load(ordering: .relaxed) - taken) ahead")
            }  // let go: stopped and joined, no trap
            #expect(produced.load(ordering: .relaxed) <= taken + 5, "the helper stopped")
        }
        let cancelled = ReadAhead(count: 10, depth: 2, name: "test") { $0 }
        cancelled.cancel()
        cancelled.cancel()
        #expect(cancelled.next() == nil)
    }

    @Test func backgroundWorkRunsBesideTheCaller() {
        let work = BackgroundWork(name: "test") { (1...1000).reduce(0, +) }
        #expect(work.wait() == 500_500)
        #expect(work.wait() == nil, "taken once")
        _ = BackgroundWork(name: "test") { 1 }  // let go without a wait: joined
    }

    @Test func aConditionLockTimesOut() {
        let lock = ConditionLock()
        let start = MonotonicClock.nanoseconds
        let woken = lock.withLock { lock.wait(until: start + 20_000_000) }
        #expect(!woken && MonotonicClock.nanoseconds - start >= 20_000_000)
    }

    @Test func clocksMoveOn() {
        let before = MonotonicClock.nanoseconds
        #expect(MonotonicClock.nanoseconds >= before)
        // After 2024-01-01 and before 2200: a set wall clock.
        #expect(WallClock.seconds > 1_704_067_200 && WallClock.seconds < 7_258_118_400)
    }

    @Test func childProcessesReportTheirStatus() throws {
        let shell = try #require(ProcessEnvironment.executable(named: "sh"))
        #expect(try ChildProcess.run([shell, "-c", "exit 3"]) == 3)
        #expect(try ChildProcess.run([shell, "-c", "kill -TERM $$"]) == 128 + 15, "a signal's death as a shell reports it")
        // Stopped when asked: SIGTERM, and its status.
        var polls = 0
        let stopped = try ChildProcess.run([shell, "-c", "sleep 30"], stopping: { polls += 1; return polls > 2 })
        #expect(stopped == 128 + 15)
        #expect(throws: SystemError.self) { try ChildProcess.run(["/nonexistent/program"]) }
        #expect(ProcessEnvironment.executable(named: "no-such-program-\(UUID().uuidString)") == nil)
    }

    /// A child gets no descriptor of ours beyond 0-2, even one opened without O_CLOEXEC (as
    /// SwiftNIO accepts connections): else a connection we close stays open to its peer while
    /// the child lives (found in CI: an RTSP client never saw the server's idle close, and UDP
    /// ports stayed bound, while a test's nginx ran).
    @Test func childrenInheritNoDescriptors() throws {
        let shell = try #require(ProcessEnvironment.executable(named: "sh"))
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)  // no O_CLOEXEC
        defer { close(ends[0]); close(ends[1]) }
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-fds-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: listing) }
        #expect(try ChildProcess.run([shell, "-c", "exec ls -1 /proc/self/fd"], standardOutput: listing) == 0)
        let descriptors = Set(try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) })
        #expect(descriptors.isSuperset(of: [0, 1, 2]), "\(descriptors)")
        #expect(!descriptors.contains(ends[0]) && !descriptors.contains(ends[1]), "the child held our pipe: \(descriptors.sorted()), ours \(ends)")
    }

    @Test func aTemporaryDirectoryGoesWithItsFiles() throws {
        var path = ""
        do {
            let directory = try TemporaryDirectory(prefix: "h264kit-test")
            path = directory.path
            #expect(FileManager.default.createFile(atPath: path + "/a", contents: Data([1])))
            #expect(FileManager.default.fileExists(atPath: path + "/a"))
        }
        #expect(!path.isEmpty && !FileManager.default.fileExists(atPath: path))
    }
}
