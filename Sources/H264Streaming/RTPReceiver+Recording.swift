import H264Network
import MediaCore
public import SampleFlow

extension RTPReceiver {
    /// Receives into a file: a movie (MP4 or MOV) or an Annex-B stream (`"-"`: standard
    /// output, for `ffplay -`), parameter sets before every IDR, through SampleFlow's sink for
    /// `output`. The file is finished however receiving ends, and holds every whole access
    /// unit received; nothing is left at `output` when receiving fails before its end.
    public func record(to output: SampleOutput) async throws(StreamingError) -> Report {
        try await Self.record(to: output, from: "\(endpoint)") { (handle) async throws(StreamingError) in
            try await self.receive(soundRefusal: { output.refusal(of: $0) }, handle)
        }
    }

    /// What every recorder does: `receive` into the sink for `output`, finished at the end,
    /// cancelled on failure or when nothing whole arrived (from `origin`).
    static func record(to output: SampleOutput, from origin: String,
                       _ receive: ((SampleBuffer) throws -> Void) async throws(StreamingError) -> Report) async throws(StreamingError) -> Report {
        let sink: any SampleSink
        do { sink = try output.makeSink() } catch { throw .output(error) }
        let report: Report
        do { report = try await receive { sample in try sink.append(sample) } } catch {
            sink.cancel()
            // The sink's own failure is an output error, not the handler's.
            if case StreamingError.handler(let underlying) = error, let flow = underlying as? SampleFlowError { throw .output(flow) }
            throw error
        }
        guard report.samples > 0 else {
            sink.cancel()
            throw .nothingReceived("no whole access unit received from \(origin) (it ended: \(report.ending.rawValue)); nothing written")
        }
        do { _ = try sink.finish() } catch { throw .output(error) }
        return report
    }
}
