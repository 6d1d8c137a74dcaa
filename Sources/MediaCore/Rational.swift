import CFFmpeg

/// A rational number, such as a stream's time base; the Swift value of FFmpeg's `AVRational`.
public struct Rational: Sendable, Hashable, CustomStringConvertible {
    /// The numerator.
    public var numerator: Int32
    /// The denominator.
    public var denominator: Int32

    /// Creates `numerator/denominator`.
    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The value as a double, or 0 when the denominator is 0.
    public var doubleValue: Double {
        denominator == 0 ? 0 : Double(numerator) / Double(denominator)
    }

    /// Rescales `value` from this time base to `other`, rounding to nearest (`av_rescale_q`).
    public func rescale(_ value: Int64, to other: Rational) -> Int64 {
        av_rescale_q(value, av, other.av)
    }

    /// The 90 kHz MPEG clock.
    public static let mpeg90k = Rational(1, 90_000)
    /// FFmpeg's microsecond time base, `AV_TIME_BASE_Q`.
    public static let microseconds = Rational(1, 1_000_000)

    public var description: String { "\(numerator)/\(denominator)" }

    init(_ value: AVRational) {
        self.init(value.num, value.den)
    }

    var av: AVRational { AVRational(num: numerator, den: denominator) }
}

/// FFmpeg's "no timestamp" marker, `AV_NOPTS_VALUE`.
public let noTimestamp: Int64 = cffmpeg_nopts_value()
