// The bit reader and writer, and the error every bitstream parser throws, are codec-neutral
// (H.264 and MPEG-4 Audio share them); `import H264Bitstream` still brings them.
@_exported public import Bitstream
