import Gateway
import HTTPServer
import Synchronization

/// The order of one session event stream: the opening events (the current state, or on a resumed
/// stream the stored events it missed) go out first, live events that arrive meanwhile wait, and
/// afterwards an event whose ID is not above the last one sent is dropped, since the client has it.
/// A revocation ends the stream.
final class EventGate: Sendable {
    private struct State {
        var open = false
        var waiting: [(SessionEvent, Int64?)] = []
        var lastID: Int64 = 0
        var ended = false
    }

    private let state = Mutex(State())

    /// Sends `event` now, or keeps it until `open`; false once the stream can take no more.
    func deliver(_ event: SessionEvent, id: Int64?, to stream: EventStream) -> Bool {
        state.withLock { state in
            guard !state.ended else { return false }
            guard state.open else {
                state.waiting.append((event, id))
                return true
            }
            return Self.send(event, id: id, to: stream, &state)
        }
    }

    /// Sends `opening`, then what waited, and lets live events through from now on.
    func open(with opening: [(SessionEvent, Int64?)], after lastID: Int64, to stream: EventStream) {
        state.withLock { state in
            state.lastID = lastID
            for (event, id) in opening + state.waiting where !state.ended {
                _ = Self.send(event, id: id, to: stream, &state)
            }
            state.waiting = []
            state.open = true
        }
    }

    /// Sends under the gate's lock, so events leave in the order they were let through.
    private static func send(_ event: SessionEvent, id: Int64?, to stream: EventStream, _ state: inout State) -> Bool {
        if let id {
            guard id > state.lastID else { return true }
            state.lastID = id
        }
        guard stream.send(Representation.event(event, id: id)) else {
            state.ended = true
            return false
        }
        if case .revoked = event {
            state.ended = true
            stream.finish()
            return false
        }
        return true
    }
}
