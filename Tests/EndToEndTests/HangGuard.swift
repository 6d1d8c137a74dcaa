import Testing

extension Trait where Self == TimeLimitTrait {
    /// The player's end-to-end suites' limit per test: a guard that turns a wait that never ends (a
    /// player, recorder or server that hangs) into a failure instead of a stalled run, not a speed check.
    ///
    /// It is far above any test's own time because Swift Testing starts the clock before the test body
    /// gets one of the test pool's threads (two on a two-core machine), and blocking end-to-end tests can
    /// hold those for most of a run: a one-minute limit failed a 0.1 s test that way.
    static var hangGuard: Self { .timeLimit(.minutes(60)) }
}
