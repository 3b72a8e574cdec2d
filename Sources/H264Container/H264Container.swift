// Kept for code written before the container formats became two modules: `import H264Container`
// still brings both. New code imports the one it uses: `ISOBMFF` (MP4/MOV, CMAF) or `MPEGTS`
// (transport streams); `ContainerError` lives in `MediaCore`.
@_exported public import ISOBMFF
@_exported public import MPEGTS
