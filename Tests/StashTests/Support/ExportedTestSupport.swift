// Every file of this target sees the shared test helpers (temporary folders, the test clock, the seeded
// generator, the child-process runner, the loopback HTTP server, the executable finder) without
// importing them itself.
@_exported import StashTestSupport
