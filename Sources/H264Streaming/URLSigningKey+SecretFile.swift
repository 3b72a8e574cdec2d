public import H264Network
public import H264Packaging
import SystemIO

extension URLSigningKey {
    /// The most bytes a secret file may have (a key file, not a document).
    public static let maximumSecretFileSize = 64 << 10

    /// A key from the secret file at `path`: base64 text, or at least 16 raw bytes
    /// (`init(secretFileContents:)`). The error names the file and never shows its bytes.
    public init(secretFile path: String) throws(StreamingError) {
        var contents: [UInt8] = []
        do {
            let input = try ChunkedInput(path: path)
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try chunk.withUnsafeMutableBytes { (buffer) throws(SystemError) -> Int in try input.read(into: buffer) }
                if count == 0 { break }
                contents += chunk[..<count]
                guard contents.count <= Self.maximumSecretFileSize else { throw StreamingError.invalidOption("\(path): a secret file of more than \(Self.maximumSecretFileSize) bytes") }
            }
        } catch let error as StreamingError {
            throw error
        } catch {
            throw .credentials("\(path): the secret file could not be read", underlying: error)
        }
        do { try self.init(secretFileContents: contents) } catch { throw .credentials(path, underlying: error) }
    }
}
