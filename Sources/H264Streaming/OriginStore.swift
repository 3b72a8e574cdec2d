import CompressNIO
import H264Bitstream
import H264Network
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MediaCore
import NIOCore
import SampleFlow
import SystemIO

/// The origin's files and playlists, shared by the publishers and every request: one lock,
/// updated once per part or segment; a request copies out a reference to the bytes, never the
/// bytes. Which request is held, for what and until when is `HLSRequestHolding`'s decision
/// (the request logic as a pure state machine); this is its shell: held requests wait on
/// continuations, resumed by the publish that brings what they wait for or by the sweep that
/// gives up on them.
final class OriginStore: Sendable {
    struct File {
        var bytes: ByteBuffer
        var contentType: String
        var cacheControl: String
        /// The bytes gzip-compressed (playlists), sent to a client that accepts it.
        var gzipped: ByteBuffer?
    }

    /// The paths of a rendition's files.
    struct RenditionPaths {
        var media: String
        var iFrames: String
        var initialization: String
        /// Segments and parts: this, then `-00012.m4s` or `-part00034.m4s`.
        var prefix: String

        init(base: String, rendition: String) {
            prefix = base + "-" + rendition
            media = prefix + ".m3u8"
            iFrames = prefix + "-iframes.m3u8"
            initialization = prefix + "-init.mp4"
        }
    }

    /// A rendition's window and what goes with it.
    struct Rendition {
        var paths: RenditionPaths
        var window: HLSLiveWindow
        /// The media playlist's delta update (low latency).
        var delta: File?
        /// The parts' paths of each segment in memory, by media sequence number.
        var partPaths: [Int: [String]] = [:]
        /// Parts published so far: the next part's number.
        var partCount = 0
        var streamStart: Double?
        var format: FormatDescription?
        var timescale: Int32?
        var publishing = false
        /// For a rendition of sound (fragmented MP4): its track and language, listed as an
        /// alternative rendition in the group every variant plays.
        var sound: (id: TrackID, language: String?)?
        /// For a rendition of a picture whose transport stream segments carry sound muxed
        /// beside it: that sound (its codec in the variant's CODECS).
        var muxedSound: AudioFormatDescription?
    }

    struct State: HLSRequestContext {
        /// The directory the files are in, with its trailing slash.
        let directory: String
        var files: [String: File] = [:]
        /// The renditions, in the order they were first published.
        var renditions: [String: Rendition] = [:]
        var order: [String] = []
        /// Media playlist paths to renditions.
        var mediaPaths: [String: String] = [:]
        /// Segments (and their parts) gone from a playlist, with when to drop them (seconds on
        /// the wall clock).
        var leaving: [(paths: [String], at: Double)] = []
        var statistics = HLSOrigin.Statistics()
        /// Which requests are held, for what, until when.
        var holding = HLSRequestHolding()
        /// The held requests' continuations, by their ID in ``holding``.
        var waiting: [HLSRequestHolding.ID: CheckedContinuation<Bool, Never>] = [:]

        func rendition(mediaPlaylist path: String) -> String? { mediaPaths[path] }
        func window(_ rendition: String) -> HLSLiveWindow? { renditions[rendition]?.window }
        func hasFile(_ path: String) -> Bool { files[path] != nil }
        func rendition(hinting path: String) -> String? {
            order.first { name in renditions[name]?.window.preloadHint.map { directory + $0 } == path }
        }
    }

    let options: HLSOrigin.Options
    let paths: (multivariant: String, base: String, dash: String)
    /// The directory the files are in, with its trailing slash.
    let directory: String
    private let state: Locked<State>

    init(options: HLSOrigin.Options) {
        self.options = options
        let base = String(options.path.dropLast(".m3u8".count))
        paths = (options.path, base, base + ".mpd")
        directory = String(options.path[...(options.path.lastIndex(of: "/") ?? options.path.startIndex)])
        state = Locked(State(directory: directory))
    }

    /// The last path component.
    static func name(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    var statistics: HLSOrigin.Statistics { state.withLock { $0.statistics } }

    static func padded(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// The path of a segment of the rendition.
    func segmentPath(_ rendition: Rendition, _ index: Int, _ format: MediaSegmenter.Format) -> String {
        rendition.paths.prefix + "-" + Self.padded(index) + "." + format.fileExtension
    }

    /// The path of part `number` of the rendition (counted over the stream, so the next one's
    /// name is known before it is known which segment it starts or continues).
    func partPath(_ rendition: Rendition, _ number: Int) -> String {
        rendition.paths.prefix + "-part" + Self.padded(number) + ".m4s"
    }

    /// A rendition starts publishing (false: it is already); `sound` for a rendition of sound,
    /// `muxedSound` for a picture with sound in its segments.
    func beginPublishing(_ name: String, sound: (id: TrackID, language: String?)? = nil) -> Bool {
        state.withLock { state in
            if state.renditions[name] == nil {
                let renditionPaths = RenditionPaths(base: paths.base, rendition: name)
                var window = HLSLiveWindow(size: options.effectiveWindowSize, targetDuration: options.targetDuration,
                                           map: options.segmenter.format == .fragmentedMP4 ? Self.name(renditionPaths.initialization) : nil)
                window.partTarget = options.lowLatency?.partDuration.seconds
                window.serverControl = options.serverControl
                var rendition = Rendition(paths: renditionPaths, window: window)
                if options.lowLatency != nil { rendition.window.preloadHint = Self.name(partPath(rendition, 0)) }
                state.renditions[name] = rendition
                state.order.append(name)
                state.mediaPaths[renditionPaths.media] = name
            }
            guard let rendition = state.renditions[name], !rendition.publishing, !rendition.window.ended else { return false }
            state.renditions[name]?.publishing = true
            state.renditions[name]?.sound = sound
            return true
        }
    }

    /// The sound muxed in a rendition's transport stream segments (its codec goes in CODECS).
    func noteMuxedSound(_ name: String, format: AudioFormatDescription) {
        state.withLock { $0.renditions[name]?.muxedSound = format }
    }

    /// Counts samples a publisher was given and did not publish.
    func countLeftOut(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.statistics.samplesLeftOut += count }
    }

    /// A rendition's publisher is done.
    func endPublishing(_ name: String) {
        state.withLock { $0.renditions[name]?.publishing = false }
    }

    /// Takes what the first part or segment tells of the stream.
    private func noteStream(_ state: inout State, _ name: String, initialization: [UInt8]?, format: FormatDescription?, timescale: Int32?, startedAt: Double) {
        guard var rendition = state.renditions[name] else { return }
        if rendition.streamStart == nil { rendition.streamStart = startedAt }
        if rendition.format == nil { rendition.format = format }
        if rendition.timescale == nil { rendition.timescale = timescale }
        if let initialization, state.files[rendition.paths.initialization] == nil {
            state.files[rendition.paths.initialization] = File(bytes: ByteBuffer(bytes: initialization), contentType: "video/mp4", cacheControl: "public, max-age=86400")
        }
        state.renditions[name] = rendition
    }

    /// Puts a whole part in memory and in the playlist, at once (low latency).
    func publishPart(_ bytes: ByteBuffer, rendition name: String, segment: Int, report: MediaSegmenter.FragmentReport, initialization: [UInt8]?,
                     format: FormatDescription?, timescale: Int32?, startedAt: Double) {
        let now = WallClock.seconds
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            noteStream(&state, name, initialization: initialization, format: format, timescale: timescale, startedAt: startedAt)
            guard var rendition = state.renditions[name] else { return [] }
            let path = partPath(rendition, rendition.partCount)
            rendition.partCount += 1
            state.files[path] = File(bytes: bytes, contentType: MediaSegmenter.Format.fragmentedMP4.contentType, cacheControl: "public, max-age=86400, immutable")
            rendition.partPaths[segment, default: []].append(path)
            rendition.window.appendPart(HLSPartialSegment(uri: Self.name(path), duration: report.duration.seconds, independent: report.startsWithSyncSample),
                                        programDateTime: startedAt)
            rendition.window.preloadHint = Self.name(partPath(rendition, rendition.partCount))
            state.renditions[name] = rendition
            state.statistics.partsPublished += 1
            render(&state, changed: name, now: now)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Puts a whole segment in memory and in the playlists, at once.
    func publish(_ bytes: ByteBuffer, rendition name: String, report: MediaSegmenter.SegmentReport, initialization: [UInt8]?, format: FormatDescription?,
                 timescale: Int32?, startedAt: Double) {
        let now = WallClock.seconds
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            noteStream(&state, name, initialization: initialization, format: format, timescale: timescale, startedAt: startedAt)
            guard var rendition = state.renditions[name] else { return [] }
            let path = segmentPath(rendition, report.index, report.format)
            let entry = HLSLiveWindow.Entry(
                sequence: report.index, uri: Self.name(path), duration: report.duration.seconds, programDateTime: startedAt, independent: report.isIndependent,
                byteCount: report.byteCount,
                iFrames: rendition.sound != nil ? [] : report.syncSamples.map { .init(duration: $0.duration.seconds, byteRange: $0.byteRange) },
                timeline: timescale.map { (report.earliestPresentationTime.converted(toTimescale: $0).value, report.duration.converted(toTimescale: $0).value) })
            state.files[path] = File(bytes: bytes, contentType: report.format.contentType, cacheControl: "public, max-age=86400, immutable")
            state.statistics.segmentsPublished += 1
            let removed = rendition.window.append(entry)
            let grace = Double(2 * rendition.window.targetDuration)
            for gone in removed {
                state.leaving.append(([directory + gone.uri] + (rendition.partPaths.removeValue(forKey: gone.sequence) ?? []), now + grace))
            }
            state.renditions[name] = rendition
            state.statistics.segmentsOverTarget = state.renditions.values.map(\.window.segmentsOverTarget).reduce(0, +)
            while let first = state.leaving.first, first.at <= now {
                for path in first.paths { state.files[path] = nil }
                state.leaving.removeFirst()
                state.statistics.segmentsDropped += 1
            }
            render(&state, changed: name, now: now)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// A rendition's stream ended: its playlists say so, and every request held for it is
    /// answered.
    func end(_ name: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.renditions[name]?.window.end()
            render(&state, changed: name, now: WallClock.seconds)
            return takeReady(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// The held requests whose condition now holds, taken out.
    private func takeReady(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        guard !state.waiting.isEmpty else { return [] }
        return state.holding.release(in: state).compactMap { state.waiting.removeValue(forKey: $0) }
    }

    /// Answers the held requests past their deadline (false: given up).
    func expireHeldRequests(now: Double) {
        let expired = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.waiting.isEmpty else { return [] }
            let expired = state.holding.expire(now: now).compactMap { state.waiting.removeValue(forKey: $0) }
            state.statistics.heldRequestsTimedOut += expired.count
            return expired
        }
        for continuation in expired { continuation.resume(returning: false) }
    }

    /// Waits until `condition` holds (true) or three target durations pass (false; at once when
    /// the holding is full).
    private func wait(for condition: HLSRequestHolding.Condition) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                if HLSRequestHolding.holds(condition, in: state) { return true }
                let target = state.renditions[condition.rendition]?.window.targetDuration ?? options.targetDuration
                guard let id = state.holding.hold(condition, now: WallClock.seconds, targetDuration: target) else {
                    state.statistics.heldRequestsRefused += 1
                    return false
                }
                state.waiting[id] = continuation
                state.statistics.requestsHeld += 1
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// A playlist file: its text, and the text gzip-compressed.
    private static func playlistFile(_ text: String, contentType: String = "application/vnd.apple.mpegurl", cacheControl: String) -> File {
        var bytes = ByteBuffer(string: text)
        var copy = bytes
        let gzipped = try? copy.compress(with: .gzip())
        bytes.moveReaderIndex(to: 0)
        return File(bytes: bytes, contentType: contentType, cacheControl: cacheControl, gzipped: gzipped)
    }

    /// Renders the playlists of the rendition that changed (and, for low latency, the others'
    /// media playlists, whose rendition reports name it), the multivariant playlist and the MPD.
    private func render(_ state: inout State, changed: String, now: Double) {
        // A playlist changes with each part (low latency) or segment: a cache keeps it a second
        // at most; a blocking reload's answer is the playlist once that part is there, which a
        // later version only extends (it is sent with a longer life, in respond).
        let playlist = "public, max-age=1"
        let lowLatency = options.lowLatency != nil
        for name in state.order where name == changed || (lowLatency && state.order.count > 1) {
            guard var rendition = state.renditions[name] else { continue }
            let reports: [HLSRenditionReport] = lowLatency ? state.order.filter { $0 != name }.compactMap { other in
                guard let last = state.renditions[other]?.window.lastPart, let paths = state.renditions[other]?.paths else { return nil }
                return HLSRenditionReport(uri: Self.name(paths.media), lastMediaSequence: last.mediaSequence, lastPart: last.part)
            } : []
            var media = rendition.window.mediaPlaylist
            media.renditionReports = reports
            state.files[rendition.paths.media] = Self.playlistFile(media.rendered, cacheControl: playlist)
            if lowLatency {
                var delta = rendition.window.deltaPlaylist
                delta.renditionReports = reports
                rendition.delta = Self.playlistFile(delta.rendered, cacheControl: playlist)
            }
            if name == changed, rendition.sound == nil {
                state.files[rendition.paths.iFrames] = Self.playlistFile(rendition.window.iFramePlaylist.rendered, cacheControl: playlist)
            }
            state.renditions[name] = rendition
        }
        // The sound renditions (fragmented MP4), each an alternative in the group `audio` that
        // every variant plays; the multivariant playlist waits until each has a segment (a
        // player reads it once: a group listed later would never be heard).
        var alternatives: [HLSMultivariantPlaylist.AlternativeRendition] = []
        var soundCodecs: [String] = []
        var soundRates = (peak: 0, average: 0)
        // (In the order of their tracks, whichever frame came first: the first the default.)
        for name in Self.inTrackOrder(state.order.filter { state.renditions[$0]?.sound != nil }) {
            guard let rendition = state.renditions[name], let track = rendition.sound else { continue }
            guard let format = rendition.format?.audio, !rendition.window.entries.isEmpty else { return }
            alternatives.append(.init(soundOf: track.id, language: track.language, format: format, uri: Self.name(rendition.paths.media), isDefault: alternatives.isEmpty))
            if !soundCodecs.contains(format.codecString) { soundCodecs.append(format.codecString) }
            let rates = rendition.window.bitRates
            soundRates = (max(soundRates.peak, rates.peak), max(soundRates.average, rates.average))
        }
        var variants: [HLSMultivariantPlaylist.Variant] = []
        var iFrameVariants: [HLSMultivariantPlaylist.Variant] = []
        var independent = true
        for name in state.order {
            guard let rendition = state.renditions[name], let format = rendition.format?.video, !rendition.window.entries.isEmpty else { continue }
            let rates = rendition.window.bitRates
            let size = (width: format.width, height: format.height)
            var variant = HLSMultivariantPlaylist.Variant(picture: format, uri: Self.name(rendition.paths.media), peakBandwidth: rates.peak,
                                                          averageBandwidth: rates.average, frameRate: format.sps.frameRate?.framesPerSecond,
                                                          muxedSound: rendition.muxedSound)
            if let group = alternatives.first {
                variant.plays(.init(id: group.groupID, codecs: soundCodecs, peakBandwidth: soundRates.peak, averageBandwidth: soundRates.average))
            }
            variants.append(variant)
            // Low latency: no I-frame variant (its playlist has no parts and no server control,
            // which every media playlist beside low-latency ones must have, RFC 8216bis §6.2.4).
            if !lowLatency {
                let iFrameRate = rendition.window.entries.flatMap { entry in entry.iFrames.map { Int(Double($0.byteRange.count * 8) / max($0.duration, 0.001)) } }.max() ?? 1
                iFrameVariants.append(.init(uri: Self.name(rendition.paths.iFrames), bandwidth: max(1, iFrameRate), codecs: [format.codecString], resolution: size))
            }
            independent = independent && rendition.window.allIndependent
        }
        guard !variants.isEmpty else { return }
        let text = HLSMultivariantPlaylist(variants: variants, iFrameVariants: iFrameVariants, independentSegments: independent, alternativeRenditions: alternatives).rendered
        if state.files[paths.multivariant].map({ String(buffer: $0.bytes) }) != text {
            state.files[paths.multivariant] = Self.playlistFile(text, cacheControl: playlist)
        }
        // The MPD: the first picture's rendition (the others' segments need not align with it)
        // and its sounds' (an adaptation set each, the first the main one).
        guard options.servesDASH, let first = state.order.first(where: { state.renditions[$0]?.sound == nil }), let rendition = state.renditions[first],
              let format = rendition.format?.video, let timescale = rendition.timescale, let start = rendition.streamStart, !rendition.window.entries.isEmpty else { return }
        let rate = format.sps.frameRate
        let representation = DASHManifest.Representation(
            id: first, codecs: format.codecString, width: format.width, height: format.height, frameRate: rate.map { "\($0.numerator)/\($0.denominator)" },
            bandwidth: rendition.window.bitRates.peak, timescale: Int(timescale), initialization: Self.name(rendition.paths.initialization),
            media: Self.name(rendition.paths.prefix) + "-$Number%05d$." + options.segmenter.format.fileExtension,
            startNumber: rendition.window.mediaSequence, segments: rendition.window.entries.compactMap(\.timeline))
        var sounds: [DASHManifest.AudioRepresentation] = []
        let soundPrefix = HLSOrigin.soundRendition(of: first)
        let soundNames = Self.inTrackOrder(state.order.filter { name in
            state.renditions[name]?.sound != nil && name.hasPrefix(soundPrefix) && name.dropFirst(soundPrefix.count).allSatisfy(\.isNumber)
        })
        for name in soundNames {
            guard let sound = state.renditions[name], let track = sound.sound, let audio = sound.format?.audio, let soundScale = sound.timescale,
                  !sound.window.entries.isEmpty else { continue }
            sounds.append(DASHManifest.AudioRepresentation(
                id: name, codecs: audio.codecString, language: LanguageTag(track.language)?.tag, sampleRate: audio.sampleRate, channelCount: audio.channelCount,
                bandwidth: sound.window.bitRates.peak, timescale: Int(soundScale), initialization: Self.name(sound.paths.initialization),
                media: Self.name(sound.paths.prefix) + "-$Number%05d$.m4s", startNumber: sound.window.mediaSequence, segments: sound.window.entries.compactMap(\.timeline)))
        }
        let segmentSeconds = options.segmenter.segmentDuration.seconds
        let seconds = rendition.window.entries.map(\.duration).reduce(0, +)
        let kind: DASHManifest.Kind = rendition.window.ended
            ? .static(duration: seconds)
            : .dynamic(availabilityStartTime: start, minimumUpdatePeriod: segmentSeconds, timeShiftBufferDepth: seconds, publishTime: now)
        state.files[paths.dash] = Self.playlistFile(DASHManifest(kind: kind, minimumBufferTime: segmentSeconds, representations: [representation],
                                                                 audioRepresentations: sounds).rendered,
                                                    contentType: "application/dash+xml", cacheControl: playlist)
    }

    /// Sound renditions' names in the order of their tracks (`audio`, `audio2`, …; by the name
    /// without its number, then the number: see `HLSOrigin.soundRendition(of:index:)`).
    static func inTrackOrder(_ names: [String]) -> [String] {
        func key(_ name: String) -> (String, Int) {
            let digits = name.reversed().prefix { $0.isASCII && $0.isNumber }
            let base = String(name.dropLast(digits.count))
            guard !digits.isEmpty, base.hasSuffix("audio"), let number = Int(String(digits.reversed())) else { return (name, 1) }
            return (base, number)
        }
        return names.sorted { key($0) < key($1) }
    }

    // MARK: HTTP

    private static let cors: HTTPFields = [.accessControlAllowOrigin: "*", .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges"]

    /// Counts a TLS handshake's end.
    func countHandshake(_ outcome: TLSHandshakeOutcome) {
        state.withLock { state in
            switch outcome {
            case .completed: state.statistics.tlsHandshakes += 1
            case .failed: state.statistics.tlsHandshakesFailed += 1
            case .timedOut: state.statistics.tlsHandshakesTimedOut += 1
            }
        }
    }

    /// The answer to a request: a published file (whole or a range), a held request's answer
    /// once it can be given, or a 4xx/5xx, counted.
    func respond(to request: Request) async -> Response {
        let method = request.method
        var headers = Self.cors
        switch method {
        case .options:
            headers[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
            headers[.accessControlAllowHeaders] = "Range"
            headers[.accessControlMaxAge] = "86400"
            state.withLock { $0.statistics.requests += 1 }
            return Response(status: .noContent, headers: headers)
        case .get, .head:
            break
        default:
            state.withLock { $0.statistics.requests += 1; $0.statistics.badMethods += 1 }
            headers[.allow] = "GET, HEAD, OPTIONS"
            return Response(status: .methodNotAllowed, headers: headers)
        }
        var path = request.uri.path
        if let key = options.accessKey {
            switch key.check(path, now: Int(WallClock.seconds)) {
            case .allowed(let opened): path = opened
            case .denied:
                state.withLock { $0.statistics.requests += 1; $0.statistics.forbidden += 1 }
                return Response(status: .forbidden, headers: headers)
            }
        }
        let decision = state.withLock { state -> HLSRequestHolding.Decision in
            state.statistics.requests += 1
            return HLSRequestHolding.decide(path: path, query: request.uri.query, lowLatency: options.lowLatency != nil, in: state)
        }
        let delta: Bool, blocking: Bool
        switch decision {
        case .badRequest:
            return badRequest(headers)
        case .answer(let isDelta, let isBlocking):
            (delta, blocking) = (isDelta, isBlocking)
        case .hold(let condition, let isDelta, let isBlocking):
            (delta, blocking) = (isDelta, isBlocking)
            guard await wait(for: condition) else {
                if case .playlist = condition { return Response(status: .serviceUnavailable, headers: headers) }
                state.withLock { $0.statistics.notFound += 1 }
                return Response(status: .notFound, headers: headers)
            }
        }
        let accepting = request.headers[.acceptEncoding].map { $0.lowercased().contains("gzip") } ?? false
        let file = state.withLock { state -> File? in
            if delta, let rendition = state.mediaPaths[path] { return state.renditions[rendition]?.delta }
            return state.files[path]
        }
        guard var file else {
            state.withLock { $0.statistics.notFound += 1 }
            return Response(status: .notFound, headers: headers)
        }
        if blocking, let part = options.lowLatency?.partDuration.seconds {
            file.cacheControl = "public, max-age=\(max(1, Int(6 * part)))"
        }
        headers[.contentType] = file.contentType
        headers[.cacheControl] = file.cacheControl
        headers[.acceptRanges] = "bytes"
        var stored = file.bytes
        if let gzipped = file.gzipped {
            headers[.vary] = "Accept-Encoding"
            if accepting {
                stored = gzipped
                headers[.contentEncoding] = "gzip"
                state.withLock { $0.statistics.compressedPlaylists += 1 }
            }
        }
        var body = stored
        var status = HTTPResponse.Status.ok
        if let range = request.headers[.range] {
            guard let (start, end) = Self.byteRange(range, size: stored.readableBytes) else {
                state.withLock { $0.statistics.badRanges += 1 }
                headers[.contentRange] = "bytes */\(stored.readableBytes)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            body = stored.getSlice(at: stored.readerIndex + start, length: end - start + 1) ?? ByteBuffer()
            headers[.contentRange] = "bytes \(start)-\(end)/\(stored.readableBytes)"
            status = .partialContent
        }
        headers[.contentLength] = String(body.readableBytes)
        let count = body.readableBytes
        state.withLock { $0.statistics.served += 1; $0.statistics.bytesServed += method == .head ? 0 : count }
        return Response(status: status, headers: headers, body: method == .head ? .init() : .init(byteBuffer: body))
    }

    private func badRequest(_ headers: HTTPFields) -> Response {
        state.withLock { $0.statistics.badRequests += 1 }
        return Response(status: .badRequest, headers: headers)
    }

    /// The first and last byte of a `Range: bytes=…` header (one range: `a-b`, `a-`, `-n`) in a
    /// file of `size` bytes; nil when malformed or past the end.
    static func byteRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        guard first.count <= 18, last.count <= 18 else { return nil }
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return (max(0, size - suffix), size - 1)
        }
        guard let start = Int(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return (start, size - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return (start, min(end, size - 1))
    }
}
