// swift-tools-version:6.1
// libFuzzer targets, one per parser, a package of their own so that the library builds without
// sanitizers. Build and run them with ./run.sh (see its header); each target is also a plain
// replayer: `.build/release/FuzzMovie crash-file` runs one input.
import PackageDescription

/// The targets: each feeds libFuzzer's bytes to one parser through the public API.
let fuzzTargets: [(name: String, products: [String])] = [
    ("FuzzAnnexB", ["H264Bitstream", "SampleFlow"]),
    ("FuzzParameterSets", ["H264Bitstream"]),
    ("FuzzAVCC", ["H264Bitstream", "MediaCore"]),
    ("FuzzSampleBuffers", ["H264Bitstream", "MediaCore", "ISOBMFF", "MPEGTS", "SampleFlow"]),
    ("FuzzMovie", ["H264Bitstream", "MediaCore", "ISOBMFF", "MPEGTS"]),
    ("FuzzY4M", ["MediaCore", "MediaIO"]),
    ("FuzzRTP", ["H264Network", "MediaCore"]),
    ("FuzzSDP", ["H264Network", "MediaCore"]),
    ("FuzzRTSP", ["H264Network"]),
    ("FuzzTransportStream", ["H264Bitstream", "MediaCore", "ISOBMFF", "MPEGTS"]),
    ("FuzzAudio", ["Bitstream", "MPEG4Audio", "MediaCore", "SampleFlow"]),
]

let package = Package(
    name: "H264KitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "H264Kit", path: "../", traits: [])],
    targets: [.target(name: "FuzzSupport")] + fuzzTargets.map { target in
        .executableTarget(
            name: target.name,
            dependencies: ["FuzzSupport"] + target.products.map { .product(name: $0, package: "H264Kit") },
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    }
)
