/// The options of a command's help text read back as a table, so the man page, the shell completions and
/// `catalogue`'s help are made from exactly what `--help` prints.
///
/// A row starts on a line indented at most four spaces whose text begins with `--`; its option column
/// holds one or more `--name` words (alternatives joined by `|` or two spaces), each with at most one
/// placeholder (`DIR`, `protect|allow`, `[=SPEC]`); the rest of the line and every following line indented
/// deeper are its description.
struct OptionTable {
    /// One option row.
    struct Row: Equatable {
        /// The option names, without dashes, in the order written.
        var names: [String]
        /// The option column as written: `--out DIR`, `--realtime | --fast`.
        var synopsis: String
        /// The description, its lines joined by single spaces.
        var description: String
        /// The row's lines as the help prints them.
        var lines: [String]
    }

    private(set) var rows: [Row] = []

    init(help: String) {
        var current: (row: Row, indent: Int)?
        for line in help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let indent = line.prefix { $0 == " " }.count
            let text = line.dropFirst(indent)
            if let open = current, !text.isEmpty, indent > open.indent, !text.hasPrefix("--") {
                current?.row.lines.append(line)
                let joined = open.row.description.isEmpty ? String(text) : open.row.description + " " + text
                current?.row.description = joined
                continue
            }
            if let open = current { rows.append(open.row) }
            current = nil
            if indent <= 4, text.hasPrefix("--") {
                let (names, synopsis, description) = OptionTable.split(String(text))
                current = (Row(names: names, synopsis: synopsis, description: description, lines: [line]), indent)
            }
        }
        if let open = current { rows.append(open.row) }
    }

    /// Every option name in the table, in order.
    var names: [String] { rows.flatMap(\.names) }

    /// The row that documents `name`.
    func row(for name: String) -> Row? { rows.first { $0.names.contains(name) } }

    /// Splits a row's first line into its names, its option column and the start of its description.
    private static func split(_ text: String) -> (names: [String], synopsis: String, description: String) {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var names: [String] = []
        var column: [String] = []
        var index = 0
        var placeholderAllowed = false
        while index < words.count {
            let word = words[index]
            if word.hasPrefix("--") {
                let name = word.dropFirst(2).prefix { $0 != "[" && $0 != "=" }
                names.append(String(name))
                placeholderAllowed = !word.contains("=")
            } else if word == "|", index + 1 < words.count, words[index + 1].hasPrefix("--") {
                placeholderAllowed = false
            } else if placeholderAllowed && isPlaceholder(word) {
                placeholderAllowed = false
            } else {
                break
            }
            column.append(word)
            index += 1
        }
        return (names, column.joined(separator: " "), words[index...].joined(separator: " "))
    }

    /// `DIR`, `HOST:PORT`, `protect|allow`: a value's name or its choices, not a description's first word.
    private static func isPlaceholder(_ word: String) -> Bool {
        if word.contains("|") { return true }
        guard let first = word.first, first.isUppercase else { return false }
        return word.allSatisfy { $0.isUppercase || $0.isNumber || ":_-./".contains($0) }
    }
}

extension String {
    /// The option rows of a help text, leaving out the rows of the named options: how `catalogue` shows
    /// `package`'s options as `package` documents them.
    func optionLines(excluding names: Set<String>) -> String {
        OptionTable(help: self).rows.filter { names.isDisjoint(with: $0.names) }.flatMap(\.lines)
            .joined(separator: "\n")
    }
}
