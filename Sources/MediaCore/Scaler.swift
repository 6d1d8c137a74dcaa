import CFFmpeg

/// Owner of a `SwsContext` (`sws_getCachedContext`, freed with `sws_freeContext` in `deinit`) that
/// converts pictures to one size and pixel format.
public final class Scaler {
    private var context: OpaquePointer?
    /// Output width in pixels.
    public let width: Int
    /// Output height in pixels.
    public let height: Int
    /// Output pixel format.
    public let pixelFormat: PixelFormat

    /// Creates a scaler producing `width`×`height` pictures in `pixelFormat`.
    public init(width: Int, height: Int, pixelFormat: PixelFormat) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
    }

    deinit { sws_freeContext(context) }

    /// Converts `input` into a new frame (`sws_scale`), keeping its timestamp.
    public func scale(_ input: Frame) throws(MediaError) -> Frame {
        context = sws_getCachedContext(
            context, Int32(input.width), Int32(input.height), input.pixelFormat.raw,
            Int32(width), Int32(height), pixelFormat.raw, SWS_BILINEAR, nil, nil, nil)
        guard context != nil else {
            throw MediaError(
                operation: "sws_getCachedContext",
                message:
                    "cannot convert \(input.width)x\(input.height) \(input.pixelFormat) to \(width)x\(height) \(pixelFormat)",
                kind: .unsupported)
        }
        let result = try Frame(width: width, height: height, pixelFormat: pixelFormat)
        let rows = withUnsafePointer(to: &input.pointer.pointee.data) { inData in
            withUnsafePointer(to: &input.pointer.pointee.linesize) { inLines in
                withUnsafeMutablePointer(to: &result.pointer.pointee.data) { outData in
                    withUnsafeMutablePointer(to: &result.pointer.pointee.linesize) { outLines in
                        sws_scale(
                            context,
                            UnsafeRawPointer(inData).assumingMemoryBound(to: UnsafePointer<UInt8>?.self),
                            UnsafeRawPointer(inLines).assumingMemoryBound(to: Int32.self),
                            0, Int32(input.height),
                            UnsafeMutableRawPointer(outData).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
                            UnsafeMutableRawPointer(outLines).assumingMemoryBound(to: Int32.self))
                    }
                }
            }
        }
        try check(rows, "sws_scale")
        result.pts = input.pts
        return result
    }
}

@available(*, unavailable, message: "a Scaler is one C object with one owner")
extension Scaler: Sendable {}
