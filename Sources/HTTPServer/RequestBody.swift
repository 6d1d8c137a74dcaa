/// A request body as it arrives in pieces: kept up to the server's cap; past the cap it is dropped
/// and counted instead, so the 413 can go out once the body is over, and a client that keeps sending
/// far past the cap is cut off. Pure, so tests and the fuzz targets drive it without a socket.
package struct RequestBody: Sendable {
    /// The largest body kept.
    package let cap: Int
    /// The body so far; empty once it went over the cap.
    package private(set) var bytes: [UInt8] = []
    /// True once the body went over the cap.
    package private(set) var overCap = false
    /// Bytes thrown away since the body went over the cap.
    private var discarded = 0

    /// An empty body with the server's cap.
    package init(cap: Int) {
        self.cap = cap
    }

    /// Adds a piece; false when the client has sent so far past the cap that the connection should
    /// be closed rather than read to the end.
    package mutating func append(_ piece: UnsafeRawBufferPointer) -> Bool {
        if !overCap && bytes.count + piece.count <= cap {
            bytes.append(contentsOf: piece)
            return true
        }
        overCap = true
        bytes = []
        discarded += piece.count
        return discarded <= 4 * max(cap, 64 * 1024)
    }
}
