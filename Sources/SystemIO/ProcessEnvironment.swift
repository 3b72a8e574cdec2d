#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage

/// What the process was started with: its environment variables, the temporary directory, the
/// programs on its `PATH`, whether a descriptor is a terminal.
package enum ProcessEnvironment {
    /// The value of environment variable `name`, nil when unset.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// `$TMPDIR`, or /tmp when it is unset or empty.
    package static var temporaryDirectory: String {
        guard let directory = value("TMPDIR"), !directory.isEmpty else { return "/tmp" }
        return directory
    }

    /// The first executable file named `program` in a directory of `$PATH` (a path with a
    /// slash is taken as it is, when executable); nil when there is none.
    package static func executable(named program: String) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        let directories = (value("PATH") ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(program)" }.first { access($0, X_OK) == 0 }
    }

    /// Whether `descriptor` is a terminal (`isatty`): progress is drawn only there.
    package static func isTerminal(_ descriptor: FileDescriptor) -> Bool {
        isatty(descriptor.rawValue) != 0
    }
}
