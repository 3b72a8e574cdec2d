import ISOBMFF
public import MPEGTS
public import MediaCore
import H264Bitstream

/// What an MPEG-2 transport stream holds: its packet layout, its programs and their streams
/// (types, PIDs, packet counts), its clock references, the damage found, and the summary of
/// the H.264 stream read. `h264kit inspect` prints it (as JSON with `--json`);
/// ``TransportStreamProbe`` makes it from a stream.
public struct TransportStreamSummary: Codable, Hashable, Sendable {
    /// One elementary stream of a program.
    public struct Stream: Codable, Hashable, Sendable {
        /// Its PID.
        public var pid: Int
        /// `stream_type`.
        public var streamType: Int
        /// The type's name ("H.264 (0x1b)").
        public var typeName: String
        /// Packets seen on its PID.
        public var packets: Int
        /// Whether it is the H.264 stream read.
        public var isRead: Bool
    }

    /// A stream read besides the H.264 one: an AAC stream frame by frame, another carried a
    /// PES packet per sample.
    public struct Track: Codable, Hashable, Sendable {
        /// Its PID.
        public var pid: Int
        /// "audio", "video", "subtitle" or "data".
        public var mediaType: String
        /// Its codec: an RFC 6381 string for AAC (`mp4a.40.2`), the codec's name otherwise.
        public var codec: String
        /// Samples per second, for audio.
        public var sampleRate: Int?
        /// Channels, for audio.
        public var channels: Int?
        /// Samples read (AAC frames, or PES packets).
        public var samples: Int
        /// When its first sample is presented, seconds on the reader's timeline (the first
        /// sample of any stream at 0).
        public var startSeconds: Double?
        /// From its first sample's presentation to its last one's end, seconds.
        public var durationSeconds: Double?
        /// Its ISO 639 language, when the PMT gives one.
        public var language: String?
        /// Samples with bytes of a damaged PES packet.
        public var damagedSamples: Int
        /// Frames left out (cut, of another configuration, before any timestamp), and damaged
        /// PES packets left out.
        public var samplesLeftOut: Int
    }

    /// Where a stream's samples lie, as a probe reads them.
    public struct TrackSpan: Sendable, Hashable {
        /// The earliest presentation time.
        public var first: MediaTime
        /// The latest presentation end.
        public var end: MediaTime
        /// Samples seen.
        public var count = 0

        /// A span starting at `first`.
        public init(first: MediaTime, end: MediaTime) {
            self.first = first
            self.end = end
        }

        /// Takes one more sample in.
        public mutating func add(_ sample: SampleBuffer) {
            if sample.presentationTime < first { first = sample.presentationTime }
            let sampleEnd = sample.presentationTime + sample.duration
            if sampleEnd > end { end = sampleEnd }
            count += 1
        }
    }

    /// One program, from its PMT.
    public struct Program: Codable, Hashable, Sendable {
        /// `program_number`.
        public var number: Int
        /// The PID of its PMT.
        public var programMapPID: Int
        /// The PID carrying its clock references.
        public var pcrPID: Int
        /// Its streams, in the PMT's order.
        public var streams: [Stream]
    }

    /// Always "mpegts".
    public var format = "mpegts"
    /// The input's size in bytes.
    public var bytes: Int
    /// The packet size: 188, 192 (M2TS) or 204.
    public var packetSize: Int
    /// Packets read.
    public var packets: Int
    /// Null packets among them.
    public var nullPackets: Int
    /// `transport_stream_id`, from the PAT.
    public var transportStreamID: Int?
    /// The programs whose PMTs arrived, in the PAT's order.
    public var programs: [Program]
    /// PIDs seen that no table names (with their packet counts).
    public var otherPIDs: [String: Int]
    /// Program clock references on the read program's PCR PID.
    public var clockReferences: Int
    /// The largest gap between them, in milliseconds.
    public var largestClockReferenceIntervalMilliseconds: Double?
    /// Continuity counter errors (packets lost).
    public var continuityErrors: Int
    /// Duplicate packets dropped.
    public var duplicatePackets: Int
    /// Packets with the transport error indicator.
    public var transportErrors: Int
    /// Times sync was lost.
    public var syncLosses: Int
    /// Damaged PES packets of the video.
    public var damagedPESPackets: Int
    /// Samples read from the video, with their time span.
    public var samples: Int
    /// The video's duration in seconds, first presentation to last end.
    public var durationSeconds: Double?
    /// What was wrong, as sentences.
    public var warnings: [String]
    /// The H.264 stream read: profile, size, counts.
    public var video: StreamSummary?
    /// The other streams read (AAC, carried), in the PMT's order.
    public var tracks: [Track] = []
    /// Every sample in decoding order, when listed.
    public var sampleList: [SampleRecord]?

    /// The summary of what `reader` read (to its end), with the samples' count and span.
    /// `spans` gives where each other stream's samples lay (by track ID), as a probe read them.
    public init(reader: TransportStreamReader, samples: Int, duration: MediaTime?, sampleList: [SampleRecord]? = nil, spans: [TrackID: TrackSpan] = [:]) {
        let demuxer = reader.transportStream
        let statistics = reader.statistics
        bytes = reader.bytesRead
        packetSize = reader.layout?.stride ?? 188
        packets = statistics.demuxer.packets
        nullPackets = statistics.demuxer.nullPackets
        transportStreamID = demuxer.programAssociation.map { Int($0.transportStreamID) }
        let pids = Dictionary(uniqueKeysWithValues: demuxer.pids.map { ($0.pid, $0) })
        var named = Set<UInt16>([TransportPacketHeader.programAssociationPID, TransportPacketHeader.nullPID])
        programs = (demuxer.programAssociation?.programs ?? []).compactMap { program in
            named.insert(program.programMapPID)
            guard let map = demuxer.programMaps[program.programNumber] else { return nil }
            return Program(number: Int(program.programNumber), programMapPID: Int(program.programMapPID), pcrPID: Int(map.pcrPID),
                           streams: map.streams.map { stream in
                               named.insert(stream.pid)
                               return Stream(pid: Int(stream.pid), streamType: Int(stream.streamType.rawValue), typeName: stream.streamType.description,
                                             packets: pids[stream.pid]?.packets ?? 0,
                                             isRead: demuxer.selected?.pid == stream.pid || spans[TrackID(rawValue: UInt32(stream.pid))] != nil)
                           })
        }
        otherPIDs = Dictionary(uniqueKeysWithValues: pids.values.filter { !named.contains($0.pid) }.map { ("0x" + String($0.pid, radix: 16), $0.packets) })
        clockReferences = statistics.clockReferences
        largestClockReferenceIntervalMilliseconds = statistics.largestClockReferenceInterval.map { ($0.seconds * 1000_000).rounded() / 1000 }
        continuityErrors = statistics.demuxer.continuityErrors
        duplicatePackets = statistics.demuxer.duplicatePackets
        transportErrors = statistics.demuxer.transportErrors
        syncLosses = statistics.syncLosses
        damagedPESPackets = statistics.demuxer.damagedPESPackets
        self.samples = samples
        durationSeconds = duration.map(\.seconds)
        warnings = reader.warnings
        video = reader.parser.nalUnitCount > 0 ? StreamSummary(parser: reader.parser, bytes: reader.elementaryStreamBytes) : nil
        self.sampleList = sampleList
        let counts = Dictionary(reader.streamStatistics.map { ($0.pid, $0) }, uniquingKeysWith: { first, _ in first })
        for track in reader.tracks where track.mediaType != .video || track.format.video == nil {
            let span = spans[track.id]
            let count = counts[UInt16(clamping: track.id.rawValue)]
            let audio = track.format.audio
            tracks.append(Track(pid: Int(track.id.rawValue), mediaType: "\(track.mediaType)", codec: audio?.codecString ?? track.format.codecName,
                                sampleRate: audio?.sampleRate, channels: audio?.channelCount, samples: span?.count ?? 0,
                                startSeconds: span.map(\.first.seconds), durationSeconds: span.map { ($0.end - $0.first).seconds }, language: track.language,
                                damagedSamples: count?.damagedSamples ?? 0, samplesLeftOut: (count?.samplesLeftOut ?? 0) + (count?.droppedPESPackets ?? 0)))
        }
    }

    /// The summary as text, for the stream called `name`.
    public func text(name: String) -> String {
        var lines = ["\(name): MPEG-2 transport stream, \(packetSize)-byte packets\(packetSize == 192 ? " (M2TS)" : ""), \(packets) packets, \(bytes) bytes"]
        func row(_ label: String, _ value: String) { lines.append("  " + label + String(repeating: " ", count: max(1, 14 - label.count)) + value) }
        for program in programs {
            row("program \(program.number)", "PMT PID \(hex(program.programMapPID)), PCR PID \(hex(program.pcrPID))")
            for stream in program.streams {
                lines.append(String(repeating: " ", count: 16) + "PID \(hex(stream.pid)): \(stream.typeName), \(stream.packets) packets" + (stream.isRead ? " (read)" : ""))
            }
        }
        if !otherPIDs.isEmpty { row("other PIDs", otherPIDs.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value) packets" }.joined(separator: ", ")) }
        if nullPackets > 0 { row("null packets", "\(nullPackets)") }
        if let largest = largestClockReferenceIntervalMilliseconds {
            row("PCR", "\(clockReferences) references, largest interval \(decimalText(largest, 1)) ms")
        } else {
            row("PCR", "\(clockReferences) references")
        }
        row("continuity", "\(continuityErrors) errors, \(duplicatePackets) duplicates, \(transportErrors) transport errors, sync lost \(syncLosses) times")
        row("video", "\(samples) samples" + (durationSeconds.map { ", \(decimalText($0, 3)) s" } ?? "") + (damagedPESPackets > 0 ? ", \(damagedPESPackets) damaged PES packets" : ""))
        if let video {
            // The H.264 stream's own summary, its first line replaced.
            lines += video.text(name: "").split(separator: "\n").dropFirst().map { "  " + $0 }
        }
        for track in tracks {
            var words = ["PID \(hex(track.pid))", track.codec]
            if let rate = track.sampleRate { words.append("\(rate) Hz") }
            if let channels = track.channels { words.append("\(channels) channel\(channels == 1 ? "" : "s")") }
            if let language = track.language { words.append("[\(language)]") }
            row(track.mediaType, words.joined(separator: " "))
            var counts = "\(track.samples) \(track.sampleRate != nil ? "frames" : "samples")"
            if let duration = track.durationSeconds { counts += ", \(decimalText(duration, 3)) s" }
            if let start = track.startSeconds { counts += ", starting at \(decimalText(start, 3)) s" }
            if track.damagedSamples > 0 { counts += ", \(track.damagedSamples) damaged" }
            if track.samplesLeftOut > 0 { counts += ", \(track.samplesLeftOut) left out" }
            lines.append(String(repeating: " ", count: 16) + counts)
        }
        return lines.joined(separator: "\n")
    }

    private func hex(_ value: Int) -> String { "0x" + String(value, radix: 16) }
}
