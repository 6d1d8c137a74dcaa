extension String {
    /// The text cut or padded with spaces to `length` UTF-16 units, as
    /// `padding(toLength:withPad: " ", startingAt: 0)` did.
    public func padded(toLength length: Int) -> String {
        let units = utf16.count
        if units >= length { return String(decoding: Array(utf16.prefix(length)), as: UTF16.self) }
        return self + String(repeating: " ", count: length - units)
    }
}
