import Foundation
import Synchronization

/// Prometheus metrics: counters, gauges and histograms with labels, rendered in the text exposition
/// format. Label values are bounded sets chosen by the code (route patterns, outcomes), never IDs
/// taken from requests.
public final class Metrics: Sendable {
    /// A metric's type, as the exposition format names it.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    struct Family {
        let help: String
        let kind: Kind
        var series: [String: Double] = [:]
        var histograms: [String: Histogram] = [:]
    }

    struct Histogram {
        var buckets: [Int]
        var sum = 0.0
        var count = 0
    }

    /// Upper bounds of histogram buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5]

    private let families = Mutex([String: Family]())
    private let readers = Mutex([(name: String, labels: String, read: @Sendable () -> Double)]())

    /// An empty registry.
    public init() {}

    /// Declares a metric; must precede its first use.
    public func declare(_ name: String, _ kind: Kind, help: String) {
        families.withLock { families in
            if families[name] == nil { families[name] = Family(help: help, kind: kind) }
        }
    }

    /// Adds `amount` to a counter (or gauge).
    public func increment(_ name: String, _ labels: KeyValuePairs<String, String> = [:], by amount: Double = 1) {
        let key = Self.labelText(labels)
        families.withLock { families in families[name]?.series[key, default: 0] += amount }
    }

    /// Sets a gauge.
    public func set(_ name: String, _ labels: KeyValuePairs<String, String> = [:], to value: Double) {
        let key = Self.labelText(labels)
        families.withLock { families in families[name]?.series[key] = value }
    }

    /// Records one observation in a histogram with `latencyBuckets`.
    public func observe(_ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: Double) {
        let key = Self.labelText(labels)
        let bucket = Self.latencyBuckets.firstIndex { value <= $0 } ?? Self.latencyBuckets.count
        families.withLock { families in
            var histogram =
                families[name]?.histograms[key]
                ?? Histogram(buckets: Array(repeating: 0, count: Self.latencyBuckets.count + 1))
            histogram.buckets[bucket] += 1
            histogram.sum += value
            histogram.count += 1
            families[name]?.histograms[key] = histogram
        }
    }

    /// A gauge read when the metrics are rendered.
    public func gauge(
        _ name: String, _ labels: KeyValuePairs<String, String> = [:], help: String,
        read: @escaping @Sendable () -> Double
    ) {
        declare(name, .gauge, help: help)
        let key = Self.labelText(labels)
        readers.withLock { $0.append((name: name, labels: key, read: read)) }
    }

    /// The current value of a counter or gauge series; tests read it.
    public func value(_ name: String, _ labels: KeyValuePairs<String, String> = [:]) -> Double {
        let key = Self.labelText(labels)
        return families.withLock { $0[name]?.series[key] ?? 0 }
    }

    /// Every metric in the Prometheus text format (version 0.0.4).
    public func render() -> String {
        for reader in readers.withLock({ $0 }) {
            let value = reader.read()
            families.withLock { families in families[reader.name]?.series[reader.labels] = value }
        }
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in snapshot.keys.sorted() {
            guard let family = snapshot[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            for key in family.series.keys.sorted() {
                out += "\(name)\(key.isEmpty ? "" : "{\(key)}") \(Self.number(family.series[key] ?? 0))\n"
            }
            for key in family.histograms.keys.sorted() {
                guard let histogram = family.histograms[key] else { continue }
                let prefix = key.isEmpty ? "" : key + ","
                var cumulative = 0
                for (index, bound) in Self.latencyBuckets.enumerated() {
                    cumulative += histogram.buckets[index]
                    out += "\(name)_bucket{\(prefix)le=\"\(Self.number(bound))\"} \(cumulative)\n"
                }
                out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
                out += "\(name)_sum\(key.isEmpty ? "" : "{\(key)}") \(Self.number(histogram.sum))\n"
                out += "\(name)_count\(key.isEmpty ? "" : "{\(key)}") \(histogram.count)\n"
            }
        }
        return out
    }

    static func labelText(_ labels: KeyValuePairs<String, String>) -> String {
        labels.map { "\($0.key)=\"\(escape($0.value))\"" }.joined(separator: ",")
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
