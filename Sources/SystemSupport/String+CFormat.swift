import Glibc

extension String {
    /// `format` filled in by the C library's `vsnprintf`: the text `String(format:)` gives for the C
    /// conversions (`%.3f`, `%6.1f`, `%.1e`, `%04x`, `%02d`), without Foundation. `%@` is not C: pass
    /// strings by interpolation instead.
    public init(cFormat format: String, _ arguments: CVarArg...) {
        self.init(cFormat: format, arguments, capacity: 128)
    }

    private init(cFormat format: String, _ arguments: [CVarArg], capacity: Int) {
        var needed = 0
        let text = withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: capacity)
            needed = Int(vsnprintf(&buffer, capacity, format, list))
            guard needed >= 0, needed < capacity else { return "" }
            return String(decoding: buffer[..<needed].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        // `vsnprintf` consumes its list: a longer text is formatted again from a fresh one.
        if needed >= capacity {
            self.init(cFormat: format, arguments, capacity: needed + 1)
        } else {
            self = text
        }
    }
}
