extension FixedWidthInteger {
    /// `value` rounded to the nearest integer and clamped to `range`; NaN gives the lower bound.
    ///
    /// Media times come from containers, and a container can hold any timestamp: arithmetic on them can
    /// give any `Double`, and `Int(_:)` or `Int64(_:)` trap outside the type's range. Sample counts,
    /// timestamps and seek targets derived from media times are converted with this instead.
    public init(roundingAndClamping value: Double, to range: ClosedRange<Self> = Self.min...Self.max) {
        let rounded = value.rounded()
        if rounded.isNaN || rounded <= Double(range.lowerBound) {
            self = range.lowerBound
        } else if rounded >= Double(range.upperBound) {
            // `Double(Self.max)` rounds up past `Self.max`, so equality must clamp too.
            self = range.upperBound
        } else {
            self = Self(rounded)
        }
    }
}
