import Foundation
import Stash

/// `stash tour`: a short guided session with a real `Storage` of a Codable type in a fresh temporary
/// folder (removed at the end), on a clock the tour moves by hand (Stash's public `ManualClock`, the
/// one users' tests take too).
enum Tour {
    /// The tour's model: a small Codable struct, as app code stores them.
    struct Note: Codable, Sendable {
        var text: String
        var pinned: Bool
    }

    /// Runs the tour, printing one line per step.
    static func run() async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("stash-tour-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = DiskConfig(name: "notes", directory: folder)
        // 2030-01-01T09:00:00Z: a fixed start, so the tour prints the same times on every run.
        let clock = ManualClock(Date(timeIntervalSince1970: 1_893_488_400))

        print("Stash tour: a Storage<Note> in a fresh temporary folder, on a clock the tour moves by hand.")
        try await firstSession(config, clock)
        try secondSession(config, clock)
        print("Done: the temporary folder is removed. Next, on a store of your own: "
            + "`swift run stash set greeting hello`, then `swift run stash ls`.")
    }

    private static func open(_ config: DiskConfig, _ clock: ManualClock) throws -> Storage<Note> {
        try Storage<Note>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: Note.self),
                          now: clock.function)
    }

    /// Stores, reads, lists, expires and uses async/await; the store is closed when it returns.
    private static func firstSession(_ config: DiskConfig, _ clock: ManualClock) async throws {
        let storage = try open(config, clock)
        step(1, "opened a Storage<Note> at \(storage.path) (clock: \(iso8601(clock.now)))")

        try storage.setObject(Note(text: "Milk, eggs, coffee", pinned: true), forKey: "groceries")
        try storage.setObject(Note(text: "A command-line tool for the cache", pinned: false), forKey: "idea")
        try storage.setObject(Note(text: "Stand-up at 09:30", pinned: false), forKey: "meeting", expiry: .seconds(3600))
        step(2, "setObject: stored \"groceries\", \"idea\" and \"meeting\" (the last with expiry .seconds(3600))")

        let groceries = try storage.object(forKey: "groceries")
        step(3, "object(forKey: \"groceries\") -> \"\(groceries.text)\" (pinned: \(groceries.pinned))")
        step(4, "allKeys -> \(storage.allKeys.sorted().joined(separator: ", "))")

        clock.advance(by: 2 * 3600)
        step(5, "the clock moves 2 hours ahead, no sleeping (clock: \(iso8601(clock.now)))")

        do {
            _ = try storage.object(forKey: "meeting")
            step(6, "object(forKey: \"meeting\") unexpectedly returned a value")
        } catch StorageError.expired(let date, _) {
            step(6, "object(forKey: \"meeting\") throws StorageError.expired (it expired at \(iso8601(date)))")
        }
        let stale = try storage.entry(forKey: "meeting")
        step(7, "entry(forKey: \"meeting\") still returns \"\(stale.object.text)\" with isExpired == \(stale.isExpired)")

        try await storage.async.setObject(Note(text: "Read the release notes", pinned: false), forKey: "later")
        let later = try await storage.async.object(forKey: "later")
        step(8, "async/await: storage.async stored \"later\" and read back \"\(later.text)\"")
    }

    /// Reopens the store from disk: the values survived, and a `Data` view shows the stored bytes.
    private static func secondSession(_ config: DiskConfig, _ clock: ManualClock) throws {
        let storage = try open(config, clock)
        let idea = try storage.object(forKey: "idea")
        step(9, "reopened the store: \(plural(storage.allKeys.count, "key")) survived; "
            + "object(forKey: \"idea\") -> \"\(idea.text)\"")

        let raw = try storage.transformData().object(forKey: "groceries")
        step(10, "transformData(): \"groceries\" is stored as the JSON \(String(decoding: raw, as: UTF8.self))")
    }

    private static func step(_ number: Int, _ text: String) {
        print("\(number < 10 ? " " : "")\(number). \(text)")
    }
}
