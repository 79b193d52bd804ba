import Foundation
import Testing
@testable import StashTorture // TortureValue: the values `StashTorture step` writes

/// Tests of writers in several processes whose other process is `StashTorture step --shared` or
/// `lock-folder`: the executables built with the tests and self-verifying values of 1,000 bytes. A
/// suite adopts it and calls `executable(…)`, `value(…)`, `sequence(…)`.
protocol StepWriterScenario {}

extension StepWriterScenario {
    func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }

    /// A self-verifying value of `key` with sequence number `sequence` (as `StashTorture` writes them).
    func value(_ key: String, _ sequence: UInt64, size: Int = 1_000) -> Data {
        TortureValue.make(key: key, sequence: sequence, payloadCount: size)
    }

    func sequence(_ data: Data?, _ key: String) -> UInt64? {
        data.flatMap { TortureValue.sequence(of: $0, key: key) }
    }
}
