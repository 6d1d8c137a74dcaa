internal import CMicroHTTPD
import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport

// libmicrohttpd's callbacks. Each is a plain nonisolated function: libmicrohttpd calls them on its own
// threads. `cls` is always the server, retained from `start` until after MHD_stop_daemon in `stop`.

/// One request in flight, from its complete header to `MHD_OPTION_NOTIFY_COMPLETED`.
///
/// `@unchecked Sendable`: libmicrohttpd calls every callback of one request on the connection's own
/// pool thread, one at a time, so the mutable fields are never touched concurrently.
final class RequestContext: @unchecked Sendable {
    let connection: ConnectionState
    let method: String
    let target: String
    let headers: HTTPHeaders
    var body: RequestBody
    var rejection: Rejection?

    init(connection: ConnectionState, method: String, target: String, headers: HTTPHeaders, maxBodyBytes: Int) {
        self.connection = connection
        self.method = method
        self.target = target
        self.headers = headers
        body = RequestBody(cap: maxBodyBytes)
    }
}

/// Collects header fields for `MHD_get_connection_values`.
private final class HeaderCollector {
    var fields: [(String, String)] = []
}

private func collectHeader(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<HeaderCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.fields.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

private func server(_ cls: UnsafeMutableRawPointer?) -> HTTPServer {
    Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
}

/// `MHD_OPTION_UNESCAPE_CALLBACK`: leaves the target exactly as sent, so the application decides what
/// a percent-escape means (and `%00` never cuts a C string short).
func keepTargetEscaped(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ uri: UnsafeMutablePointer<CChar>?
) -> Int {
    guard let uri else { return 0 }
    return strlen(uri)
}

/// `MHD_OPTION_NOTIFY_CONNECTION`: a connection opened or closed.
func connectionChanged(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let connection, let socketContext else { return }
    let watchdog = server(cls).watchdog
    if code == .CONNECTION_NOTIFY_STARTED {
        let state = ConnectionState(
            socket: cmhd_connection_fd(connection),
            remoteAddress: addressText(cmhd_connection_client_address(connection)),
            now: monotonicSeconds())
        watchdog.add(state)
        // Retained into the socket context; released below at MHD_CONNECTION_NOTIFY_CLOSED, which
        // libmicrohttpd always sends for a connection it reported as started.
        socketContext.pointee = Unmanaged.passRetained(state).toOpaque()
    } else if let pointer = socketContext.pointee {
        let state = Unmanaged<ConnectionState>.fromOpaque(pointer).takeRetainedValue()
        socketContext.pointee = nil
        state.closed()
        watchdog.remove(state)
    }
}

/// `MHD_OPTION_URI_LOG_CALLBACK`: the request line arrived. Records the raw target (with its query,
/// which libmicrohttpd would otherwise split and rewrite) and starts the header deadline.
func requestLineArrived(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let uri, let connection, let pointer = cmhd_connection_socket_context(connection) else { return nil }
    let state = Unmanaged<ConnectionState>.fromOpaque(pointer).takeUnretainedValue()
    state.requestLineArrived(String(cString: uri), now: monotonicSeconds())
    return nil
}

/// `MHD_OPTION_NOTIFY_COMPLETED`: the request is over; releases its context.
func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let requestContext, let pointer = requestContext.pointee else { return }
    // Balances the retain taken when the header was complete (in `handleRequest`).
    let context = Unmanaged<RequestContext>.fromOpaque(pointer).takeRetainedValue()
    requestContext.pointee = nil
    context.connection.requestCompleted(now: monotonicSeconds())
}

/// `MHD_OPTION_EXTERNAL_LOGGER`: the daemon's diagnostics, formatted with `vsnprintf`.
func daemonLogged(_ cls: UnsafeMutableRawPointer?, _ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer?) {
    guard let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let message = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    server(cls).configuration.log("http: " + message.trimmingSpacesAndLineBreaks())
}

/// The access handler: called once when the header is complete, once per piece of body, and once
/// more when the body is complete.
func handleRequest(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?,
    _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let connection, let requestContext, let uploadDataSize else { return .NO }
    let server = server(cls)
    guard let pointer = requestContext.pointee else {
        return server.headerComplete(
            connection, url: url, method: method, version: version, requestContext: requestContext)
    }
    let context = Unmanaged<RequestContext>.fromOpaque(pointer).takeUnretainedValue()
    if uploadDataSize.pointee > 0 {
        let count = uploadDataSize.pointee
        uploadDataSize.pointee = 0
        return server.bodyArrived(context, bytes: UnsafeRawBufferPointer(start: uploadData, count: count))
    }
    // The body is complete: the application takes over, unless the watchdog already answered 408.
    guard context.connection.bodyComplete() else { return .NO }
    if let rejection = context.rejection {
        return server.queue(server.rejectionResponder(rejection), on: connection, closing: true)
    }
    let (path, query) = splitTarget(context.target)
    let peer = context.connection.remoteAddress
    let request = HTTPRequest(
        method: context.method, path: path, query: query, headers: context.headers, body: context.body.bytes,
        remoteAddress: server.configuration.trustedProxies.client(
            peer: peer, forwardedFor: context.headers.values("X-Forwarded-For")),
        peerAddress: peer)
    return server.queue(server.handler(request), on: connection, closing: false)
}

extension HTTPServer {
    /// The first call for a request: claims it from the watchdog, reads the header and screens it.
    fileprivate func headerComplete(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let pointer = cmhd_connection_socket_context(connection) else { return .NO }
        let state = Unmanaged<ConnectionState>.fromOpaque(pointer).takeUnretainedValue()
        guard case .claimed(let recorded) = state.beginRequest(now: monotonicSeconds()) else { return .NO }
        let collector = HeaderCollector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND, collectHeader, Unmanaged.passUnretained(collector).toOpaque())
        }
        let target = recorded ?? url.map { String(cString: $0) } ?? "/"
        let context = RequestContext(
            connection: state, method: method.map { String(cString: $0) } ?? "",
            target: target, headers: HTTPHeaders(collector.fields), maxBodyBytes: configuration.maxBodyBytes)
        // Retained into libmicrohttpd's per-request pointer; `requestCompleted` releases it.
        requestContext.pointee = Unmanaged.passRetained(context).toOpaque()
        let versionText = version.map { String(cString: $0) } ?? ""
        if let rejection = configuration.screen(version: versionText, target: target, headers: context.headers) {
            // Answered now, before any body: the body deadline no longer applies.
            guard state.bodyComplete() else { return .NO }
            return queue(rejectionResponder(rejection), on: connection, closing: true)
        }
        return .YES
    }

    /// A piece of body: kept up to the cap, then counted and thrown away so the 413 can be sent once
    /// the body is over; a client that keeps sending far past the cap is disconnected.
    fileprivate func bodyArrived(_ context: RequestContext, bytes: UnsafeRawBufferPointer) -> MHD_Result {
        let keepReading = context.body.append(bytes)
        if context.body.overCap { context.rejection = configuration.bodyTooLarge }
        return keepReading ? .YES : .NO
    }

    /// Builds libmicrohttpd's response for `response` and queues it.
    func queue(_ response: HTTPResponse, on connection: OpaquePointer, closing: Bool) -> MHD_Result {
        var response = response
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            // .RESPMEM_MUST_COPY: libmicrohttpd copies the bytes, so the array need not outlive the call.
            made = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!),
                    .RESPMEM_MUST_COPY)
            }
        case .file(let region):
            switch openRegion(region) {
            case .success(let descriptor):
                // The response owns the descriptor from here and closes it when it is destroyed.
                made = MHD_create_response_from_fd_at_offset64(region.length, descriptor, region.offset)
                if made == nil { Glibc.close(descriptor) }
            case .failure(let message):
                configuration.log("http: \(message)")
                response = HTTPResponse(
                    status: 500, headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
                    body: .bytes(Array("The file could not be read.\n".utf8)))
                return queue(response, on: connection, closing: closing)
            }
        case .stream(let stream):
            stream.attach(connection)
            register(stream)
            // A stream that starts once `stop` has ended the others ends at once: MHD_stop_daemon must
            // not meet its suspended connection. Registered first, so `stop` finds it otherwise.
            if isStopping { stream.finish() }
            // Retained for the response's content reader; `streamReleased` balances it when
            // libmicrohttpd destroys the response.
            let context = Unmanaged.passRetained(StreamBinding(server: self, stream: stream)).toOpaque()
            made = MHD_create_response_from_callback(cmhd_size_unknown64(), 4096, readStream, context, streamReleased)
            if made == nil {
                // No response took the binding: undo what streamReleased would have.
                Unmanaged<StreamBinding>.fromOpaque(context).release()
                unregister(stream)
                stream.close()
            }
        }
        guard let made else { return .NO }
        defer { MHD_destroy_response(made) }
        for field in response.headers where isToken(field.name) && isFieldValue(field.value) {
            _ = MHD_add_response_header(made, field.name, field.value)
        }
        if closing || isStopping { _ = MHD_add_response_header(made, "Connection", "close") }
        return MHD_queue_response(connection, UInt32(response.status), made)
    }

    private func openRegion(_ region: FileRegion) -> Result<Int32, RegionError> {
        let descriptor = Glibc.open(region.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            return .failure(RegionError("open(\(region.path)): \(String(cString: strerror(errno)))"))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size >= 0,
            UInt64(info.st_size) >= region.offset + region.length
        else {
            Glibc.close(descriptor)
            return .failure(RegionError("fstat(\(region.path)): shorter than the range asked for"))
        }
        return .success(descriptor)
    }
}

private struct RegionError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// True when `value` can go into a header field: no control characters but tab.
private func isFieldValue(_ value: String) -> Bool {
    value.utf8.allSatisfy { $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }
}

/// The server and the stream one event-stream response reads from.
private final class StreamBinding {
    let server: HTTPServer
    let stream: EventStream

    init(server: HTTPServer, stream: EventStream) {
        self.server = server
        self.stream = stream
    }
}

/// The content reader of an event-stream response.
private func readStream(
    _ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int
) -> Int {
    guard let cls, let buffer else { return cmhd_content_reader_end_with_error() }
    let binding = Unmanaged<StreamBinding>.fromOpaque(cls).takeUnretainedValue()
    return binding.stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
}

/// The response was destroyed: the stream's connection is gone.
private func streamReleased(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let binding = Unmanaged<StreamBinding>.fromOpaque(cls).takeRetainedValue()
    binding.server.unregister(binding.stream)
    binding.stream.close()
}

/// Splits a raw request target at its first `?`.
package func splitTarget(_ target: String) -> (path: String, query: String?) {
    guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (target, nil) }
    return (String(target[..<mark]), String(target[target.utf8.index(after: mark)...]))
}
