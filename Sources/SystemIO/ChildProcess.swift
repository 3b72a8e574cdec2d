#if canImport(Glibc)
package import Glibc
#endif
import CSystemShims
import SystemPackage

/// A program run to completion with `posix_spawn`, its standard output and error sent to files
/// (so that no pipe can fill up and stall it) and standard input from `/dev/null`.
/// (Foundation's `Process` would do, but loading Foundation costs start-up time, and its `run()`
/// leaks under LeakSanitizer.)
package enum ChildProcess {
    /// This program's own executable (`/proc/self/exe`), to run it again as a child (a
    /// chunk's transcode); `argv[0]` where /proc is not mounted.
    package static var currentExecutable: String {
        var path = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        return length > 0 ? String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    /// Runs `arguments` (the first is the executable's path) and returns its exit status; a child
    /// killed by a signal gives 128 + the signal's number, as a shell reports it. With
    /// `stopping`, asked every 20 ms while the child runs: once it says so, the child is sent
    /// SIGTERM (SIGKILL 2 s later) and its status is returned when it has ended.
    package static func run(_ arguments: [String], standardOutput: String = "/dev/null",
                            standardError: String = "/dev/null", stopping: (() -> Bool)? = nil) throws(SystemError) -> Int32 {
        guard let executable = arguments.first else { throw SystemError(.spawn, path: "", errno: .invalidArgument) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        closeInheritedDescriptors(&actions)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = ChildProcess.withSpawnAttributes { posix_spawn(&pid, executable, &actions, &$0, &argv, environ) }
        guard started == 0 else { throw SystemError(.spawn, path: executable, errno: Errno(rawValue: started)) }
        var status: Int32 = 0
        if let stopping {
            var terminatedAt: Int?
            var polls = 0
            while true {
                let ended = waitpid(pid, &status, WNOHANG)
                if ended == pid { break }
                if ended < 0 {
                    guard errno == EINTR else { throw SystemError.last(.spawn, path: executable) }
                    continue
                }
                if terminatedAt == nil, stopping() {
                    kill(pid, SIGTERM)
                    terminatedAt = polls
                } else if let terminatedAt, polls - terminatedAt == 100 {
                    kill(pid, SIGKILL)
                }
                polls += 1
                usleep(20_000)
            }
        } else {
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else { throw SystemError.last(.spawn, path: executable) }
            }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// The last file action of a spawn: the child gets no descriptor of this process beyond
    /// 0, 1 and 2. A socket or file opened without `O_CLOEXEC` (SwiftNIO accepts connections
    /// without it) would otherwise live on in the child: a connection the server closed would
    /// stay open to its peer while the child runs (seen: an RTSP client never told of an idle
    /// close while a test's nginx ran).
    package static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        _ = csystem_spawn_close_from(&actions, 3)
    }

    /// Spawn attributes that give a child the signal state of a freshly started program: no
    /// signal blocked (a child spawned from a thread of Swift's cooperative pool or of Dispatch
    /// would otherwise inherit that thread's mask, with SIGINT blocked, and never see a Ctrl-C)
    /// and SIGINT, SIGTERM, SIGPIPE at their default actions whatever the parent ignores.
    package static func withSpawnAttributes<Result>(_ body: (inout posix_spawnattr_t) -> Result) -> Result {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return body(&attributes)
    }
}
