#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// HTTP header fields with case-insensitive names, as a stored response keeps them.
///
/// Names are kept lower-cased (as HTTP/2 sends them); a field received more than once is joined
/// with ", ", which RFC 9110 §5.3 allows for every list-valued field.
public struct HTTPHeaders: Sendable, Hashable, Codable, ExpressibleByDictionaryLiteral, Sequence {
    /// The fields, keyed by lower-cased name.
    public private(set) var fields: [String: String]

    /// Creates header fields from a dictionary; names of any case.
    /// - Parameter fields: Name → value; names differing only in case are joined with ", ".
    public init(_ fields: [String: String] = [:]) {
        self.fields = [:]
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { append(value, forName: name) }
    }

    /// Creates header fields from a dictionary literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init()
        for (name, value) in elements { append(value, forName: name) }
    }

    /// The value of the field called `name` (any case), or nil.
    public subscript(name: String) -> String? {
        get { fields[name.lowercased()] }
        set { fields[name.lowercased()] = newValue }
    }

    /// Adds a value to the field called `name`, joining it to an existing value with ", ".
    /// - Parameters:
    ///   - value: The field value.
    ///   - name: The field name, any case.
    public mutating func append(_ value: String, forName name: String) {
        let key = name.lowercased()
        if let existing = fields[key] { fields[key] = existing + ", " + value } else { fields[key] = value }
    }

    /// Iterates over (lower-cased name, value) pairs in no particular order.
    public func makeIterator() -> Dictionary<String, String>.Iterator { fields.makeIterator() }

    /// The comma-separated members of a list-valued field (RFC 9110 §5.6.1), trimmed, empty ones dropped.
    func listMembers(_ name: String) -> [String] {
        guard let value = self[name] else { return [] }
        return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

extension HTTPHeaders {
    /// The header fields of a Foundation response.
    /// - Parameter response: A response from `URLSession` or a `URLProtocol`.
    public init(_ response: HTTPURLResponse) {
        self.init()
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String else { continue }
            append("\(value)", forName: name)
        }
    }
}
