// swift-tools-version:6.0
import PackageDescription

// The benchmark suite is its own package so that the library itself keeps no dependencies.
// It depends on the library by path and on one other package, GRDB (a peer as app developers use
// it; the machine's package copy), and on no benchmark framework (Benchmarks/README.md, "Why not
// package-benchmark", says why). The peers (SQLite, LevelDB, LMDB) are system libraries, reached through
// module maps in this package only: `.ci/run` installs their Debian -dev packages.
let package = Package(
    name: "StashBenchmarks",
    // Synchronization.Mutex (the min store's lock) needs macOS 15 on Apple platforms.
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stash", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "StashBenchmarks",
            dependencies: [.product(name: "Stash", package: "Stash"), .product(name: "StashRedis", package: "Stash"), "MallocStats",
                           "CSQLite", "CLevelDB", "CLMDB", "CPeerDriver",
                           .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // Bytes in use by malloc: Glibc's Swift module does not export <malloc.h>.
        .target(name: "MallocStats"),
        // The peers driven from C with no wrapper: the reference for the Swift peers' overhead.
        .target(name: "CPeerDriver", linkerSettings: [.linkedLibrary("leveldb"), .linkedLibrary("lmdb"), .linkedLibrary("sqlite3")]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLevelDB", providers: [.apt(["libleveldb-dev"])]),
        .systemLibrary(name: "CLMDB", providers: [.apt(["liblmdb-dev"])]),
    ],
    swiftLanguageModes: [.v6]
)
