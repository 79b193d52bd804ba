// swift-tools-version:6.0
import PackageDescription

// Stash has no package dependencies: Foundation, Dispatch and the toolchain's test libraries only.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Stash",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "Stash", targets: ["Stash"]),
        .library(name: "StashHTTP", targets: ["StashHTTP"]),
        .library(name: "StashRedis", targets: ["StashRedis"]),
        .executable(name: "stash", targets: ["StashCLI"]),
    ],
    targets: [
        // PrivacyInfo.xcprivacy: the reasons for the required-reason APIs the engine calls (Docs/Platforms.md),
        // in the target's resource bundle, where Xcode finds a package's privacy manifest.
        .target(name: "Stash", dependencies: ["StashEngine", "CStashAtomics"], resources: [.copy("PrivacyInfo.xcprivacy")], swiftSettings: strictSettings),
        // The disk engine: bytes in, bytes out, no typed layer above it (Docs/Architecture.md). A target of
        // its own, so the compiler keeps the direction: it reaches the layers above only through
        // `EngineClient`. No product: `Stash` re-exports the little of it that is public (`StorageError`).
        .target(name: "StashEngine", dependencies: ["CStashAtomics", "CStashMappedRead"], swiftSettings: strictSettings),
        // C11 atomics for the memory other processes map (SharedState): Swift's need macOS 15 / iOS 18.
        .target(name: "CStashAtomics"),
        // Copies out of mapped segments that fail, instead of faulting, when the file was cut short underneath.
        .target(name: "CStashMappedRead"),
        .target(name: "StashHTTP", dependencies: ["Stash"], swiftSettings: strictSettings),
        .target(name: "StashRedis", dependencies: ["Stash"], swiftSettings: strictSettings),
        .executableTarget(name: "StashCLI", dependencies: ["Stash", "StashRedis", "StashHTTP"], swiftSettings: strictSettings),
        // The helpers every test target and test executable shares (temporary folders, the clock, the
        // seeded generator, the child-process runner, the loopback HTTP server, the executable finder),
        // as swift-collections shares `_CollectionsTestSupport`. A plain target no product exports.
        .target(name: "StashTestSupport", dependencies: ["Stash", "StashEngine"], path: "Tests/StashTestSupport", swiftSettings: strictSettings),
        // The child process of the crash and multi-process tests (a user of the public API), under Tests/ with them.
        .executableTarget(name: "StashTorture", dependencies: ["Stash", "StashEngine", "StashTestSupport"], path: "Tests/StashTorture", swiftSettings: strictSettings),
        // The JSON coder's allocation count: a process of its own whose malloc wrappers (glibc) count
        // each thread's allocations. No test target depends on it (that would link its malloc into the
        // test bundle): `swift build --build-tests` builds it with every target.
        .target(name: "CStashMallocCounter", path: "Tests/CStashMallocCounter"),
        .executableTarget(name: "StashAllocationCount", dependencies: ["Stash", "CStashMallocCounter"],
                          path: "Tests/StashAllocationCount", swiftSettings: strictSettings),
        // Fixtures: stores written by older engines, copied by the tests that upgrade them (not resources).
        .testTarget(name: "StashTests", dependencies: ["Stash", "StashEngine", "StashTestSupport", "StashCLI", "StashTorture", "StashHTTP"],
                    exclude: ["Fixtures"], swiftSettings: strictSettings),
        .testTarget(name: "StashHTTPTests", dependencies: ["StashHTTP", "StashTestSupport"], swiftSettings: strictSettings),
        // The child process of the Redis two-process test: its own target, apart from StashTorture.
        .executableTarget(name: "StashRedisChild", dependencies: ["StashRedis", "StashTestSupport"], path: "Tests/StashRedisChild", swiftSettings: strictSettings),
        .testTarget(name: "StashRedisTests", dependencies: ["StashRedis", "StashTestSupport", "StashRedisChild", "StashCLI"], swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
