public import Stash

/// The tests' name for Stash's public ``ManualClock``: one clock for the library's users and its tests.
/// Pass `clock.function` as `now:`; it starts at ``ManualClock/defaultStart``, a whole second.
public typealias TestClock = ManualClock
