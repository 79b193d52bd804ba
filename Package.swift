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
        .target(name: "Stash", swiftSettings: strictSettings),
        .target(name: "StashHTTP", dependencies: ["Stash"], swiftSettings: strictSettings),
        .target(name: "StashRedis", dependencies: ["Stash"], swiftSettings: strictSettings),
        .executableTarget(name: "StashCLI", dependencies: ["Stash", "StashRedis"], swiftSettings: strictSettings),
        .executableTarget(name: "StashTorture", dependencies: ["Stash"], swiftSettings: strictSettings),
        .testTarget(name: "StashTests", dependencies: ["Stash", "StashCLI", "StashTorture"], swiftSettings: strictSettings),
        .testTarget(name: "StashHTTPTests", dependencies: ["StashHTTP"], swiftSettings: strictSettings),
        // The child process of the Redis two-process test: its own target, apart from StashTorture.
        .executableTarget(name: "StashRedisChild", dependencies: ["StashRedis"], path: "Tests/StashRedisChild", swiftSettings: strictSettings),
        .testTarget(name: "StashRedisTests", dependencies: ["StashRedis", "StashRedisChild", "StashCLI"], swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
