import COpenSSL

/// An OpenSSL failure: the call that failed and OpenSSL's own text from its error queue
/// (`ERR_get_error`, `ERR_error_string_n`).
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call or step that failed, such as `EVP_DecryptFinal_ex(AES-256-GCM)`.
    public let operation: String
    /// OpenSSL's text, or GuardPlay's own reason.
    public let message: String

    /// A failure with an explicit reason.
    public init(operation: String, message: String) {
        self.operation = operation
        self.message = message
    }

    /// A failure whose reason is read (and cleared) from OpenSSL's error queue.
    static func fromQueue(_ operation: String) -> CryptoError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return CryptoError(operation: operation, message: "failed") }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return CryptoError(operation: operation, message: text)
    }

    public var description: String { "\(operation): \(message)" }
}

/// Throws the queued OpenSSL error when an EVP call returned something other than 1.
func check(_ status: Int32, _ operation: @autoclosure () -> String) throws(CryptoError) {
    if status != 1 { throw CryptoError.fromQueue(operation()) }
}
