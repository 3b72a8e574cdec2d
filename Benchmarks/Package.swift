// swift-tools-version:6.1
// Micro-benchmarks on ordo-one/benchmark, a package of their own so that the library does not
// depend on the harness. Run from this directory:
//   swift package benchmark                      # run them all
//   swift package benchmark thresholds check     # compare with Thresholds/ (exit 2 on a regression)
//   swift package --allow-writing-to-package-directory benchmark thresholds update
import PackageDescription

let package = Package(
    name: "H264KitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "H264Kit", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "H264KitBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "H264Bitstream", package: "H264Kit"),
                .product(name: "MediaCore", package: "H264Kit"),
                .product(name: "ISOBMFF", package: "H264Kit"),
                .product(name: "MPEGTS", package: "H264Kit"),
                .product(name: "H264Codec", package: "H264Kit"),
            ],
            path: "Benchmarks/H264KitBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Peak memory of a session's frames sequence with a fast and a slow consumer.
        .executableTarget(name: "FramesConsumer", dependencies: [.product(name: "H264Kit", package: "H264Kit")], path: "Sources/FramesConsumer"),
        // RTP: packetize + depacketize throughput on one core, and loopback latency at 30 fps.
        .executableTarget(name: "RTPLatency", dependencies: [.product(name: "H264Kit", package: "H264Kit")], path: "Sources/RTPLatency"),
    ]
)
