// swift-tools-version:6.0
import PackageDescription

// The benchmark suite is its own package so that the library itself keeps no dependencies.
// It depends on the library by path and on nothing else (see README.md for why there is no
// package-benchmark here).
let package = Package(
    name: "StashBenchmarks",
    // Synchronization.Mutex (the min store's lock) needs macOS 15 on Apple platforms.
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stash", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "StashBenchmarks",
            dependencies: [.product(name: "Stash", package: "Stash"), .product(name: "StashRedis", package: "Stash"), "MallocStats"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // Bytes in use by malloc: Glibc's Swift module does not export <malloc.h>.
        .target(name: "MallocStats"),
    ],
    swiftLanguageModes: [.v6]
)
