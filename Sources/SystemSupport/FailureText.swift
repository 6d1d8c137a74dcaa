import FoundationEssentials
import Glibc

/// A readable reason for `error` (Foundation's `localizedDescription` is not in FoundationEssentials): for
/// a file-system error, the C library's text for its `errno` and the path; otherwise the error itself.
public func failureText(_ error: any Error) -> String {
    guard let cocoa = error as? CocoaError else { return "\(error)" }
    let path = cocoa.userInfo["NSFilePath"] as? String
    if let posix = cocoa.userInfo["NSUnderlyingError"] as? POSIXError {
        let reason = String(cString: strerror(posix.code.rawValue))
        return path.map { "\(reason) (\($0))" } ?? reason
    }
    return path.map { "\(cocoa.code) (\($0))" } ?? "\(cocoa.code)"
}
