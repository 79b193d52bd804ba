import Foundation

/// What the documentation checks know of the package's sources: its root, its Swift files, and the
/// declarations in them (types, and members with their argument labels), read as text. A rough
/// reader, enough for the names documents and doc comments use; it never compiles anything.
struct SourceIndex {
    /// The package's root: the first folder above this file that holds `Package.swift` (found by
    /// walking up, so the test files may move).
    static func packageRoot(from file: String = #filePath) throws -> URL {
        var folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) { return folder }
            folder.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "Package.swift above \(file)"])
    }

    /// The Swift files under `folder` (recursively), as paths.
    static func swiftFiles(under folder: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.map { folder.appendingPathComponent($0).path }.sorted()
    }

    /// One declared member: its name and, for functions, initializers and enum cases with values,
    /// its argument labels (`_` for none); nil labels for a property, a case without values, or a type.
    struct Member: Hashable {
        var name: String
        var labels: [String]?
    }

    /// The types declared (or extended) in the sources, by name (the last component of a nested name).
    private(set) var types: Set<String> = []
    /// The members declared inside each type (its declaration and its extensions), by the type's name.
    private(set) var members: [String: Set<Member>] = [:]
    /// Members declared outside any type.
    private(set) var topLevel: Set<Member> = []

    init(files: [String]) throws {
        for path in files { try add(String(contentsOfFile: path, encoding: .utf8)) }
    }

    /// Reads one file's declarations, tracking which type encloses each by counting braces.
    mutating func add(_ text: String) {
        let lines = Self.codeLines(text)
        var stack: [(type: String, depth: Int)] = []
        var depth = 0
        for (number, line) in lines.enumerated() {
            if let type = Self.typeDeclaration(line) {
                types.insert(type)
                stack.append((type, depth))
            } else if let member = Self.memberDeclaration(line, following: lines[number...]) {
                if let enclosing = stack.last?.type { members[enclosing, default: []].insert(member) } else { topLevel.insert(member) }
            }
            for character in line {
                if character == "{" { depth += 1 }
                if character == "}" {
                    depth -= 1
                    while let last = stack.last, last.depth >= depth { stack.removeLast() }
                }
            }
        }
    }

    /// The type enclosing each line of `text` (nil outside any), by the same brace counting.
    static func enclosingTypes(_ text: String) -> [String?] {
        var result: [String?] = []
        var stack: [(type: String, depth: Int)] = []
        var depth = 0
        for line in codeLines(text) {
            if let type = typeDeclaration(line) { stack.append((type, depth)) }
            result.append(stack.last?.type)
            for character in line {
                if character == "{" { depth += 1 }
                if character == "}" {
                    depth -= 1
                    while let last = stack.last, last.depth >= depth { stack.removeLast() }
                }
            }
        }
        return result
    }

    /// The lines of `text` with comments and string literals blanked (so their braces do not count).
    static func codeLines(_ text: String) -> [String] {
        var inBlockComment = false
        return text.components(separatedBy: "\n").map { line in
            var out = ""
            var inString = false
            var previous: Character = " "
            var skipRest = false
            for character in line where !skipRest {
                if inBlockComment {
                    if previous == "*", character == "/" { inBlockComment = false }
                } else if inString {
                    if character == "\"", previous != "\\" { inString = false }
                } else if character == "\"" {
                    inString = true
                } else if previous == "/", character == "/" {
                    out.removeLast()
                    skipRest = true
                    continue
                } else if previous == "/", character == "*" {
                    out.removeLast()
                    inBlockComment = true
                } else {
                    out.append(character)
                }
                previous = character
            }
            return out
        }
    }

    private static let modifiers: Set<String> = [
        "public", "package", "internal", "private", "fileprivate", "final", "static", "open", "override",
        "mutating", "nonmutating", "nonisolated", "indirect", "convenience", "required", "lazy", "weak", "unowned",
        "@inline(__always)", "@inlinable", "@discardableResult", "@usableFromInline", "@MainActor", "@Sendable",
        "private(set)", "package(set)", "public(set)", "fileprivate(set)", "internal(set)", "dynamic", "@objc", "@testable",
    ]

    /// The words of `line` after its modifiers and attributes.
    private static func words(_ line: String) -> [Substring] {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        while let first = words.first, modifiers.contains(String(first)) || first.hasPrefix("@")
                || (first == "class" && words.dropFirst().first.map { ["func", "var", "let", "subscript"].contains($0) } == true) {
            words.removeFirst()
        }
        return Array(words)
    }

    /// The name of the type `line` declares or extends (the last component of a dotted name).
    static func typeDeclaration(_ line: String) -> String? {
        let words = words(line)
        guard words.count >= 2, ["class", "struct", "enum", "protocol", "actor", "extension"].contains(String(words[0])) else { return nil }
        let name = words[1].prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }
        guard let last = name.split(separator: ".").last, last.first?.isUppercase == true else { return nil }
        return String(last)
    }

    /// The member `line` declares: `func`, `init`, `subscript`, `case`, `var`, `let`, `typealias`.
    static func memberDeclaration(_ line: String, following: ArraySlice<String>) -> Member? {
        let words = words(line)
        guard let keyword = words.first else { return nil }
        switch keyword {
        case "func":
            guard words.count >= 2 else { return nil }
            let name = String(words[1].prefix { $0 != "(" && $0 != "<" })
            return Member(name: name, labels: labels(in: signature(from: line, following: following, after: "func \(name)")))
        case let word where word.hasPrefix("init(") || word.hasPrefix("init?(") || word.hasPrefix("init<") || word == "init" || word.hasPrefix("init!("):
            return Member(name: "init", labels: labels(in: signature(from: line, following: following, after: "init")))
        case "case":
            guard words.count >= 2 else { return nil }
            // `case a, b`, `case a(x: Int)`, `case a = 1`: the first case only is enough for links.
            let rest = line[line.range(of: "case ")!.upperBound...]
            let name = String(rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            guard !name.isEmpty, name.first?.isLowercase == true || name.first == "_" else { return nil }
            if rest.dropFirst(name.count).hasPrefix("(") {
                return Member(name: name, labels: labels(in: signature(from: line, following: following, after: "case \(name)")))
            }
            return Member(name: name, labels: nil)
        case "var", "let", "typealias":
            guard words.count >= 2 else { return nil }
            let name = String(words[1].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            return name.isEmpty ? nil : Member(name: name, labels: nil)
        default:
            return nil
        }
    }

    /// The text between the parentheses of the parameter list that follows `marker` (over several lines).
    private static func signature(from line: String, following: ArraySlice<String>, after marker: String) -> String {
        let joined = following.prefix(12).joined(separator: " ")
        guard let start = joined.range(of: marker) else { return "" }
        var depth = 0
        var angle = 0
        var out = ""
        var started = false
        for character in joined[start.upperBound...] {
            if !started {
                if character == "<" { angle += 1 }
                if character == ">" { angle -= 1 }
                if character == "(", angle == 0 {
                    started = true
                    depth = 1
                }
                continue
            }
            if character == "(" || character == "[" || character == "<" || character == "{" { depth += 1 }
            if character == ")" || character == "]" || character == "}" || (character == ">" && !out.hasSuffix("-")) { depth -= 1 }
            if depth == 0 { break }
            out.append(character)
        }
        return out
    }

    /// The argument labels of a parameter list (`_` for an unlabelled one).
    static func labels(in parameters: String) -> [String] {
        var parts: [String] = []
        var depth = 0
        var current = ""
        for character in parameters {
            if character == "(" || character == "[" || character == "<" || character == "{" { depth += 1 }
            if character == ")" || character == "]" || character == "}" || (character == ">" && !current.hasSuffix("-")) { depth -= 1 }
            if character == ",", depth == 0 {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { parts.append(current) }
        return parts.compactMap { part in
            // An enum case's value without a label (`case set(key: String, SetInfo)`).
            guard let colon = part.firstIndex(of: ":") else { return "_" }
            let names = part[..<colon].split(separator: " ").filter { !$0.hasPrefix("@") }
            guard let first = names.first else { return nil }
            return String(first)
        }
    }

    /// Whether `type` declares a member `name` with `labels` (nil: any member of that name that
    /// takes no arguments list, or any at all when `labels` is nil and the link names a property).
    func declares(_ name: String, labels: [String]?, in type: String?) -> Bool {
        let candidates = type.map { members[$0] ?? [] } ?? topLevel
        return candidates.contains { member in
            guard member.name == name else { return false }
            guard let labels else { return true }
            return member.labels == labels || (labels.isEmpty && member.labels == nil)
        }
    }
}
