// A header-only shim target; SwiftPM needs one source file.
