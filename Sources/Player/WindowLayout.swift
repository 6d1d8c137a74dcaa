/// Where a picture goes in a window: the pure arithmetic behind the video window.
public enum WindowLayout {
    /// A rectangle in window pixels.
    public struct Box: Sendable, Hashable {
        /// Left edge.
        public var x: Int
        /// Top edge.
        public var y: Int
        /// Width.
        public var width: Int
        /// Height.
        public var height: Int

        /// Creates a box.
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// The largest box of shape `aspect` (width over height) that fits a `width`×`height` window,
    /// centred: bars above and below or left and right, never a stretched or cropped picture.
    public static func fit(aspect: Double, width: Int, height: Int) -> Box {
        guard width > 0, height > 0, aspect.isFinite, aspect > 0 else {
            return Box(x: 0, y: 0, width: max(0, width), height: max(0, height))
        }
        var boxWidth = width
        var boxHeight = Int((Double(width) / aspect).rounded())
        if boxHeight > height {
            boxHeight = height
            boxWidth = min(width, Int((Double(height) * aspect).rounded()))
        }
        boxWidth = max(1, boxWidth)
        boxHeight = max(1, boxHeight)
        return Box(x: (width - boxWidth) / 2, y: (height - boxHeight) / 2, width: boxWidth, height: boxHeight)
    }

    /// The window size for a `width`×`height` picture: its own size, scaled down (aspect kept) to fit
    /// within `limit`.
    public static func initialSize(width: Int, height: Int, limit: (width: Int, height: Int) = (1280, 720)) -> (
        width: Int, height: Int
    ) {
        guard width > 0, height > 0 else { return (640, 360) }
        guard width > limit.width || height > limit.height else { return (width, height) }
        let box = fit(aspect: Double(width) / Double(height), width: limit.width, height: limit.height)
        return (box.width, box.height)
    }
}
