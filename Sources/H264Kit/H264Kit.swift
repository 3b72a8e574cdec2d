// The umbrella module: `import H264Kit` brings every library module, and swift-log's `Logger`,
// which the servers (`HLSOrigin`, `DisplayServer`) take.
@_exported public import SystemIO
@_exported public import Bitstream
@_exported public import H264Bitstream
@_exported public import MPEG4Audio
@_exported public import MediaCore
@_exported public import ISOBMFF
@_exported public import MPEGTS
@_exported public import H264Container
@_exported public import H264Codec
@_exported public import SampleFlow
@_exported public import MediaProbe
@_exported public import MediaIO
@_exported public import H264Session
@_exported public import H264Network
@_exported public import H264Packaging
@_exported public import H264Streaming
@_exported public import H264Display
@_exported public import Logging
