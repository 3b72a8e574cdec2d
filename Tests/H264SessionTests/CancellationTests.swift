import Foundation
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import SampleFlow
import TestSupport
import Synchronization
import Testing

/// Cancelling a job that reads a source, in each of its phases, is reported as cancelled and
/// leaves nothing behind, however late the cancellation lands. Each test cancels its own task
/// from the job's progress callback, at a chosen point, so nothing depends on timing.
extension TranscodeTests {
    /// Cancels the task running the caller (from a synchronous callback inside it).
    static func cancelCurrentTask() { withUnsafeCurrentTask { $0?.cancel() } }

    /// Where a chunked transcode is cancelled.
    enum ChunkedCancelPoint: String, CaseIterable, Sendable {
        case beforeItStarts, whileMeasuring, whileSplitting, whenChunksStart, afterTheFirstChunk, whileJoining
    }

    /// Runs `body` in a task (cancelled before it runs when `early`) and gives its result.
    static func inTask<T: Sendable>(cancelledBeforeStart early: Bool = false, _ body: @escaping @Sendable () throws -> T) async -> Result<T, any Error> {
        let task = Task {
            if early { cancelCurrentTask() }
            return Result { try body() }
        }
        return await task.value
    }

    /// What a job reported, kept across the task that runs it.
    final class Reports<Value: Sendable>: Sendable {
        private let values = Mutex<[Value]>([])
        func append(_ value: Value) { values.withLock { $0.append(value) } }
        var all: [Value] { values.withLock { $0 } }
    }

    static func files(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test(arguments: ChunkedCancelPoint.allCases)
    func aChunkedTranscodeCancelledInAnyPhaseIsCancelledAndLeavesNothing(at point: ChunkedCancelPoint) async throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        var options = Transcoder.Options(preset: "ultrafast")
        options.encoder.threads = 1
        // Three chunks one after another: the first done while the others wait.
        let chunked = ChunkedTranscoder(options: options, chunks: 3, parallelism: 1)
        let output = work + "/out.mp4"
        let phases = Reports<ChunkedTranscoder.Progress.Phase>()
        let result = await Self.inTask(cancelledBeforeStart: point == .beforeItStarts) {
            try chunked.run(path: source, into: output, workDirectory: pieces) { progress in
                phases.append(progress.phase)
                let due = switch point {
                case .beforeItStarts: false
                case .whileMeasuring: progress.phase == .measuring
                case .whileSplitting: progress.phase == .splitting(chunks: 1)
                case .whenChunksStart: progress.phase == .transcoding && progress.finishedChunks == 0
                case .afterTheFirstChunk: progress.phase == .transcoding && progress.finishedChunks == 1
                case .whileJoining: progress.phase == .joining
                }
                if due { Self.cancelCurrentTask() }
            }
        }
        guard case .failure(let error) = result, case .cancelled? = error as? SessionError else {
            Issue.record("\(point): expected .cancelled, got \(result)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: output), "\(point): no output")
        #expect(Self.files(in: pieces).isEmpty, "\(point): the chunk files are removed: \(Self.files(in: pieces))")
        let seen = phases.all
        switch point {
        case .beforeItStarts: #expect(seen.isEmpty, "nothing started: \(seen)")
        case .whileMeasuring: #expect(seen == [.measuring], "stopped in the measuring: \(seen)")
        case .whileSplitting: #expect(!seen.contains(.transcoding), "stopped in the split: \(seen)")
        case .whenChunksStart, .afterTheFirstChunk: #expect(!seen.contains(.joining), "stopped before the join: \(seen)")
        case .whileJoining: #expect(seen.last == .joining)
        }
    }

    /// Uncancelled, the phases come in order: measuring, the split chunk by chunk, each
    /// chunk's end, the join.
    @Test func aChunkedTranscodeReportsItsPhasesInOrder() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        var options = Transcoder.Options(preset: "ultrafast")
        options.encoder.threads = 1
        var seen: [ChunkedTranscoder.Progress] = []
        let summary = try ChunkedTranscoder(options: options, chunks: 3, parallelism: 1).run(path: source, into: work + "/out.mp4", workDirectory: pieces) {
            seen.append($0)
        }
        #expect(summary.chunks.count == 3)
        #expect(seen.map(\.phase) == [.measuring, .splitting(chunks: 0), .splitting(chunks: 1), .splitting(chunks: 2), .splitting(chunks: 3),
                                      .transcoding, .transcoding, .transcoding, .transcoding, .joining])
        #expect(seen.filter { $0.phase == .transcoding }.map(\.finishedChunks) == [0, 1, 2, 3])
    }

    @Test(arguments: [false, true])
    func aTranscodeCancelledBeforeOrDuringIsCancelledAndLeavesNothing(during: Bool) async throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 60)
        let output = work + "/out.mp4"
        let result = await Self.inTask(cancelledBeforeStart: !during) {
            try Transcoder(options: .init(preset: "ultrafast")).run(path: source, into: .movie(path: output, options: .init())) { progress in
                if progress.frames == 10 { Self.cancelCurrentTask() }
            }
        }
        guard case .failure(let error) = result, case .cancelled? = error as? SessionError else {
            Issue.record("expected .cancelled, got \(result)")
            return
        }
        #expect(Self.files(in: work) == ["source.mp4"], "nothing but the source: \(Self.files(in: work))")
    }

    /// A split keeps the segments written when cancelled (as `h264kit split` stopped by Ctrl-C
    /// does), or removes them when asked; cancelled before its first segment it is cancelled.
    @Test(arguments: [true, false])
    func aCancelledSplitKeepsOrRemovesItsSegmentsAsAsked(keeps: Bool) async throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 150)
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        var splitter = MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1))
        splitter.keepsSegmentsWhenCancelled = keeps
        let fixed = splitter
        let before = await Self.inTask(cancelledBeforeStart: true) { try fixed.split(path: source, into: pieces) }
        guard case .failure(let early) = before, case .cancelled? = early as? SampleFlowError else {
            Issue.record("cancelled before the first segment: expected .cancelled, got \(before)")
            return
        }
        #expect(Self.files(in: pieces).isEmpty)
        let during = await Self.inTask { try fixed.split(path: source, into: pieces) { segment in if segment == 1 { Self.cancelCurrentTask() } } }
        if keeps {
            let index = try during.get()
            #expect(index.segments.count == 3, "the two whole segments and the one being written when the cancel came")
            #expect(Self.files(in: pieces) == index.segments.map(\.file))
        } else {
            guard case .failure(let error) = during, case .cancelled? = error as? SampleFlowError else {
                Issue.record("expected .cancelled, got \(during)")
                return
            }
            #expect(Self.files(in: pieces).isEmpty, "\(Self.files(in: pieces))")
        }
    }

    @Test(arguments: [false, true])
    func aJoinCancelledBeforeOrDuringIsCancelledAndLeavesNothing(during: Bool) async throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: source, into: pieces)
        let inputs = index.segments.map { pieces + "/" + $0.file }
        let output = work + "/joined.mp4"
        let result = await Self.inTask(cancelledBeforeStart: !during) {
            try MovieConcatenator().concatenate(inputs, into: output) { joined in if joined == 1 { Self.cancelCurrentTask() } }
        }
        guard case .failure(let error) = result, case .cancelled? = error as? SampleFlowError else {
            Issue.record("expected .cancelled, got \(result)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(Self.files(in: work) == ["pieces", "source.mp4"])
    }
}
