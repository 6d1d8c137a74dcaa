public import FoundationEssentials
import Gateway
import SystemSupport

/// A request body's JSON object, read field by field: each accessor names the field in its error,
/// and `allowing` refuses members the route does not define.
public struct JSONObject: Sendable {
    /// The members in order.
    public let members: [(String, JSON)]

    /// The object with these members.
    package init(members: [(String, JSON)]) {
        self.members = members
    }

    /// Throws 422 when a member's name is not in `names`.
    public func allowing(_ names: Set<String>) throws -> JSONObject {
        if let unknown = members.first(where: { !names.contains($0.0) }) {
            throw APIProblem.invalid("Unknown field '\(printable(unknown.0))'.")
        }
        return self
    }

    private func value(_ name: String) -> JSON? {
        members.first { $0.0 == name }.flatMap { $0.1 == .null ? nil : $0.1 }
    }

    private func missing(_ name: String) -> APIProblem { APIProblem.invalid("Field '\(name)' is required.") }

    /// A string field of at most `maxLength` bytes.
    public func string(_ name: String, maxLength: Int = 1024) throws -> String? {
        guard let value = value(name) else { return nil }
        guard let text = value.string, text.utf8.count <= maxLength else {
            throw APIProblem.invalid("Field '\(name)' must be a string of at most \(maxLength) bytes.")
        }
        return text
    }

    /// A required string field.
    public func requiredString(_ name: String, maxLength: Int = 1024) throws -> String {
        guard let text = try string(name, maxLength: maxLength) else { throw missing(name) }
        return text
    }

    /// A required ID field (`[A-Za-z0-9_-]{1,64}`).
    public func requiredID(_ name: String) throws -> String {
        let text = try requiredString(name, maxLength: 64)
        guard Identifier.isValid(text) else {
            throw APIProblem.invalid("Field '\(name)' must match [A-Za-z0-9_-]{1,64}.")
        }
        return text
    }

    /// A boolean field.
    public func bool(_ name: String) throws -> Bool? {
        guard let value = value(name) else { return nil }
        guard let flag = value.bool else { throw APIProblem.invalid("Field '\(name)' must be true or false.") }
        return flag
    }

    /// A required boolean field.
    public func requiredBool(_ name: String) throws -> Bool {
        guard let flag = try bool(name) else { throw missing(name) }
        return flag
    }

    /// An integer field within `range`.
    public func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let value = value(name) else { return nil }
        guard let number = value.integer, range.contains(number) else {
            throw APIProblem.invalid(
                "Field '\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound).")
        }
        return number
    }

    /// A required integer field within `range`.
    public func requiredInteger(_ name: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard let number = try integer(name, in: range) else { throw missing(name) }
        return number
    }

    /// A finite number field within `range`.
    public func number(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let value = value(name) else { return nil }
        guard let number = value.number, range.contains(number) else {
            throw APIProblem.invalid(
                "Field '\(name)' must be a number from \(range.lowerBound) to \(range.upperBound).")
        }
        return number
    }

    /// A required RFC 3339 timestamp field.
    public func requiredTimestamp(_ name: String) throws -> Date {
        let text = try requiredString(name, maxLength: 40)
        guard let date = RFC3339.parse(text) else {
            throw APIProblem.invalid("Field '\(name)' must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z.")
        }
        return date
    }

    /// An array field.
    public func array(_ name: String, maxCount: Int) throws -> [JSON]? {
        guard let value = value(name) else { return nil }
        guard let items = value.array, items.count <= maxCount else {
            throw APIProblem.invalid("Field '\(name)' must be an array of at most \(maxCount) items.")
        }
        return items
    }
}
