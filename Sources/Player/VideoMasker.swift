import CaptureMonitor
import MediaCore
import Protection

/// Decides whether a frame must be masked and makes the masked frame, never writing into the decoder's
/// frame (decoders keep frames as references for later ones).
///
/// Used by one thread at a time: the pipeline in fast mode or the presenter in realtime.
final class VideoMasker {
    private let monitor: CaptureMonitor
    private let style: MaskStyle
    private var cached: (key: String, frame: Frame)?
    private var converter: Scaler?
    private var maskImage: Frame?

    /// Opens the mask image (when the style is `image:`) so a bad path fails before playback.
    init(monitor: CaptureMonitor, style: MaskStyle) throws(PlayerError) {
        self.monitor = monitor
        self.style = style
        if case .image(let path) = style { maskImage = try Self.loadImage(path) }
    }

    /// True when a frame shown from `mediaTime` for `duration` seconds must be masked: protection is on at
    /// its start or comes on before it is replaced. A frame shown across more than
    /// `Pipeline.maximumSteps` changes (a damaged duration of years) is masked without looking at each.
    func mustMask(mediaTime: Double, duration: Double) -> Bool {
        if monitor.decision(atMedia: mediaTime).isProtecting(under: monitor.policy) { return true }
        var time = mediaTime
        var steps = 0
        while let change = monitor.nextChange(afterMedia: time), change < mediaTime + duration {
            if monitor.decision(atMedia: change).isProtecting(under: monitor.policy) { return true }
            time = change
            steps += 1
            if steps >= Pipeline.maximumSteps { return true }
        }
        return false
    }

    /// Returns the frame to present: `frame` itself when unmasked, or a new masked frame with its timestamp.
    func masked(_ frame: Frame) throws(PlayerError) -> Frame {
        do {
            let source = frame.pixelFormat.isPlanarYUV8 ? frame : try convert(frame)
            let format = maskFormat(of: source)
            switch style {
            case .black:
                let black = try cachedFrame(like: source) { target in
                    target.withUnsafeMutablePlanes { VideoMask.fillBlack($0.map(maskPlane), format: format) }
                }
                let copy = black.clone()
                copy.pts = frame.pts
                return copy
            case .image:
                let image = try cachedFrame(like: source) { target in
                    guard let maskImage else { return }
                    let scaled = try Scaler(width: target.width, height: target.height, pixelFormat: target.pixelFormat)
                        .scale(maskImage)
                    scaled.withUnsafeMutablePlanes { imagePlanes in
                        target.withUnsafeMutablePlanes {
                            VideoMask.copy(imagePlanes.map(maskPlane), into: $0.map(maskPlane))
                        }
                    }
                }
                let copy = image.clone()
                copy.pts = frame.pts
                return copy
            case .pixelate:
                let target = try Frame(width: source.width, height: source.height, pixelFormat: source.pixelFormat)
                source.withUnsafeMutablePlanes { sourcePlanes in
                    target.withUnsafeMutablePlanes { targetPlanes in
                        VideoMask.pixelate(
                            sourcePlanes.map(maskPlane), into: targetPlanes.map(maskPlane), format: format,
                            lumaHeight: source.height)
                    }
                }
                target.pts = frame.pts
                return target
            }
        } catch {
            throw PlayerError(.other, "cannot mask a frame: \(error)")
        }
    }

    private func convert(_ frame: Frame) throws(MediaError) -> Frame {
        if converter == nil || converter?.width != frame.width || converter?.height != frame.height {
            converter = Scaler(width: frame.width, height: frame.height, pixelFormat: .yuv420p)
        }
        return try converter!.scale(frame)
    }

    private func maskFormat(of frame: Frame) -> MaskPictureFormat {
        MaskPictureFormat(
            log2ChromaWidth: frame.pixelFormat.log2ChromaWidth, log2ChromaHeight: frame.pixelFormat.log2ChromaHeight,
            isFullRange: frame.isFullRange)
    }

    private func cachedFrame(like frame: Frame, fill: (Frame) throws -> Void) throws -> Frame {
        let key = "\(frame.width)x\(frame.height) \(frame.pixelFormat) \(frame.isFullRange)"
        if let cached, cached.key == key { return cached.frame }
        let made = try Frame(width: frame.width, height: frame.height, pixelFormat: frame.pixelFormat)
        try fill(made)
        cached = (key, made)
        return made
    }

    private static func loadImage(_ path: String) throws(PlayerError) -> Frame {
        do {
            let input = try InputContext(path: path)
            guard let index = input.bestStream(.video) else {
                throw PlayerError(.maskImage, "mask image '\(path)' holds no picture")
            }
            let decoder = try input.makeDecoder(streamIndex: index, threads: 1)
            let packet = Packet()
            let frame = Frame()
            while try input.read(into: packet) == .packet {
                guard packet.streamIndex == index else { continue }
                _ = try decoder.send(packet)
                if try decoder.receive(into: frame) == .output { return frame }
            }
            _ = try decoder.send(nil)
            if try decoder.receive(into: frame) == .output { return frame }
            throw PlayerError(.maskImage, "mask image '\(path)' holds no picture")
        } catch let error as PlayerError {
            throw error
        } catch {
            throw PlayerError(.maskImage, "cannot read mask image '\(path)': \(error)")
        }
    }
}

/// A MediaCore plane seen as a Protection plane.
func maskPlane(_ plane: PlaneBuffer) -> MaskPlane {
    MaskPlane(base: plane.base, stride: plane.linesize, width: plane.rowBytes, height: plane.rows)
}
