import Foundation
import Stash
import StashTestSupport

// `StashTorture attack DIR --tag T [--durable] [--max-size BYTES] [--memory]`: one writer process of a
// store shared by several (`DiskConfig.allowsWritersInOtherProcesses`), driven line by line, for
// the shared-writer suites of Tests/StashTests/Engine/Sharing (OtherWriterScenario). Keys are given
// as the hex of their UTF-8 bytes, so that any spelling (NFC, NFD, `/`, spaces) passes through.
// Write N of the process writes sequence T * 1,000,000,000 + N. Prints `ready` once open, then one
// line per command once it returned:
//
//   set HEX SIZE           `wrote HEX SEQ`       (a self-verifying value, SIZE payload bytes)
//   get HEX                `got HEX SEQ|missing` (exits 3 if the value is no complete value of the key)
//   remove HEX             `removed HEX`
//   clear                  `cleared`             (removeAll)
//   fill PREFIX COUNT SIZE `filled PREFIX FIRST` (keys PREFIX0…: key i holds FIRST + i)
//   batch SIZE HEX…        `batched SEQ`         (one StorageBatch writing SEQ to every key)
//   count                  `count N`             (allKeys)
//   expiring HEX SIZE SECS `wrote HEX SEQ`       (as set, expiring SECS seconds from now)
//   churn PREFIX KEYS COUNT SIZE                 COUNT writes of keys PREFIX0…PREFIX(KEYS-1) in turn, a
//                          `wrote HEX SEQ` line each (overwrites: enough of them make the store compact)
//   batches COUNT SIZE HEX…                      COUNT batches as `batch`, a `batched SEQ` line each
//
// `--memory`: through a `Storage` with a memory layer. Exits 0 at the end of stdin (the storage is
// released, so the store closes).

func runAttack(_ arguments: [String], option: (String) -> String?) throws -> Never {
    try attackSession(arguments, option: option) // the storage is released there: its close runs
    exit(0)
}

private func attackSession(_ arguments: [String], option: (String) -> String?) throws {
    guard arguments.count >= 2, let tag = option("--tag").flatMap(UInt64.init), tag < 1 << 30,
          let maxSize = Int(option("--max-size") ?? "0") else {
        fail("usage: StashTorture attack DIR --tag T [--durable] [--max-size BYTES] [--memory]", status: 2)
    }
    let url = URL(fileURLWithPath: arguments[1], isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, maxSize: maxSize, directory: url.deletingLastPathComponent(),
                            durable: arguments.contains("--durable"), allowsWritersInOtherProcesses: true)
    let storage: any StorageAware<Data>
    let writeBatch: (StorageBatch<Data>) throws -> Void
    if arguments.contains("--memory") {
        let hybrid = try Storage<Data>(diskConfig: config, transformer: TransformerFactory.forData())
        (storage, writeBatch) = (hybrid, hybrid.write)
    } else {
        let disk = try DiskStorage<Data>(config: config, transformer: TransformerFactory.forData())
        (storage, writeBatch) = (disk, disk.write)
    }
    var sequence = tag &* 1_000_000_000
    func key(_ hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
              let byte = UInt8(hex[index..<next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        return String(decoding: bytes, as: UTF8.self)
    }
    emit("ready")
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        switch (words.first, words.count) {
        case ("set", 3):
            guard let size = Int(words[2]) else { fail("bad size in \(line)", status: 2) }
            sequence += 1
            try storage.setObject(TortureValue.make(key: key(words[1]), sequence: sequence, payloadCount: size), forKey: key(words[1]), expiry: nil)
            emit("wrote \(words[1]) \(sequence)")
        case ("get", 2):
            let name = key(words[1])
            do {
                let data = try storage.object(forKey: name)
                // Written under this key or a canonically equivalent spelling of it (the value names the bytes).
                let spellings = [name, name.precomposedStringWithCanonicalMapping, name.decomposedStringWithCanonicalMapping]
                guard let found = spellings.lazy.compactMap({ TortureValue.sequence(of: data, key: $0) }).first else {
                    fail("read \(data.count) bytes for \(words[1]) that are no complete value of it", status: 3)
                }
                emit("got \(words[1]) \(found)")
            } catch StorageError.notFound {
                emit("got \(words[1]) missing")
            }
        case ("remove", 2):
            try storage.removeObject(forKey: key(words[1]))
            emit("removed \(words[1])")
        case ("clear", 1):
            try storage.removeAll()
            emit("cleared")
        case ("fill", 4):
            guard let count = Int(words[2]), let size = Int(words[3]) else { fail("bad fill \(line)", status: 2) }
            let first = sequence + 1
            for index in 0..<count {
                sequence += 1
                try storage.setObject(TortureValue.make(key: "\(words[1])\(index)", sequence: sequence, payloadCount: size),
                                      forKey: "\(words[1])\(index)", expiry: nil)
            }
            emit("filled \(words[1]) \(first)")
        case ("batch", let count) where count >= 3:
            guard let size = Int(words[1]) else { fail("bad size in \(line)", status: 2) }
            sequence += 1
            var batch = StorageBatch<Data>()
            for hex in words.dropFirst(2) {
                batch.setObject(TortureValue.make(key: key(hex), sequence: sequence, payloadCount: size), forKey: key(hex))
            }
            try writeBatch(batch)
            emit("batched \(sequence)")
        case ("expiring", 4):
            guard let size = Int(words[2]), let seconds = Double(words[3]) else { fail("bad expiring \(line)", status: 2) }
            sequence += 1
            try storage.setObject(TortureValue.make(key: key(words[1]), sequence: sequence, payloadCount: size), forKey: key(words[1]),
                                  expiry: .seconds(seconds))
            emit("wrote \(words[1]) \(sequence)")
        case ("churn", 5):
            guard let keys = Int(words[2]), keys > 0, let count = Int(words[3]), let size = Int(words[4]) else { fail("bad churn \(line)", status: 2) }
            for index in 0..<count {
                let name = "\(words[1])\(index % keys)"
                sequence += 1
                try storage.setObject(TortureValue.make(key: name, sequence: sequence, payloadCount: size), forKey: name, expiry: nil)
                emit("wrote \(hexKey(name)) \(sequence)")
            }
        case ("batches", let count) where count >= 4:
            guard let batches = Int(words[1]), let size = Int(words[2]) else { fail("bad batches \(line)", status: 2) }
            for _ in 0..<batches {
                sequence += 1
                var batch = StorageBatch<Data>()
                for hex in words.dropFirst(3) {
                    batch.setObject(TortureValue.make(key: key(hex), sequence: sequence, payloadCount: size), forKey: key(hex))
                }
                try writeBatch(batch)
                emit("batched \(sequence)")
            }
        case ("count", 1):
            emit("count \(storage.allKeys.count)")
        default:
            fail("unknown command \(line)", status: 2)
        }
    }
}

/// The hex of `key`'s UTF-8 bytes: how `attack` names keys on its command lines.
func hexKey(_ key: String) -> String {
    key.utf8.map { String(format: "%02x", $0) }.joined()
}
