import MediaCore
import MediaFormats
import Protection

/// The two phases of `package STILL --flicker`: the still in `rgb24`, a fresh random mask per pair drawn
/// by the player's `FlickerCompositor` (so a pixel is brightened in one phase and black in the other, and
/// the pair averages to the still in linear light), each phase converted to the encoder's `yuv420p`.
///
/// Luma keeps the mask pixel for pixel; 4:2:0 chroma averages each 2×2 block, so a coloured still's
/// colour survives in a single phase at a quarter of its resolution (a grey one's does not exist).
struct StillFlicker {
    /// Frames per second of a flickering still: each phase is shown at 30 Hz, the pair at 60.
    static let frameRate: Int32 = 60

    private let still: Frame
    private let rectangle: FlickerRectangle
    private let rendered: Frame
    private let converter: Scaler

    /// Prepares the phases of `picture` (any pixel format, already the encoded size) over `area`;
    /// refuses an area that lies wholly outside the picture.
    init(picture: Frame, area: FlickerArea) throws(PackagingError) {
        guard let rectangle = area.rectangle(inWidth: picture.width, height: picture.height) else {
            throw PackagingError(
                .invalidOptions,
                "the --flicker region \(area) lies outside the \(picture.width)×\(picture.height) still")
        }
        self.rectangle = rectangle
        do {
            still = try Scaler(width: picture.width, height: picture.height, pixelFormat: .rgb24).scale(picture)
            rendered = try Frame(width: picture.width, height: picture.height, pixelFormat: .rgb24)
        } catch {
            throw PackagingError(.outputFailed, "cannot prepare the flicker phases: \(error.message)")
        }
        converter = Scaler(width: picture.width, height: picture.height, pixelFormat: .yuv420p)
    }

    /// The first and second phase of a new pair, with a mask from `generator`.
    func pair(using generator: inout some RandomNumberGenerator) throws(MediaError) -> (Frame, Frame) {
        let mask = FlickerMask(width: rectangle.width, height: rectangle.height, using: &generator)
        return (try phase(.first, of: mask), try phase(.second, of: mask))
    }

    private func phase(_ phase: FlickerPhase, of mask: FlickerMask) throws(MediaError) -> Frame {
        still.withUnsafeMutablePlanes { from in
            rendered.withUnsafeMutablePlanes { to in
                FlickerCompositor.render(
                    MaskPlane(
                        base: from[0].base, stride: from[0].linesize, width: from[0].rowBytes, height: from[0].rows),
                    into: MaskPlane(
                        base: to[0].base, stride: to[0].linesize, width: to[0].rowBytes, height: to[0].rows),
                    rectangle: rectangle, mask: mask, phase: phase)
            }
        }
        return try converter.scale(rendered)
    }
}
