import ArgumentParser

@main
struct H264Kit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "h264kit",
        abstract: "Inspect, mux, demux, decode and encode H.264 video.",
        version: "0.1.0",
        subcommands: [Inspect.self, Mux.self, Demux.self, Decode.self, Encode.self, Bench.self, TimecodeCommand.self]
    )
}
