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
        .executable(name: "stash", targets: ["StashCLI"]),
    ],
    targets: [
        .target(name: "Stash", swiftSettings: strictSettings),
        .target(name: "StashHTTP", dependencies: ["Stash"], swiftSettings: strictSettings),
        .executableTarget(name: "StashCLI", dependencies: ["Stash"], swiftSettings: strictSettings),
        .executableTarget(name: "StashTorture", dependencies: ["Stash"], swiftSettings: strictSettings),
        .testTarget(name: "StashTests", dependencies: ["Stash", "StashCLI", "StashTorture"], swiftSettings: strictSettings),
        .testTarget(name: "StashHTTPTests", dependencies: ["StashHTTP"], swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
