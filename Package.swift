// swift-tools-version:6.1
import PackageDescription

/// Settings every Swift target shares, applied in one place (the swift-subprocess pattern).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableExperimentalFeature("Lifetimes"),
]

/// The library modules, bottom layer first; the umbrella `H264Kit` re-exports them.
let libraries = ["SystemIO", "Bitstream", "H264Bitstream", "MPEG4Audio", "MediaCore", "ISOBMFF", "MPEGTS", "H264Container", "H264Codec", "SampleFlow", "MediaProbe", "MediaIO", "H264Session",
                 "H264Network", "H264Packaging", "H264Streaming", "H264Display"]
let systemPackage = Target.Dependency.product(name: "SystemPackage", package: "swift-system")

var targets: [Target] = [
    // C at the edge: the FFmpeg and x264 headers, with the libraries opened on first use (CCodecs.c).
    .target(name: "CCodecs"),
    // Linux calls the Glibc module does not import (fallocate's INSERT_RANGE), as inline functions.
    .target(name: "CSystemShims"),
    // The one system-call layer: typed descriptors and Errno, EINTR once, mappings, threads,
    // clocks, signals, atomic outputs. Its API is package-wide; only `SystemError` is public.
    .target(name: "SystemIO", dependencies: ["CSystemShims", systemPackage]),

    // Pure Swift, no I/O: the bit reader and writer both codecs share, with the one bitstream
    // error; the H.264 syntax; the MPEG-4 Audio syntax (AAC configurations, ADTS, LATM, esds);
    // then the CoreMedia analogue over them.
    .target(name: "Bitstream"),
    .target(name: "H264Bitstream", dependencies: ["Bitstream"]),
    .target(name: "MPEG4Audio", dependencies: ["Bitstream"]),
    .target(name: "MediaCore", dependencies: ["Bitstream", "H264Bitstream", "MPEG4Audio", "SystemIO"]),
    // One module per container format (their files through SystemIO): ISO BMFF (MP4/MOV boxes,
    // readers and writers, CMAF), and MPEG-2 transport streams (tables, demuxer, reader, muxer,
    // writer). H264Container is what it was before the split: both, re-exported.
    .target(name: "ISOBMFF", dependencies: ["Bitstream", "H264Bitstream", "MPEG4Audio", "MediaCore", "SystemIO", systemPackage]),
    .target(name: "MPEGTS", dependencies: ["Bitstream", "H264Bitstream", "MPEG4Audio", "MediaCore", "SystemIO", systemPackage]),
    .target(name: "H264Container", dependencies: ["ISOBMFF", "MPEGTS"]),
    // The only module over the C codecs: encoder, decoder and scaler wrappers.
    .target(name: "H264Codec", dependencies: ["H264Bitstream", "MediaCore", "CCodecs", "SystemIO"]),
    // Codec-free sample flow: sources (Annex-B, MPEG-TS, MP4/MOV) and sinks (movie, TS,
    // Annex-B), the remux jobs on them (mux, demux, split, concat), and the HLS/DASH segmenter.
    .target(name: "SampleFlow", dependencies: ["Bitstream", "H264Bitstream", "MPEG4Audio", "MediaCore", "ISOBMFF", "MPEGTS", "SystemIO", systemPackage]),
    // What a stream or a movie holds, as reports (h264kit inspect and timecode): no codec needed.
    .target(name: "MediaProbe", dependencies: ["H264Bitstream", "MediaCore", "ISOBMFF", "MPEGTS", "SampleFlow"]),
    // Raw, Y4M, framemd5 and PNG files, PSNR, test patterns: what tools and tests share.
    .target(name: "MediaIO", dependencies: ["H264Bitstream", "MediaCore", "H264Codec", "SystemIO"]),
    // The VideoToolbox analogue: sessions, and decoding, encoding and transcoding whole files.
    .target(name: "H264Session", dependencies: ["H264Bitstream", "MediaCore", "ISOBMFF", "MPEGTS", "H264Codec", "SampleFlow", "MediaIO", "SystemIO"]),

    // RTP (RFC 6184), RTCP, SDP, RTSP, HLS playlists and the live window, the DASH MPD: pure
    // state machines and values, packets and requests in, packets and answers out.
    // (swift-crypto for the HMAC of signed URLs.)
    .target(name: "H264Network", dependencies: ["H264Bitstream", "MPEG4Audio", "MediaCore", .product(name: "Crypto", package: "swift-crypto")]),
    // HLS/DASH packaging of files (and of renditions encoded for a ladder): no socket, no
    // SwiftNIO; the streaming error every streaming module throws.
    .target(name: "H264Packaging", dependencies: [
        "H264Network", "SampleFlow", "H264Session", "H264Codec", "H264Bitstream", "ISOBMFF", "MPEGTS", "MediaCore", "SystemIO",
    ]),
    // The SwiftNIO and Hummingbird shells: RTP sockets, the RTSP server and client, ingest, the
    // HTTP origin (it re-exports H264Packaging).
    .target(name: "H264Streaming", dependencies: [
        "H264Packaging", "H264Network", "SampleFlow", "H264Session", "ISOBMFF", "MPEGTS", "MediaCore", "SystemIO",
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "HummingbirdHTTP2", package: "hummingbird"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOTLS", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"), .product(name: "CompressNIO", package: "compress-nio"),
    ]),

    // The display layer: the browser (WebCodecs) as the display, served with Hummingbird 2.
    .target(name: "H264Display", dependencies: [
        "H264Streaming", "H264Network", "SampleFlow", "ISOBMFF", "MPEGTS", "MediaCore", "SystemIO",
        .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"), .product(name: "HummingbirdHTTP2", package: "hummingbird"),
        .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
        .product(name: "Logging", package: "swift-log"),
    ], exclude: ["Resources"]),  // the page's sources: compiled in by scripts/embed-player.py (PlayerResources.swift)

    // One import for library users (swift-log's `Logger` too: the servers take one).
    .target(name: "H264Kit", dependencies: libraries.map { .target(name: $0) } + [.product(name: "Logging", package: "swift-log")]),

    // The command-line tool: argument parsing, progress and printing over the libraries.
    .executableTarget(
        name: "h264kit",
        dependencies: ["H264Kit", "MediaProbe", "SystemIO", .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["CommandLineTool"]))]
    ),

    .target(name: "TestSupport", dependencies: ["H264Bitstream", "SystemIO"], path: "Tests/TestSupport"),
    .testTarget(name: "SystemIOTests", dependencies: ["SystemIO", "TestSupport", systemPackage]),
    .testTarget(name: "SampleFlowTests", dependencies: ["SampleFlow", "ISOBMFF", "MPEGTS", "H264Bitstream", "MediaCore", "SystemIO", "TestSupport", systemPackage]),
    .testTarget(name: "MediaProbeTests", dependencies: ["MediaProbe", "SampleFlow", "H264Bitstream", "MediaCore", "TestSupport"]),
    .testTarget(name: "H264BitstreamTests", dependencies: ["H264Bitstream", "TestSupport"]),
    .testTarget(name: "MPEG4AudioTests", dependencies: ["MPEG4Audio", "Bitstream"]),
    .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "H264Bitstream", "TestSupport"]),
    .testTarget(name: "H264ContainerTests", dependencies: ["ISOBMFF", "MPEGTS", "MPEG4Audio", "MediaCore", "SystemIO", "TestSupport", systemPackage]),
    .testTarget(name: "H264CodecTests", dependencies: ["H264Codec", "H264Bitstream", "MediaCore", "TestSupport"]),
    .testTarget(name: "MediaIOTests", dependencies: ["MediaIO", "H264Codec", "H264Bitstream", "MediaCore", "TestSupport"]),
    .testTarget(name: "H264SessionTests", dependencies: ["H264Session", "SampleFlow", "MediaProbe", "ISOBMFF", "MPEGTS", "H264Codec", "H264Bitstream", "MediaCore", "MediaIO", "TestSupport"]),
    .testTarget(name: "H264NetworkTests", dependencies: ["H264Network", "SampleFlow", "H264Session", "ISOBMFF", "MPEGTS", "MediaCore", "H264Bitstream", "TestSupport"]),
    .testTarget(name: "H264PackagingTests", dependencies: ["H264Packaging", "H264Network", "SampleFlow", "ISOBMFF", "MPEGTS", "MediaCore", "TestSupport"]),
    .testTarget(name: "H264StreamingTests", dependencies: ["H264Streaming", "H264Network", "SampleFlow", "H264Session", "ISOBMFF", "MPEGTS", "H264Codec", "H264Bitstream", "MediaCore", "MediaIO", "TestSupport",
                                                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),
    .testTarget(name: "H264DisplayTests", dependencies: ["H264Display", "H264Streaming", "H264Network", "SampleFlow", "H264Session", "MediaCore", "TestSupport"]),
    .testTarget(name: "CCodecsTests", dependencies: ["CCodecs"]),
    .testTarget(name: "h264kitTests", dependencies: ["H264Bitstream", "TestSupport"]),
]

for index in targets.indices where targets[index].type != .system {
    targets[index].swiftSettings = (targets[index].swiftSettings ?? []) + swiftSettings
}

let package = Package(
    name: "H264Kit",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "h264kit", targets: ["h264kit"]),
        .library(name: "H264Kit", targets: ["H264Kit"]),
    ] + libraries.map { .library(name: $0, targets: [$0]) },
    traits: [
        .trait(name: "CommandLineTool", description: "The h264kit command-line tool (swift-argument-parser); library users turn it off with traits: []"),
        .default(enabledTraits: ["CommandLineTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // No default traits: "FullFoundation" would link all of Foundation (and ICU) into every
        // program, some 9 MB of memory for a date formatter the display never uses.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // gzip for playlists (low-latency HLS asks for it); hummingbird-websocket brings it already.
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        // TLS for the servers (Hummingbird's HTTP/2 builds on it and on swift-nio-http2).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        // HMAC-SHA256 for signed URLs (hummingbird-websocket resolves it already).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // `swift package generate-documentation`: the DocC catalogs (a plugin; nothing links it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: targets
)
