import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Coders as a parameter: `forCodable(ofType:encoder:decoder:)` and the one-line initializer's `encoder:`/`decoder:`.

@Suite("Codable coders as a parameter")
struct CodableCoderTests {
    struct Event: Codable, Sendable, Equatable {
        var startDate: Date
        var title: String
    }

    @Test("ISO 8601 dates and snake_case keys are stored as configured and read back")
    func strategiesAreUsed() throws {
        let directory = TemporaryDirectory()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let events = try Storage<Event>(name: "Events", directory: directory.url, encoder: encoder, decoder: decoder)
        let event = Event(startDate: Date(timeIntervalSince1970: 1_800_000_000), title: "Launch")
        try events.setObject(event, forKey: "e")
        let stored = try String(decoding: events.transformData().object(forKey: "e"), as: UTF8.self)
        #expect(stored.contains("\"start_date\":\"2027-01-15T08:00:00Z\""), "\(stored)")
        #expect(try events.object(forKey: "e") == event)
        let factory = TransformerFactory.forCodable(ofType: Event.self, encoder: encoder, decoder: decoder)
        #expect(try factory.decode(factory.encode(event)) == event)
    }

    @Test("the defaults keep today's bytes: a plain JSONEncoder's")
    func defaultsKeepTodaysBytes() throws {
        let directory = TemporaryDirectory()
        let events = try Storage<Event>(name: "Events", directory: directory.url)
        let event = Event(startDate: Date(timeIntervalSinceReferenceDate: 100), title: "t")
        try events.setObject(event, forKey: "e")
        let stored = try String(decoding: events.transformData().object(forKey: "e"), as: UTF8.self)
        #expect(stored.contains("\"startDate\":100"), "seconds since 2001, as a plain JSONEncoder writes them: \(stored)")
        #expect(try JSONDecoder().decode(Event.self, from: Data(stored.utf8)) == event)
    }
}
