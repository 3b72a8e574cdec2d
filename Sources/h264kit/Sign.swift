import ArgumentParser
import H264Kit
import SystemIO

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print URL signed with a secret, for an origin or RTSP server started with --secret-file.",
        discussion: """
            The token (HMAC-SHA256 of the expiry and a scope, as nginx's secure_link and a CDN's token \
            authentication) goes first in the path: http://HOST:PORT/token.EXPIRES.SIGNATURE/live/index.m3u8. \
            An HTTP URL opens its folder (the playlist and every playlist, segment and part beside it, which a \
            player finds from it by itself); an RTSP URL opens its presentation and its tracks; --scope / opens \
            the whole server. A server with the same secret answers it until it expires, anything else 403.
            """
    )

    @Argument(help: ArgumentHelp("The URL to sign.", valueName: "URL"))
    var url: String

    @Option(help: ArgumentHelp("The secret: base64 text, or at least 16 raw bytes.", valueName: "FILE"))
    var secretFile: String

    @Option(help: ArgumentHelp("How long the URL is good for.", valueName: "seconds"))
    var expiresIn = 3600

    @Option(help: ArgumentHelp("The path prefix the URL opens, a folder ending in / that holds the URL's path (default: its folder for HTTP, its path for RTSP).", valueName: "PATH"))
    var scope: String?

    func validate() throws {
        guard expiresIn > 0, expiresIn <= 10 * 365 * 86_400 else { throw ValidationError("--expires-in \(expiresIn): 1 s to ten years") }
    }

    mutating func run() throws {
        do {
            let key = try URLSigningKey(secretFile: secretFile)
            print(try key.signedURL(url, scope: scope.map { .prefix($0) }, expires: Int(WallClock.seconds) + expiresIn))
        } catch {
            throw ToolError(error)
        }
    }
}
