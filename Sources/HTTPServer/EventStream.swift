internal import CMicroHTTPD
import Synchronization

/// A libmicrohttpd connection pointer held by a stream.
///
/// `@unchecked Sendable`: the pointer is only passed to MHD_suspend_connection (on the connection's
/// own thread, under the stream's lock) and MHD_resume_connection (after the lock saw it suspended);
/// libmicrohttpd allows both from any thread, and the connection cannot close while suspended.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

extension EventStream.State {
    /// The connection to resume when it is suspended, clearing the mark; nil otherwise.
    mutating func takeSuspension() -> ConnectionHandle? {
        guard suspended else { return nil }
        suspended = false
        return connection
    }
}

/// The write side of a Server-Sent Events response: the application queues bytes from any thread and
/// the server sends them when the client's connection can take them.
///
/// The stream never pins a server thread. When nothing is queued, the server's content reader
/// suspends the connection (`MHD_suspend_connection`); `send` and `finish` resume it
/// (`MHD_resume_connection`). A connection is suspended only under the stream's lock and only while
/// it has nothing to send, so a resume always follows a suspend. While suspended, libmicrohttpd does
/// not notice a client that went away; the server's periodic heartbeat resumes every stream so such a
/// client is found on the next write.
public final class EventStream: Sendable {
    struct State {
        var pending: [UInt8] = []
        var finished = false
        var failed = false
        var closed = false
        /// The connection while the server is sending this stream; nil before and after.
        var connection: ConnectionHandle?
        var suspended = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    let state = Mutex(State())
    /// How many queued bytes a slow client may fall behind before the stream is cut.
    public let maxPendingBytes: Int

    /// A stream that is cut once more than `maxPendingBytes` wait for a slow client.
    public init(maxPendingBytes: Int = 256 * 1024) {
        self.maxPendingBytes = maxPendingBytes
    }

    /// Queues `bytes` for the client; false when the stream has ended (the bytes are dropped).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let (accepted, resume) = state.withLock { state -> (Bool, ConnectionHandle?) in
            guard !state.finished, !state.closed else { return (false, nil) }
            if state.pending.count + bytes.count > maxPendingBytes {
                state.failed = true
                state.finished = true
            } else {
                state.pending.append(contentsOf: bytes)
            }
            return (!state.failed, state.takeSuspension())
        }
        // Safe outside the lock: the connection stays suspended (and so alive) until this call.
        if let resume { MHD_resume_connection(resume.pointer) }
        return accepted
    }

    /// Ends the stream once what is queued has been sent.
    public func finish() {
        let (resume, attached) = state.withLock { state -> (ConnectionHandle?, Bool) in
            state.finished = true
            return (state.takeSuspension(), state.connection != nil || state.closed)
        }
        if let resume { MHD_resume_connection(resume.pointer) }
        if !attached { close() }
    }

    /// True until the stream has finished or its client has gone.
    public var isOpen: Bool { state.withLock { !$0.finished && !$0.closed } }

    /// Runs `handler` once when the stream ends for any reason; at once when it already has.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.closed { return true }
            state.closeHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// The bytes queued and not yet taken by a connection; tests read a stream through this.
    public func takePending() -> [UInt8] {
        state.withLock { state in
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
    }

    // MARK: Server side

    /// Binds the stream to the connection that will carry it.
    func attach(_ connection: OpaquePointer) {
        state.withLock { $0.connection = ConnectionHandle(pointer: connection) }
    }

    /// Copies queued bytes into `buffer`; suspends the connection and returns 0 when there are none.
    /// Called only by the content reader on the connection's own server thread.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        state.withLock { state -> Int in
            if state.failed { return cmhd_content_reader_end_with_error() }
            if !state.pending.isEmpty {
                let count = min(buffer.count, state.pending.count)
                state.pending.withUnsafeBytes { source in
                    buffer.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
                }
                state.pending.removeFirst(count)
                return count
            }
            if state.finished { return cmhd_content_reader_end_of_stream() }
            guard let connection = state.connection else { return cmhd_content_reader_end_with_error() }
            // Under the lock, so no sender can try to resume before the suspension took effect.
            state.suspended = true
            MHD_suspend_connection(connection.pointer)
            return 0
        }
    }

    /// Marks the stream closed (its connection is gone) and runs the close handlers once.
    func close() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            state.finished = true
            state.connection = nil
            state.suspended = false
            defer { state.closeHandlers.removeAll() }
            return state.closeHandlers
        }
        for handler in handlers { handler() }
    }
}
