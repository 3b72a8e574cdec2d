// swift-tools-version:6.1
import PackageDescription

/// Settings every Swift target shares, applied in one place (the swift-subprocess pattern).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableExperimentalFeature("Lifetimes"),
]

var targets: [Target] = [
    // C at the edge: the FFmpeg and x264 headers, with the libraries opened on first use (CCodecs.c).
    .target(name: "CCodecs"),
    // Linux calls the Glibc module does not import (fallocate's INSERT_RANGE), as inline functions.
    .target(name: "CSystemShims"),

    // Pure Swift layers, dependencies pointing one way.
    .target(name: "H264Bitstream"),
    .target(name: "MediaCore", dependencies: ["H264Bitstream"]),
    .target(name: "H264Container", dependencies: ["H264Bitstream", "MediaCore", "CSystemShims"]),

    // The only module that imports C: encoder and decoder wrappers, then the sessions over them.
    .target(name: "H264Codec", dependencies: ["H264Bitstream", "MediaCore", "CCodecs"]),
    .target(name: "H264Session", dependencies: ["H264Bitstream", "MediaCore", "H264Codec"]),

    // The command-line tool: one file per subcommand over the libraries.
    .executableTarget(
        name: "h264kit",
        dependencies: [
            "H264Bitstream",
            "MediaCore",
            "H264Container",
            "H264Codec",
            "H264Session",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]
    ),

    .target(name: "TestSupport", dependencies: ["H264Bitstream"], path: "Tests/TestSupport"),
    .testTarget(name: "H264BitstreamTests", dependencies: ["H264Bitstream", "TestSupport"]),
    .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "TestSupport"]),
    .testTarget(name: "H264ContainerTests", dependencies: ["H264Container", "MediaCore", "TestSupport"]),
    .testTarget(name: "H264CodecTests", dependencies: ["H264Codec", "H264Bitstream", "MediaCore", "TestSupport"]),
    .testTarget(name: "H264SessionTests", dependencies: ["H264Session", "H264Codec", "MediaCore", "TestSupport"]),
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
        .library(name: "H264Bitstream", targets: ["H264Bitstream"]),
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "H264Container", targets: ["H264Container"]),
        .library(name: "H264Codec", targets: ["H264Codec"]),
        .library(name: "H264Session", targets: ["H264Session"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: targets
)
