import Foundation
import Testing

/// The architecture and format documents name only files and types that exist, and the engine's doc
/// comments link only to declarations that exist with those argument labels: a file moved, a type
/// renamed or a signature changed fails here instead of leaving the documents wrong.
@Suite("Architecture document")
struct ArchitectureDocumentTests {
    /// The documents checked.
    static let documents = ["Docs/Architecture.md", "Docs/Format.md"]
    /// The folders whose doc comments' symbol links are checked: the engine (where it is now, and
    /// where it is moving) and the support types it uses.
    static let engineFolders = ["Sources/StashEngine", "Sources/Stash/Disk"]

    /// Names in code font that are the platform's or the standard library's, not the package's.
    static let platformTypes: Set<String> = [
        "Array", "AsyncStream", "Bool", "Character", "Codable", "Data", "Date", "Decodable", "Dictionary", "DispatchQueue",
        "DispatchSemaphore", "Double", "Encodable", "Error", "FileManager", "Float", "Hasher", "Int", "Int64", "JSONDecoder",
        "JSONEncoder", "MainActor", "Mutex", "Atomic", "NSCondition", "NSLock", "Observable", "Optional", "POSIXError", "Process",
        "Result", "Sendable", "Set", "String", "Substring", "Task", "UInt8", "UInt32", "UInt64", "URL", "URLCache", "URLProtocol",
        "URLRequest", "URLSession", "HTTPURLResponse", "UnsafeRawBufferPointer", "CancellationError", "ObservableObject",
        "DispatchTimeInterval", "DispatchSpecificKey", "PropertyListDecoder", "PropertyListEncoder",
        "UnsafeMutableRawBufferPointer", "Synchronization", "Foundation", "Dispatch",
    ]

    // MARK: The documents

    @Test("Architecture.md and Format.md name only Swift files that exist under Sources or Tests, and only declared types")
    func documentsNameExistingFilesAndTypes() throws {
        let root = try SourceIndex.packageRoot()
        let files = SourceIndex.swiftFiles(under: root.appendingPathComponent("Sources"))
            + SourceIndex.swiftFiles(under: root.appendingPathComponent("Tests"))
        let basenames = Set(files.map { ($0 as NSString).lastPathComponent } + ["Package.swift"])
        let index = try SourceIndex(files: files)
        // The package's modules (`Stash`, `StashHTTP`, …) are names in code font too.
        let package = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let modules = Set(Self.matches(of: #"name: "[A-Za-z]+""#, in: package).map { String($0.dropFirst(7).dropLast()) })
        for document in Self.documents {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            for problem in Self.unknownNames(in: text, basenames: basenames, types: index.types.union(Self.platformTypes).union(modules)) {
                Issue.record("\(document): \(problem)")
            }
        }
    }

    /// The Swift file names and type names in code font that `text` (Markdown) uses and that are
    /// neither among `basenames` nor among `types`.
    static func unknownNames(in text: String, basenames: Set<String>, types: Set<String>) -> [String] {
        var problems: [String] = []
        for file in matches(of: #"[A-Za-z0-9_+]+\.swift\b"#, in: text) where !basenames.contains(file) {
            problems.append("names \(file), which is no file under Sources/ or Tests/")
        }
        var inFence = false
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                inFence.toggle()
                continue
            }
            guard !inFence else { continue }
            for span in matches(of: #"`[^`\n]+`"#, in: line) {
                let content = String(span.dropFirst().dropLast())
                guard let type = typeLike(content), !types.contains(type) else { continue }
                problems.append("names the type `\(type)` (in `\(content)`), which is declared nowhere in Sources/")
            }
        }
        return problems
    }

    /// The type a code span names when it looks like one (`DiskStore`, `Storage<T>`,
    /// `SharedState.Seal`, `DiskStore.catchUp()`): an UpperCamelCase identifier with a lower-case
    /// letter, alone or followed by generics, a member or arguments. Nil for anything else (constants
    /// such as `ENOSPC` or `STASHKD2`, text, paths).
    static func typeLike(_ content: String) -> String? {
        guard let match = content.range(of: #"^[A-Z][A-Za-z0-9]*(?=$|<|\.|\()"#, options: .regularExpression) else { return nil }
        let name = String(content[match])
        guard name.contains(where: \.isLowercase), !content.contains(" ") || content.hasPrefix(name + "(") || content.hasPrefix(name + "<"),
              !content.hasSuffix(".swift"), !content.hasSuffix(".md") else { return nil }
        return name
    }

    static func matches(of pattern: String, in text: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
    }

    // MARK: The engine's doc comments

    @Test("every symbol link in the engine's comments, doc comments and `//` ones alike, names a declaration with those argument labels")
    func engineDocLinksResolve() throws {
        let root = try SourceIndex.packageRoot()
        let index = try SourceIndex(files: SourceIndex.swiftFiles(under: root.appendingPathComponent("Sources")))
        var checked = 0
        for folder in Self.engineFolders {
            for path in SourceIndex.swiftFiles(under: root.appendingPathComponent(folder)) {
                let text = try String(contentsOfFile: path, encoding: .utf8)
                let (count, problems) = Self.brokenLinks(in: text, index: index)
                checked += count
                for problem in problems { Issue.record("\((path as NSString).lastPathComponent): \(problem)") }
            }
        }
        #expect(checked > 100, "the engine's doc comments hold \(checked) symbol links: the folders checked have moved?")
    }

    /// The symbol links (` ``…`` `) in the comments of `text` (`///` and `//`: a renaming script
    /// rewrites both, and a link left stale in either misleads) that resolve to no declaration of
    /// `index`, and how many links there were.
    static func brokenLinks(in text: String, index: SourceIndex) -> (count: Int, problems: [String]) {
        let lines = text.components(separatedBy: "\n")
        let enclosing = SourceIndex.enclosingTypes(text)
        let fileTypes = Set(lines.compactMap(SourceIndex.typeDeclaration))
        var count = 0
        var problems: [String] = []
        for (number, line) in lines.enumerated() where line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
            // The symbol the comment documents: the first code line after it (a type declared there is a scope too).
            let documented = lines[(number + 1)...].first { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("///") }
            var scopes: [String?] = [enclosing[number]]
            if let documented, let type = SourceIndex.typeDeclaration(documented) { scopes.append(type) }
            scopes += fileTypes.sorted().map(Optional.some)
            scopes.append(nil)
            for span in matches(of: #"``[^`]+``"#, in: line) {
                count += 1
                let link = String(span.dropFirst(2).dropLast(2))
                if !resolves(link, scopes: scopes, index: index) {
                    problems.append("line \(number + 1): ``\(link)`` names no declaration with these argument labels")
                }
            }
        }
        return (count, problems)
    }

    /// Whether `link` (`Type`, `Type/member`, `member(label:)`, `Type/member(label:)-disambiguation`)
    /// names a declaration: the member in the named type, or in one of `scopes` when no type is named.
    static func resolves(_ link: String, scopes: [String?], index: SourceIndex) -> Bool {
        var components = link.split(separator: "/").map(String.init)
        if components.first == "Stash" || components.first == "StashEngine" { components.removeFirst() }
        guard var last = components.popLast() else { return false }
        // A disambiguation suffix (`-(_,Data,_)`, `-swift.property`) after the name or the arguments.
        if let close = last.firstIndex(of: ")") {
            last = String(last[...close])
        } else if let dash = last.firstIndex(of: "-") {
            last = String(last[..<dash])
        }
        let name = String(last.prefix { $0 != "(" })
        var labels: [String]?
        if last.contains("(") {
            labels = last.drop { $0 != "(" }.dropFirst().dropLast().split(separator: ":", omittingEmptySubsequences: true).map(String.init)
        }
        if labels == nil, name.first?.isUppercase == true, index.types.contains(name) || platformTypes.contains(name) {
            return components.last.map { index.types.contains($0) } ?? true // a type (nested in the named one)
        }
        if let type = components.last { return index.declares(name, labels: labels, in: type) }
        return scopes.contains { index.declares(name, labels: labels, in: $0) }
    }

    // MARK: The checks can fail

    @Test("a document naming a missing Swift file or an undeclared type is reported")
    func plantedNamesAreReported() {
        let text = """
        `DiskStore` keeps its state in `DiskStore.swift`; `Storage<T>` and `Date` are fine, `ENOSPC` is no type.
        `IndexSnapshot` went away with `IndexSnapshot.swift`.
        ```
        `InsideAFence` is not prose.
        ```
        """
        let problems = Self.unknownNames(in: text, basenames: ["DiskStore.swift"], types: ["DiskStore", "Storage", "Date"])
        #expect(problems.count == 2, "\(problems)")
        #expect(problems.contains { $0.contains("IndexSnapshot.swift") })
        #expect(problems.contains { $0.contains("`IndexSnapshot`") })
    }

    @Test("a doc link with changed argument labels, or to a missing member or type, is reported")
    func plantedLinksAreReported() throws {
        var index = try SourceIndex(files: [])
        index.add("""
        struct Engine {
            static func open(_ url: URL, readOnly: Bool,
                             maxSize: Int) throws -> Engine { fatalError() }
            var count: Int
            enum Record {
                case set(key: String, Int), clear
            }
        }
        """)
        let text = """
        extension Engine {
            /// Opens with ``open(_:readOnly:maxSize:)``, counts ``count``, sets ``Engine/Record/set(key:_:)``.
            /// Broken: ``open(_:maxSize:durable:)``, ``Engine/close()``, ``Missing/thing``, ``sync(_:)``.
            func helper() {
                // As ``open(_:readOnly:maxSize:)`` does; broken: ``Engine/Thresholds/step``.
            }
        }
        """
        let (count, problems) = Self.brokenLinks(in: text, index: index)
        #expect(count == 9)
        #expect(problems.count == 5, "\(problems)")
    }
}
