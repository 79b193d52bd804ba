import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The memory layer on its own: contract items 1, 2, 3 and 5 as `MemoryStorage` keeps them.
@Suite("MemoryStorage")
struct MemoryStorageTests {
    // MARK: Basics

    @Test("a stored value is read back, replaced, listed and removed")
    func setGetReplaceRemove() throws {
        let memory = MemoryStorage<User>()
        let ann = User(name: "ann", age: 30)
        try memory.setObject(ann, forKey: "me")
        #expect(try memory.object(forKey: "me") == ann)
        #expect(try memory.entry(forKey: "me").filePath == nil)
        #expect(try memory.existsObject(forKey: "me"))

        let older = User(name: "ann", age: 31)
        try memory.setObject(older, forKey: "me")
        try memory.setObject(User(name: "bob", age: 2), forKey: "other")
        #expect(try memory.object(forKey: "me") == older)
        #expect(Set(memory.allKeys) == ["me", "other"])
        #expect(memory.count == 2)

        memory.removeObject(forKey: "me")
        #expect(storageError { _ = try memory.object(forKey: "me") }?.isNotFound == true)
        #expect(try !memory.existsObject(forKey: "me"))
        #expect(storageError { _ = try memory.isExpiredObject(forKey: "me") }?.isNotFound == true)
        memory.removeObject(forKey: "missing") // not an error

        memory.removeAll()
        #expect(memory.allKeys.isEmpty)
        #expect(memory.count == 0)
        #expect(storageError { _ = try memory.entry(forKey: "other") }?.isNotFound == true)
    }

    // MARK: Expiry

    // Contract 1: a per-call expiry overrides MemoryConfig.expiry.
    @Test("a per-call expiry overrides the config expiry")
    func perCallExpiryOverridesConfig() throws {
        let clock = TestClock()
        let start = clock.now
        let memory = MemoryStorage<String>(config: MemoryConfig(expiry: .seconds(10)), now: clock.function)
        try memory.setObject("default", forKey: "default")
        try memory.setObject("long", forKey: "long", expiry: .seconds(1000))
        try memory.setObject("never", forKey: "never", expiry: .never)
        try memory.setObject("date", forKey: "date", expiry: .date(start + 5))

        #expect(try memory.entry(forKey: "default").expiry == .date(start + 10))
        #expect(try memory.entry(forKey: "long").expiry == .date(start + 1000))
        #expect(try memory.entry(forKey: "never").expiry == .never)
        #expect(try memory.entry(forKey: "date").expiry == .date(start + 5))

        clock.advance(by: 11)
        #expect(try !memory.existsObject(forKey: "default"))
        #expect(try !memory.existsObject(forKey: "date"))
        #expect(try memory.object(forKey: "long") == "long")
        #expect(try memory.object(forKey: "never") == "never")
    }

    // Contract 1: `.seconds(n)` is resolved to a date at the write; reads never move it.
    @Test("seconds expiry is fixed at write time and re-reading never moves it", arguments: [1.0, 60, 3600])
    func secondsResolvedAtWrite(seconds: TimeInterval) throws {
        let clock = TestClock()
        let memory = MemoryStorage<String>(now: clock.function)
        clock.advance(by: 500) // the write is not at the clock's origin
        let writtenAt = clock.now
        try memory.setObject("v", forKey: "k", expiry: .seconds(seconds))

        for _ in 0..<4 {
            clock.advance(by: seconds / 8)
            #expect(try memory.entry(forKey: "k").expiry == .date(writtenAt + seconds))
            #expect(try memory.object(forKey: "k") == "v") // a successful read does not extend it
        }
        clock.advance(by: seconds / 2 - seconds / 100) // just before write time + n
        #expect(try memory.existsObject(forKey: "k"))
        clock.advance(by: seconds / 100) // exactly write time + n
        #expect(try memory.isExpiredObject(forKey: "k"))
        #expect(try memory.entry(forKey: "k").expiry == .date(writtenAt + seconds))
    }

    // Contract 1: the config's `.seconds(n)` default is resolved at each write, not at init.
    @Test("the config's seconds expiry counts from each write, not from the storage's creation")
    func configSecondsCountFromEachWrite() throws {
        let clock = TestClock()
        let start = clock.now
        let memory = MemoryStorage<String>(config: MemoryConfig(expiry: .seconds(30)), now: clock.function)
        try memory.setObject("first", forKey: "first")
        clock.advance(by: 20)
        try memory.setObject("second", forKey: "second")
        #expect(try memory.entry(forKey: "first").expiry == .date(start + 30))
        #expect(try memory.entry(forKey: "second").expiry == .date(start + 50))
        clock.advance(by: 15) // start + 35
        #expect(try !memory.existsObject(forKey: "first"))
        #expect(try memory.existsObject(forKey: "second"))
    }

    // Contract 2: an expired value is not returned as valid; `entry` flags it until removed.
    @Test("an expired value throws expired, does not exist, is returned flagged by entry, and removeExpiredObjects removes it")
    func expiredValue() throws {
        let clock = TestClock()
        let memory = MemoryStorage<String>(now: clock.function)
        let expiresAt = clock.now + 5
        try memory.setObject("stale", forKey: "stale", expiry: .seconds(5))
        try memory.setObject("fresh", forKey: "fresh", expiry: .seconds(500))
        try memory.setObject("forever", forKey: "forever")
        clock.advance(by: 6)

        let error = storageError { _ = try memory.object(forKey: "stale") }
        guard case .expired(let date, _)? = error else {
            Issue.record("expected expired, got \(String(describing: error))")
            return
        }
        #expect(date == expiresAt)
        #expect(try !memory.existsObject(forKey: "stale"))
        #expect(try memory.isExpiredObject(forKey: "stale"))
        let entry = try memory.entry(forKey: "stale")
        #expect(entry.isExpired)
        #expect(entry.object == "stale")
        #expect(entry.expiry == .date(expiresAt))
        #expect(Set(memory.allKeys) == ["stale", "fresh", "forever"]) // still there until removed

        memory.removeExpiredObjects()
        #expect(storageError { _ = try memory.entry(forKey: "stale") }?.isNotFound == true)
        #expect(try memory.object(forKey: "fresh") == "fresh")
        #expect(try memory.object(forKey: "forever") == "forever")
        #expect(Set(memory.allKeys) == ["fresh", "forever"])
    }

    // Contract 2: a date already in the past is expired at once.
    @Test("a value written with a past date is stored but expired")
    func pastDateIsExpired() throws {
        let clock = TestClock()
        let memory = MemoryStorage<String>(now: clock.function)
        try memory.setObject("v", forKey: "k", expiry: .date(clock.now - 1))
        #expect(try memory.entry(forKey: "k").isExpired)
        #expect(storageError { _ = try memory.object(forKey: "k") }?.isExpired == true)
        memory.removeExpiredObjects()
        #expect(memory.count == 0)
    }

    // Contract 3: the memory layer reads the injected clock only.
    @Test("expiry follows the injected clock, not the system clock")
    func injectedClock() throws {
        let clock = TestClock(Date(timeIntervalSince1970: 0)) // the system clock would call everything expired
        let memory = MemoryStorage<String>(now: clock.function)
        try memory.setObject("v", forKey: "k", expiry: .date(Date(timeIntervalSince1970: 100)))
        #expect(try memory.object(forKey: "k") == "v")
        clock.advance(by: 100)
        #expect(try memory.isExpiredObject(forKey: "k"))
    }

    // MARK: Count limit

    // Contract 5: countLimit holds after every write, oldest written evicted first.
    @Test("countLimit holds after every write and keeps the most recently written", arguments: [1, 2, 5])
    func countLimitHolds(limit: Int) throws {
        let memory = MemoryStorage<Int>(config: MemoryConfig(countLimit: limit))
        for value in 0..<20 {
            try memory.setObject(value, forKey: "k\(value)")
            #expect(memory.count == min(value + 1, limit))
            #expect(Set(memory.allKeys) == Set((max(0, value + 1 - limit)...value).map { "k\($0)" }))
            #if DEBUG
            #expect(memory.cache.checkInvariants())
            #endif
        }
    }

    // Contract 5: a read counts as use, so the least recently used (not the oldest written) goes first.
    @Test("a read counts as use: the least recently used entry is evicted, not the oldest written")
    func readCountsAsUse() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(countLimit: 3))
        for key in ["a", "b", "c"] { try memory.setObject(key, forKey: key) }
        #expect(try memory.object(forKey: "a") == "a") // a is now the most recent; b the least
        try memory.setObject("d", forKey: "d")
        #expect(Set(memory.allKeys) == ["a", "c", "d"])
        _ = try memory.entry(forKey: "c") // entry(forKey:) is a read too
        try memory.setObject("e", forKey: "e")
        #expect(Set(memory.allKeys) == ["c", "d", "e"])
    }

    // Contract 5: rewriting a key counts as use and does not count it twice.
    @Test("rewriting a key refreshes it without growing the count")
    func rewriteRefreshes() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(countLimit: 2))
        try memory.setObject("a1", forKey: "a")
        try memory.setObject("b", forKey: "b")
        try memory.setObject("a2", forKey: "a") // a is now the most recent
        #expect(memory.count == 2)
        try memory.setObject("c", forKey: "c")
        #expect(Set(memory.allKeys) == ["a", "c"])
        #expect(try memory.object(forKey: "a") == "a2")
    }

    // MARK: Cost limit

    // Contract 5: totalCostLimit holds with explicit costs, least recently used first.
    @Test("totalCostLimit holds with explicit costs, evicting least recently used first")
    func costLimitWithExplicitCosts() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(totalCostLimit: 10))
        try memory.setObject("a", forKey: "a", cost: 4)
        try memory.setObject("b", forKey: "b", cost: 4)
        #expect(memory.totalCost == 8)
        try memory.setObject("c", forKey: "c", cost: 4) // 12 > 10: a goes
        #expect(Set(memory.allKeys) == ["b", "c"])
        #expect(memory.totalCost == 8)

        _ = try memory.object(forKey: "b") // order is now c, b
        try memory.setObject("d", forKey: "d", cost: 3) // 11 > 10: c goes, not b
        #expect(Set(memory.allKeys) == ["b", "d"])
        #expect(memory.totalCost == 7)

        try memory.setObject("b", forKey: "b", cost: 1) // replacing an entry replaces its cost
        #expect(memory.totalCost == 4)
        try memory.setObject("e", forKey: "e", cost: 6) // exactly the limit: nothing goes
        #expect(Set(memory.allKeys) == ["b", "d", "e"])
        #expect(memory.totalCost == 10)

        memory.removeObject(forKey: "e")
        #expect(memory.totalCost == 4)
        memory.removeAll()
        #expect(memory.totalCost == 0)
    }

    // Contract 5: the `cost:` closure prices values written without an explicit cost.
    @Test("totalCostLimit holds with the cost closure")
    func costLimitWithClosure() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(totalCostLimit: 10), cost: { $0.utf8.count })
        try memory.setObject("aaaa", forKey: "a")
        try memory.setObject("bbb", forKey: "b")
        #expect(memory.totalCost == 7)
        try memory.setObject("cccc", forKey: "c") // 11 > 10: a goes
        #expect(Set(memory.allKeys) == ["b", "c"])
        #expect(memory.totalCost == 7)
        try memory.setObject("x", forKey: "x", cost: 3) // an explicit cost wins over the closure
        #expect(memory.totalCost == 10)
        #expect(Set(memory.allKeys) == ["b", "c", "x"])
    }

    // Contract 5: without a closure or explicit cost, values cost nothing; negative costs count as 0.
    @Test("values cost 0 without a cost closure, and a negative cost counts as 0")
    func defaultCostIsZero() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(totalCostLimit: 1))
        for index in 0..<10 { try memory.setObject("v", forKey: "k\(index)") }
        try memory.setObject("v", forKey: "negative", cost: -5)
        #expect(memory.count == 11)
        #expect(memory.totalCost == 0)
    }

    // Contract 5: an entry that cannot fit is not kept.
    @Test("an entry costlier than the limit is not kept", arguments: [11, 1000])
    func tooCostlyEntryNotKept(cost: Int) throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(totalCostLimit: 10))
        try memory.setObject("old", forKey: "big", cost: 2)
        try memory.setObject("huge", forKey: "big", cost: cost)
        #expect(storageError { _ = try memory.object(forKey: "big") }?.isNotFound == true) // neither the new nor a stale copy
        #expect(memory.totalCost <= 10)
        #if DEBUG
        #expect(memory.cache.checkInvariants())
        #endif
    }

    // Contract 5: limits evict only to make room; an entry that cannot fit makes no room.
    @Test("an entry costlier than the limit does not evict the entries that fit")
    func tooCostlyEntryKeepsOthers() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(totalCostLimit: 10))
        try memory.setObject("a", forKey: "a", cost: 3)
        try memory.setObject("b", forKey: "b", cost: 3)
        try memory.setObject("huge", forKey: "huge", cost: 11)
        #expect(!memory.allKeys.contains("huge"))
        #expect(Set(memory.allKeys) == ["a", "b"], "a value that cannot be cached should not flush the cache")
        #expect(memory.totalCost == 6)
    }

    // MARK: Typed views

    // Views (Contract item 4): `transform()` is a view of the same entries.
    @Test("transform() views share entries, and reading another type throws typeNotMatch")
    func transformSharesEntries() throws {
        let users = MemoryStorage<User>(config: MemoryConfig(countLimit: 3))
        let sameUsers: MemoryStorage<User> = users.transform()
        let strings: MemoryStorage<String> = users.transform(cost: { $0.utf8.count })
        let ann = User(name: "ann", age: 1)

        try users.setObject(ann, forKey: "ann")
        #expect(try sameUsers.object(forKey: "ann") == ann)
        try strings.setObject("hello", forKey: "greeting")
        #expect(try strings.object(forKey: "greeting") == "hello")
        #expect(Set(users.allKeys) == ["ann", "greeting"])
        #expect(users.count == 2)
        #expect(users.totalCost == 5) // the view's own cost closure priced its write

        let error = storageError { _ = try strings.object(forKey: "ann") }
        guard case .typeNotMatch? = error else {
            Issue.record("expected typeNotMatch, got \(String(describing: error))")
            return
        }
        #expect(storageError { _ = try users.entry(forKey: "greeting") } != nil)

        // The limits are the shared cache's: writes through either view count together.
        try strings.setObject("x", forKey: "x")
        try sameUsers.setObject(ann, forKey: "ann2")
        #expect(users.count == 3)
        #expect(!users.allKeys.contains("ann")) // the least recently used of all views went first

        strings.removeObject(forKey: "greeting")
        #expect(storageError { _ = try users.entry(forKey: "greeting") }?.isNotFound == true)
        sameUsers.removeAll()
        #expect(strings.allKeys.isEmpty)
    }

    // MARK: Reference model

    // Contract 5 (and 1, 2): random operations keep the limits, the LRU order and the expiry of a reference model.
    @Test("random operations with limits match a reference model and keep the cache's invariants",
          arguments: [
              ModelCase(seed: 0xC0FF_EE01, countLimit: 0, costLimit: 0),
              ModelCase(seed: 0xC0FF_EE02, countLimit: 1, costLimit: 0),
              ModelCase(seed: 0xC0FF_EE03, countLimit: 5, costLimit: 0),
              ModelCase(seed: 0xC0FF_EE04, countLimit: 0, costLimit: 12),
              ModelCase(seed: 0xC0FF_EE05, countLimit: 4, costLimit: 10),
              ModelCase(seed: 0xC0FF_EE06, countLimit: 8, costLimit: 3),
          ])
    func randomOperationsMatchModel(_ testCase: ModelCase) throws {
        var random = SeededGenerator(seed: testCase.seed)
        let clock = TestClock()
        let config = MemoryConfig(expiry: .seconds(30), countLimit: testCase.countLimit, totalCostLimit: testCase.costLimit)
        let memory = MemoryStorage<Int>(config: config, now: clock.function)
        var model = MemoryModel(countLimit: testCase.countLimit, costLimit: testCase.costLimit)
        let keys = (0..<10).map { "k\($0)" }

        for step in 0..<3000 {
            let key = keys[random.below(keys.count)]
            let operation: String
            switch random.below(100) {
            case 0..<40:
                let value = step
                // Costs stay within the limit: what an entry that cannot fit does is another test's business.
                let cost = random.below(testCase.costLimit > 0 ? min(6, testCase.costLimit + 1) : 6)
                let expiry: Expiry? = switch random.below(4) {
                case 0: nil
                case 1: .never
                case 2: .date(clock.now + Double(random.below(40)))
                default: .seconds(Double(1 + random.below(40)))
                }
                operation = "set(\(key), cost \(cost), expiry \(String(describing: expiry)))"
                try memory.setObject(value, forKey: key, expiry: expiry, cost: cost)
                model.set(key, value: value, cost: cost, expiry: (expiry ?? config.expiry).resolved(from: clock.now))
            case 40..<70:
                operation = "entry(\(key))"
                let expected = model.use(key)
                do {
                    let entry = try memory.entry(forKey: key)
                    let item = try #require(expected, "step \(step): \(operation) found a value the model does not have")
                    try #require(entry.object == item.value, "step \(step): \(operation)")
                    try #require(entry.isExpired == (clock.now >= item.expiry), "step \(step): \(operation)")
                    try #require(entry.expiry == Expiry(storedDate: item.expiry), "step \(step): \(operation)")
                } catch StorageError.notFound {
                    try #require(expected == nil, "step \(step): \(operation) lost a value the model has")
                }
            case 70..<80:
                operation = "remove(\(key))"
                memory.removeObject(forKey: key)
                model.remove(key)
            case 80..<85:
                operation = "removeExpiredObjects"
                memory.removeExpiredObjects()
                model.removeExpired(now: clock.now)
            case 85:
                operation = "removeAll"
                memory.removeAll()
                model.removeAll()
            default:
                let seconds = Double(random.below(6))
                operation = "advance(\(seconds))"
                clock.advance(by: seconds)
            }

            #if DEBUG
            try #require(memory.cache.checkInvariants(), "step \(step): \(operation)")
            #endif
            try #require(memory.count == model.items.count, "step \(step): \(operation)")
            try #require(memory.totalCost == model.totalCost, "step \(step): \(operation)")
            try #require(Set(memory.allKeys) == Set(model.items.map(\.key)), "step \(step): \(operation)")
        }
    }

    /// One configuration of the reference-model test.
    struct ModelCase: Sendable, CustomTestStringConvertible {
        let seed: UInt64
        let countLimit: Int
        let costLimit: Int

        var testDescription: String { "countLimit \(countLimit), totalCostLimit \(costLimit)" }
    }
}

/// The obvious memory cache: items in an array, least recently used first, evicted from the front.
private struct MemoryModel {
    struct Item {
        var key: String
        var value: Int
        var cost: Int
        var expiry: Date
    }

    let countLimit: Int
    let costLimit: Int
    private(set) var items: [Item] = []

    var totalCost: Int { items.reduce(0) { $0 + $1.cost } }

    init(countLimit: Int, costLimit: Int) {
        self.countLimit = countLimit
        self.costLimit = costLimit
    }

    mutating func set(_ key: String, value: Int, cost: Int, expiry: Date) {
        remove(key)
        items.append(Item(key: key, value: value, cost: cost, expiry: expiry))
        while !items.isEmpty, (countLimit > 0 && items.count > countLimit) || (costLimit > 0 && totalCost > costLimit) {
            items.removeFirst()
        }
    }

    /// A read: the item, now the most recently used (expired or not).
    mutating func use(_ key: String) -> Item? {
        guard let position = items.firstIndex(where: { $0.key == key }) else { return nil }
        let item = items.remove(at: position)
        items.append(item)
        return item
    }

    mutating func remove(_ key: String) {
        items.removeAll { $0.key == key }
    }

    mutating func removeExpired(now: Date) {
        items.removeAll { $0.expiry <= now }
    }

    mutating func removeAll() {
        items.removeAll()
    }
}
