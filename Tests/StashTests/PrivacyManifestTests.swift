import Foundation
import Testing
@testable import Stash // Bundle.module: the Stash target's resource bundle, where the manifest ships
@testable import StashEngine

/// Apple's required-reason APIs (App Store rule ITMS-91053): an app whose binary calls one must declare
/// why in a privacy manifest, and a package's manifest travels in its resource bundle. These tests keep
/// `Sources/Stash/PrivacyInfo.xcprivacy` equal to what the sources call (Stash's and the engine's): a new `stat` call, or a disk
/// space or boot time call, without a declared category fails here; a category declared for calls that
/// are gone fails too.
@Suite("Privacy manifest")
struct PrivacyManifestTests {
    /// The products that apps link, each with the folder of its sources. `StashCLI` is a command-line
    /// tool (never in an app) and needs none.
    private static let products = ["Stash", "StashHTTP", "StashRedis"]

    @Test("the manifest ships in Stash's resource bundle, tracks nothing and collects nothing")
    func manifestIsInTheBundle() throws {
        let manifest = try PrivacyManifest(bundleOf: Bundle.module)
        #expect(manifest.tracking == false)
        #expect(manifest.trackingDomains.isEmpty)
        #expect(manifest.collectedDataTypes.isEmpty)
    }

    @Test("Stash declares exactly the categories of required-reason APIs its sources call, with reasons Apple allows")
    func stashDeclaresWhatItCalls() throws {
        let manifest = try PrivacyManifest(bundleOf: Bundle.module)
        let calls = try RequiredReasonAPI.calls(inSourcesOf: "Stash")
        #expect(Set(manifest.reasons.keys) == Set(calls.keys),
                "declared \(manifest.reasons.keys.sorted()), called \(calls.mapValues { $0.prefix(3) })")
        for (category, reasons) in manifest.reasons {
            let allowed = try #require(RequiredReasonAPI.allowedReasons[category], "unknown category \(category)")
            #expect(!reasons.isEmpty && reasons.allSatisfy(allowed.contains), "\(category): \(reasons)")
        }
    }

    @Test("a product without a manifest calls no required-reason API", arguments: products)
    func productsWithoutManifestCallNone(product: String) throws {
        let manifestFile = RequiredReasonAPI.sources.appendingPathComponent("\(product)/PrivacyInfo.xcprivacy")
        guard !FileManager.default.fileExists(atPath: manifestFile.path) else { return } // checked above (Stash)
        let calls = try RequiredReasonAPI.calls(inSourcesOf: product)
        #expect(calls.isEmpty, "\(product) calls required-reason APIs but ships no PrivacyInfo.xcprivacy: \(calls)")
    }

    @Test("the scan finds each kind of call, and not in comments or other names")
    func scanFindsCalls() {
        let code = """
            var info = stat()
            guard fstat(fd, &info) == 0 else { return } // a comment naming lstat(path)
            let free = try url.resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey])
            let booted = ProcessInfo.processInfo.systemUptime
            let defaults = UserDefaults(suiteName: "group.example")
            let restated = restat(x) + fstatus(y)
            """
        #expect(Set(RequiredReasonAPI.categories(in: code).keys) == [
            "NSPrivacyAccessedAPICategoryFileTimestamp", "NSPrivacyAccessedAPICategoryDiskSpace",
            "NSPrivacyAccessedAPICategorySystemBootTime", "NSPrivacyAccessedAPICategoryUserDefaults",
        ])
        #expect(RequiredReasonAPI.categories(in: "// lstat(path)\nlet x = restat(1)").isEmpty)
        // Code built for Linux alone is not in an app; its `#else` branch is.
        let linuxOnly = """
            #if os(Linux)
            guard fstatvfs(fd, &info) == 0 else { return }
            #if canImport(Glibc)
            stat(path, &info)
            #endif
            #else
            lstat(path, &info)
            #endif
            """
        #expect(RequiredReasonAPI.categories(in: linuxOnly) == ["NSPrivacyAccessedAPICategoryFileTimestamp": [7]])
    }
}

/// A privacy manifest, read as a property list.
private struct PrivacyManifest {
    var tracking: Bool?
    var trackingDomains: [String]
    var collectedDataTypes: [Any]
    /// Category → declared reasons.
    var reasons: [String: [String]]

    init(bundleOf bundle: Bundle) throws {
        let url = try #require(bundle.url(forResource: "PrivacyInfo", withExtension: "xcprivacy"),
                               "no PrivacyInfo.xcprivacy in \(bundle.bundleURL.path)")
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil) as? [String: Any])
        tracking = plist["NSPrivacyTracking"] as? Bool
        trackingDomains = plist["NSPrivacyTrackingDomains"] as? [String] ?? []
        collectedDataTypes = plist["NSPrivacyCollectedDataTypes"] as? [Any] ?? []
        var reasons: [String: [String]] = [:]
        for entry in plist["NSPrivacyAccessedAPITypes"] as? [[String: Any]] ?? [] {
            let category = try #require(entry["NSPrivacyAccessedAPIType"] as? String)
            reasons[category, default: []] += entry["NSPrivacyAccessedAPITypeReasons"] as? [String] ?? []
        }
        self.reasons = reasons
    }
}

/// Apple's list of required-reason APIs ("Describing use of required reason API"), as patterns over
/// Swift source, and the reasons each category allows.
private enum RequiredReasonAPI {
    static let sources = packageFile("Sources")

    static let patterns: [String: String] = [
        "NSPrivacyAccessedAPICategoryFileTimestamp":
            #"\b(?:stat|fstat|lstat|fstatat|getattrlist|getattrlistbulk|fgetattrlist|getattrlistat)\s*\("#
            + #"|\b(?:creationDate|modificationDate|fileModificationDate|contentModificationDateKey|creationDateKey)\b"#
            + #"|\battributesOfItem\b"#,
        "NSPrivacyAccessedAPICategoryDiskSpace":
            #"\b(?:statfs|statvfs|fstatfs|fstatvfs)\s*\(|\bvolume\w*Capacity\w*Key\b|\battributesOfFileSystem\b|\bsystem(?:Free)?Size\b"#,
        "NSPrivacyAccessedAPICategorySystemBootTime": #"\bsystemUptime\b|\bmach_absolute_time\b"#,
        "NSPrivacyAccessedAPICategoryActiveKeyboards": #"\bactiveInputModes\b"#,
        "NSPrivacyAccessedAPICategoryUserDefaults": #"\bUserDefaults\b"#,
    ]

    static let allowedReasons: [String: Set<String>] = [
        "NSPrivacyAccessedAPICategoryFileTimestamp": ["DDA9.1", "C617.1", "3B52.1", "0A2A.1"],
        "NSPrivacyAccessedAPICategoryDiskSpace": ["85F4.1", "E174.1", "7D9E.1", "B728.1"],
        "NSPrivacyAccessedAPICategorySystemBootTime": ["35F9.1", "8FFB.1", "3D61.1"],
        "NSPrivacyAccessedAPICategoryActiveKeyboards": ["3EC4.1", "54BD.1"],
        "NSPrivacyAccessedAPICategoryUserDefaults": ["CA92.1", "1C8F.1", "C56D.1", "AC6B.1"],
    ]

    /// Category → the lines (`file:line: code`) of `product`'s sources that call one of its APIs.
    static func calls(inSourcesOf product: String) throws -> [String: [String]] {
        var found: [String: [String]] = [:]
        for target in targets(of: product) {
            let walker = try #require(FileManager.default.enumerator(at: sources.appendingPathComponent(target), includingPropertiesForKeys: nil))
            for case let file as URL in walker where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                for (category, lines) in categories(in: text) {
                    found[category, default: []] += lines.map { "\(file.lastPathComponent):\($0)" }
                }
            }
        }
        return found
    }

    /// The targets whose code a product puts in an app: `Stash` carries the engine, a target with no
    /// product of its own, so Stash's manifest answers for both.
    static func targets(of product: String) -> [String] {
        product == "Stash" ? ["Stash", "StashEngine"] : [product]
    }

    /// Category → the line numbers of `code` that call one of its APIs; comments are left out, and so is
    /// code built for Linux alone (an `#if os(Linux)` branch), which no app binary holds.
    static func categories(in code: String) -> [String: [Int]] {
        var found: [String: [Int]] = [:]
        var linuxOnly: [Bool] = [] // one per open `#if`: whether the branch the line is in is Linux's alone
        for (index, line) in code.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let directive = line.trimmingCharacters(in: .whitespaces)
            if directive.hasPrefix("#if ") {
                linuxOnly.append(directive.dropFirst(4).trimmingCharacters(in: .whitespaces) == "os(Linux)")
                continue
            }
            if directive.hasPrefix("#else") || directive.hasPrefix("#elseif") {
                if !linuxOnly.isEmpty { linuxOnly[linuxOnly.count - 1] = false }
                continue
            }
            if directive.hasPrefix("#endif") {
                _ = linuxOnly.popLast()
                continue
            }
            guard !linuxOnly.contains(true) else { continue }
            let withoutComment = line.components(separatedBy: "//")[0]
            for (category, pattern) in patterns where withoutComment.range(of: pattern, options: .regularExpression) != nil {
                found[category, default: []].append(index + 1)
            }
        }
        return found
    }
}
