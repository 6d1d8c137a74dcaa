/// A value bound to or read from a statement, for either database.
enum SQLValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// The first words of a statement, for error messages.
func summary(_ sql: String) -> String {
    let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    return flat.count > 60 ? String(flat.prefix(57)) + "…" : flat
}

extension SQLValue {
    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var real: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }
    var text: String? { if case .text(let value) = self { value } else { nil } }
    var blob: [UInt8]? { if case .blob(let value) = self { value } else { nil } }
}
