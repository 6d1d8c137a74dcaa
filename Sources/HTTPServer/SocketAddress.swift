import FoundationEssentials
import Glibc

/// An IPv4 or IPv6 socket address parsed from a literal (`inet_pton`), for the daemon to bind.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: UInt16) throws(HTTPServerError) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) }
            }
            isIPv6 = false
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) }
            }
            isIPv6 = true
        } else {
            throw HTTPServerError(
                operation: "inet_pton(\(host))", message: "the listen address must be an IPv4 or IPv6 literal")
        }
    }

    /// Why a socket cannot be bound to this address now, as `bind` reports it: nil when it can. It binds
    /// a socket of its own the way libmicrohttpd does (SO_REUSEADDR, IPv6 only for an IPv6 address)
    /// and closes it at once, so a failed daemon start can say what stopped it; libmicrohttpd returns
    /// only NULL.
    func bindFailure() -> String? {
        let family = isIPv6 ? AF_INET6 : AF_INET
        let socket = Glibc.socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return "socket: \(String(cString: strerror(errno))) (\(errorName(errno)))" }
        defer { close(socket) }
        var on: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if isIPv6 { setsockopt(socket, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size)) }
        let length = socklen_t(isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        guard withSockaddr({ Glibc.bind(socket, $0, length) }) != 0 else { return nil }
        let code = errno
        let reason = String(cString: strerror(code)).lowercased() + " (\(errorName(code)))"
        switch code {
        case EADDRINUSE: return reason + ": another program is listening there"
        case EADDRNOTAVAIL: return reason + ": the address is not one of this machine's"
        case EACCES: return reason + ": ports below 1024 need privilege"
        default: return reason
        }
    }

    /// Calls `body` with a pointer to the address, valid only inside the call.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { raw in body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}

/// The numeric text of a client address (`inet_ntop`), or empty.
func addressText(_ address: UnsafePointer<sockaddr>?) -> String {
    guard let address else { return "" }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
        var copy = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
        guard inet_ntop(AF_INET, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "" }
    case AF_INET6:
        var copy = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self).sin6_addr
        guard inet_ntop(AF_INET6, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "" }
    default:
        return ""
    }
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

/// The symbolic name of the errors `bind` gives for an address, or the number.
private func errorName(_ code: Int32) -> String {
    switch code {
    case EADDRINUSE: "EADDRINUSE"
    case EADDRNOTAVAIL: "EADDRNOTAVAIL"
    case EACCES: "EACCES"
    case EAFNOSUPPORT: "EAFNOSUPPORT"
    case EINVAL: "EINVAL"
    default: "errno \(code)"
    }
}
