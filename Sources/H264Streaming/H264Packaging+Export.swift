// The packagers and the streaming error moved to H264Packaging (no SwiftNIO there): code that
// imports H264Streaming keeps seeing them.
@_exported public import H264Packaging
