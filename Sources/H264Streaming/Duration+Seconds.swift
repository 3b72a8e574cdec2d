extension Duration {
    /// The duration in seconds, as the sessions' monotonic clocks count (a `Double`).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
