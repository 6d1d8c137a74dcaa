/// Structured values drawn from a fuzz input, front to back: each read takes the bytes it needs and
/// gives zeros once the input is used up, so every input makes some value and the fuzzer's mutations
/// of a byte change one field.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var position = 0

    init(_ data: UnsafeRawBufferPointer) { bytes = Array(data) }

    /// True when every byte has been taken.
    var isEmpty: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { position += 1 }
        return position < bytes.count ? bytes[position] : 0
    }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in byte() } }

    /// A big-endian integer of `count` bytes (at most 8).
    mutating func integer(_ count: Int) -> UInt64 { (0..<count).reduce(0) { value, _ in value << 8 | UInt64(byte()) } }

    /// A value in `range`.
    mutating func int(in range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound) + 1
        let width = span <= 0x100 ? 1 : span <= 0x1_0000 ? 2 : 4
        return range.lowerBound + Int(integer(width) % span)
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// One of `choices`.
    mutating func pick<T>(_ choices: [T]) -> T { choices[int(in: 0...(choices.count - 1))] }

    /// A string of up to `limit` characters from `alphabet`.
    mutating func string(from alphabet: [Character], limit: Int) -> String {
        String((0..<int(in: 0...limit)).map { _ in pick(alphabet) })
    }
}
