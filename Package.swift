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
        .executable(name: "stash", targets: ["StashCLI"]),
    ],
    targets: [
        .target(name: "Stash", swiftSettings: strictSettings),
        .executableTarget(name: "StashCLI", dependencies: ["Stash"], swiftSettings: strictSettings),
        .testTarget(name: "StashTests", dependencies: ["Stash", "StashCLI"], swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
