import Foundation
import TestSupport
import Testing

/// The tree's layering, read from the sources: every module imports only modules below it
/// (bitstream → media core → container / codec / sample flow, with SystemIO the floor beside
/// them → sessions → network, streaming, display → umbrella → CLI), and the rules that keep the
/// layers honest hold. The graph is printed, so a failure shows where the arrow goes up.
@Suite("Module layering")
struct LayeringTests {
    /// Each module's rank: a module may import only modules of a lower rank.
    static let ranks: [String: Int] = [
        "CSystemShims": 0, "CCodecs": 0,
        "SystemIO": 1,
        "Bitstream": 2,
        "H264Bitstream": 3, "MPEG4Audio": 3,
        "MediaCore": 4,
        "ISOBMFF": 5, "MPEGTS": 5, "H264Codec": 5,
        "H264Container": 6,
        "SampleFlow": 7,
        "MediaProbe": 8, "MediaIO": 8,
        "H264Session": 9,
        "H264Network": 10,
        "H264Packaging": 11,
        "H264Streaming": 12,
        "H264Display": 13,
        "H264Kit": 14,
        "h264kit": 15,
    ]

    static let sources = Checkout.root.appendingPathComponent("Sources")

    /// The Swift files of each module, with their text.
    static func files() throws -> [(module: String, path: String, text: String)] {
        var result: [(String, String, String)] = []
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let directory = sources.appendingPathComponent(module)
            guard let walker = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in walker where file.hasSuffix(".swift") {
                let path = directory.appendingPathComponent(file).path
                result.append((module, "Sources/\(module)/\(file)", String(decoding: try readFile(path), as: UTF8.self)))
            }
        }
        return result
    }

    /// The modules a file imports (`import X`, `public import X`, `@_exported public import X`, ...).
    static func imports(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ").map(String.init)
            guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                  words[..<index].allSatisfy({ ["public", "package", "internal", "@_exported", "@testable", "@preconcurrency"].contains($0) }) else { return nil }
            return words[index + 1]
        })
    }

    @Test func everyModuleImportsOnlyModulesBelowIt() throws {
        var graph: [String: Set<String>] = [:]
        for file in try Self.files() {
            graph[file.module, default: []].formUnion(Self.imports(file.text).filter { Self.ranks[$0] != nil && $0 != file.module })
        }
        let lines = graph.keys.sorted { (Self.ranks[$0] ?? 99, $0) < (Self.ranks[$1] ?? 99, $1) }.map { module in
            "\(module) (\(Self.ranks[module].map(String.init) ?? "?")) → " + graph[module, default: []].sorted { (Self.ranks[$0]!, $0) < (Self.ranks[$1]!, $1) }.joined(separator: ", ")
        }
        print("Module import graph:\n" + lines.joined(separator: "\n"))
        for (module, imported) in graph {
            let rank = try #require(Self.ranks[module], "\(module) has no place in the layering")
            for dependency in imported {
                #expect(Self.ranks[dependency]! < rank, "\(module) (\(rank)) imports \(dependency) (\(Self.ranks[dependency]!)), which is not below it")
            }
        }
    }

    @Test func theRulesThatKeepTheLayersHonest() throws {
        let files = try Self.files()
        // One syscall layer: nothing else imports the C library.
        let cLibrary = files.filter { $0.module != "SystemIO" && !Self.imports($0.text).isDisjoint(with: ["Glibc", "Darwin", "Musl"]) }.map(\.path)
        #expect(cLibrary.isEmpty, "import the C library outside SystemIO: \(cLibrary)")
        // Errors keep their cause: none rebuilt from its words outside the tool.
        let rebuilt = files.filter { $0.module != "h264kit" && $0.text.contains("\"\\(error)\"") }.map(\.path)
        #expect(rebuilt.isEmpty, "errors rebuilt from a string: \(rebuilt)")
        // Nor rewrapped by its words: a new error made with a caught error's reason or
        // description (copied beside the cause, the message says it twice; without the cause,
        // the system error, box and byte are lost).
        let rewrapping = #"(Error\(|throw \.)[^\n]*(\berror\.(reason|description)\b|\\\(error[.)])"#
        let rewrapped = files.filter { $0.module != "h264kit" }.flatMap { file in
            file.text.split(separator: "\n").enumerated().filter { !$0.element.trimmingCharacters(in: .whitespaces).hasPrefix("//") && $0.element.range(of: rewrapping, options: .regularExpression) != nil }
                .map { "\(file.path):\($0.offset + 1)" }
        }
        #expect(rewrapped.isEmpty, "errors rewrapped from their words: \(rewrapped)")
        // H264Container only re-exports the two container modules, for code written before
        // the split: the library imports the one it uses.
        let compatibility = files.filter { !["H264Kit", "H264Container"].contains($0.module) && Self.imports($0.text).contains("H264Container") }.map(\.path)
        #expect(compatibility.isEmpty, "import H264Container (import ISOBMFF or MPEGTS): \(compatibility)")
        // One MD5.
        let digests = files.filter { $0.text.range(of: #"(struct|class|enum) MD5"#, options: .regularExpression) != nil }.map(\.path)
        #expect(digests.count == 1, "MD5 types: \(digests)")
        // The bitstream layer is pure: no mapping, threads or semaphores, no other module.
        for file in files where ["Bitstream", "H264Bitstream", "MPEG4Audio"].contains(file.module) {
            for word in ["mmap", "madvise", "DispatchSemaphore", "Thread", "pthread", "sysconf", "import SystemIO", "import Dispatch"] {
                #expect(!file.text.contains(word), "\(file.path) uses \(word)")
            }
        }
        // The sample flow imports no codec.
        for file in files where ["SampleFlow", "Bitstream", "H264Bitstream", "MPEG4Audio", "MediaCore", "ISOBMFF", "MPEGTS"].contains(file.module) {
            let codecs = Self.imports(file.text).intersection(["H264Codec", "H264Session", "CCodecs", "MediaIO"])
            #expect(codecs.isEmpty, "\(file.path) imports \(codecs)")
        }
        // Streaming reaches for the sessions only where it encodes pictures live.
        let sessions = files.filter { $0.module == "H264Streaming" && Self.imports($0.text).contains("H264Session") }.map(\.path)
        #expect(sessions.count <= 3, "H264Streaming files importing H264Session: \(sessions)")
        // No raw descriptors cross modules: SystemIO's package API takes and gives FileDescriptor.
        let raw = files.filter { $0.module == "SystemIO" && $0.text.range(of: #"package [^\n]*(fd|fileDescriptor|descriptor): Int32"#, options: .regularExpression) != nil }
        #expect(raw.isEmpty, "raw descriptors in SystemIO's package API: \(raw.map(\.path))")
    }
}
