/// Cuts a byte stream of concatenated top-level JSON arrays (`pw-dump --monitor`) into whole arrays,
/// however the bytes arrive in reads.
public struct JSONArraySplitter: Sendable {
    private var pending: [UInt8] = []
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var start: Int?
    private var scanned = 0
    /// The longest array accepted; a longer one is an error rather than unbounded memory.
    public let limit: Int

    /// Creates a splitter that refuses arrays longer than `limit` bytes.
    public init(limit: Int = 32 << 20) {
        self.limit = limit
    }

    /// Takes more bytes and returns every array they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(PipeWireParseError) -> [[UInt8]] {
        pending.append(contentsOf: bytes)
        var complete: [[UInt8]] = []
        var index = scanned
        while index < pending.count {
            let byte = pending[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""):
                    inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    if depth == 0 {
                        guard byte == UInt8(ascii: "[") else {
                            throw PipeWireParseError(message: "expected '[' at the top level")
                        }
                        start = index
                    }
                    depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    guard depth > 0 else {
                        throw PipeWireParseError(message: "unbalanced '\(Character(UnicodeScalar(byte)))'")
                    }
                    depth -= 1
                    if depth == 0, let first = start {
                        complete.append(Array(pending[first...index]))
                        start = nil
                    }
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                    break
                default:
                    if depth == 0 { throw PipeWireParseError(message: "unexpected text between arrays") }
                }
            }
            index += 1
        }
        if let first = start {
            pending.removeFirst(first)
            scanned = pending.count
            start = 0
            if pending.count > limit { throw PipeWireParseError(message: "an update longer than \(limit) bytes") }
        } else {
            pending.removeAll(keepingCapacity: true)
            scanned = 0
        }
        return complete
    }
}
