import FoundationEssentials
import Synchronization

/// Prometheus metrics: counters, gauges and histograms with labels, rendered in the text exposition
/// format. Label values are bounded sets chosen by the code (route patterns, outcomes), never IDs
/// taken from requests.
///
/// Each metric family has its own lock; hot paths keep the `Family` handle and precomputed label text
/// so a request costs one short critical section per metric and no name lookup.
public final class Metrics: Sendable {
    /// A metric's type, as the exposition format names it.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// Upper bounds of histogram buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5]

    /// One metric family: its series by label text.
    public final class Family: Sendable {
        struct Histogram {
            var buckets = [Int](repeating: 0, count: Metrics.latencyBuckets.count + 1)
            var sum = 0.0
            var count = 0
        }

        struct Series {
            var values: [String: Double] = [:]
            var histograms: [String: Histogram] = [:]
            var readers: [String: @Sendable () -> Double] = [:]
        }

        /// The metric's name.
        public let name: String
        let help: String
        let kind: Kind
        let series = Mutex(Series())

        init(name: String, help: String, kind: Kind) {
            self.name = name
            self.help = help
            self.kind = kind
        }

        /// Adds `amount` to the series with `labelText` (from `Metrics.labelText`).
        public func increment(labelText: String = "", by amount: Double = 1) {
            series.withLock { $0.values[labelText, default: 0] += amount }
        }

        /// Sets the series with `labelText`.
        public func set(labelText: String = "", to value: Double) {
            series.withLock { $0.values[labelText] = value }
        }

        /// Records one observation in the histogram series with `labelText`.
        public func observe(labelText: String = "", _ value: Double) {
            let bucket = Metrics.latencyBuckets.firstIndex { value <= $0 } ?? Metrics.latencyBuckets.count
            series.withLock { series in
                series.histograms[labelText, default: Histogram()].buckets[bucket] += 1
                series.histograms[labelText, default: Histogram()].sum += value
                series.histograms[labelText, default: Histogram()].count += 1
            }
        }

        /// The current value of the series with `labelText`.
        public func value(labelText: String = "") -> Double {
            series.withLock { $0.values[labelText] ?? 0 }
        }

        func render() -> String {
            let snapshot = series.withLock { $0 }
            var values = snapshot.values
            for (labels, read) in snapshot.readers { values[labels] = read() }
            var out = "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
            for key in values.keys.sorted() {
                out += "\(name)\(key.isEmpty ? "" : "{\(key)}") \(Metrics.number(values[key] ?? 0))\n"
            }
            for key in snapshot.histograms.keys.sorted() {
                guard let histogram = snapshot.histograms[key] else { continue }
                let prefix = key.isEmpty ? "" : key + ","
                var cumulative = 0
                for (index, bound) in Metrics.latencyBuckets.enumerated() {
                    cumulative += histogram.buckets[index]
                    out += "\(name)_bucket{\(prefix)le=\"\(Metrics.number(bound))\"} \(cumulative)\n"
                }
                out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
                out += "\(name)_sum\(key.isEmpty ? "" : "{\(key)}") \(Metrics.number(histogram.sum))\n"
                out += "\(name)_count\(key.isEmpty ? "" : "{\(key)}") \(histogram.count)\n"
            }
            return out
        }
    }

    private let families = Mutex([String: Family]())

    /// An empty registry.
    public init() {}

    /// The family `name`, declared with `kind` and `help` on first use.
    @discardableResult
    public func family(_ name: String, _ kind: Kind, help: String) -> Family {
        families.withLock { families in
            if let existing = families[name] { return existing }
            let family = Family(name: name, help: help, kind: kind)
            families[name] = family
            return family
        }
    }

    /// Declares a metric; must precede its first use by name.
    public func declare(_ name: String, _ kind: Kind, help: String) {
        family(name, kind, help: help)
    }

    /// Adds `amount` to a declared counter (or gauge).
    public func increment(_ name: String, _ labels: KeyValuePairs<String, String> = [:], by amount: Double = 1) {
        families.withLock { $0[name] }?.increment(labelText: Self.labelText(labels), by: amount)
    }

    /// A gauge read when the metrics are rendered.
    public func gauge(
        _ name: String, _ labels: KeyValuePairs<String, String> = [:], help: String,
        read: @escaping @Sendable () -> Double
    ) {
        let key = Self.labelText(labels)
        family(name, .gauge, help: help).series.withLock { $0.readers[key] = read }
    }

    /// A counter read when the metrics are rendered, for counts another object keeps.
    public func counter(_ name: String, help: String, read: @escaping @Sendable () -> Double) {
        family(name, .counter, help: help).series.withLock { $0.readers[""] = read }
    }

    /// The current value of a counter or gauge series; tests read it.
    public func value(_ name: String, _ labels: KeyValuePairs<String, String> = [:]) -> Double {
        families.withLock { $0[name] }?.value(labelText: Self.labelText(labels)) ?? 0
    }

    /// Every metric in the Prometheus text format (version 0.0.4).
    public func render() -> String {
        let all = families.withLock { $0 }
        return all.keys.sorted().compactMap { all[$0]?.render() }.joined()
    }

    /// Label pairs as the exposition format writes them inside braces: `a="x",b="y"`.
    public static func labelText(_ labels: KeyValuePairs<String, String>) -> String {
        labels.map { "\($0.key)=\"\(escape($0.value))\"" }.joined(separator: ",")
    }

    /// The value escaped for the exposition format (backslash, quote and newline); most values need
    /// nothing, so that case costs one scan.
    private static func escape(_ value: String) -> String {
        let special: (UInt8) -> Bool = { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }
        guard value.utf8.contains(where: special) else { return value }
        var out: [UInt8] = []
        for byte in value.utf8 {
            if special(byte) { out.append(UInt8(ascii: "\\")) }
            out.append(byte == 0x0A ? UInt8(ascii: "n") : byte)
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
