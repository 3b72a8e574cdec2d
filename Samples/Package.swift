// swift-tools-version:6.1
// The seed case studies as small programs on H264Kit's public API, one executable each. They
// depend on the project by path, with its command-line tool trait off: only the libraries build.
import PackageDescription

let package = Package(
    name: "H264KitSamples",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "H264Kit", path: "..", traits: [])],
    targets: ["AnnexBToMP4", "DecodeFrames", "CompressToMovie", "MultiPassEncode", "TimecodeTrack", "CustomMetadata", "MediaTimeBasics",
              "DisplayInBrowser", "StreamToNetwork", "LiveOrigin"].map { name in
        .executableTarget(name: name, dependencies: [.product(name: "H264Kit", package: "H264Kit")])
    }
)
