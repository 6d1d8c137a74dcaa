import Foundation
import Synchronization

/// A token bucket per client address for refused requests: each refusal takes a token, tokens come
/// back at `rate` a second up to `burst`, and an address with none left is answered 429 until one
/// has come back. Grants never take a token, so a valid session is never throttled, even behind the
/// same address as someone guessing.
///
/// The table holds at most `capacity` addresses: when it is full, addresses whose buckets have
/// refilled (they are no different from new ones) are forgotten, then, if that is not enough, the
/// one that was refused longest ago.
final class RefusalLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let burst: Double
    let rate: Double
    let capacity: Int
    private let buckets = Mutex([String: Bucket]())

    init(burst: Double, rate: Double, capacity: Int) {
        self.burst = max(1, burst)
        self.rate = max(0.001, rate)
        self.capacity = max(1, capacity)
    }

    /// Seconds until an empty bucket has a token again: the `Retry-After` of a 429.
    var retryAfter: Int { Int((1 / rate).rounded(.up)) }

    /// Takes a token for a refusal to `address` at `now` (seconds); false when there is none.
    func allow(_ address: String, now: Double) -> Bool {
        buckets.withLock { buckets in
            if buckets[address] == nil && buckets.count >= capacity { evict(&buckets, now: now) }
            var bucket = buckets[address] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[address] = bucket
            return allowed
        }
    }

    /// Addresses held now.
    var count: Int { buckets.withLock { $0.count } }

    private func evict(_ buckets: inout [String: Bucket], now: Double) {
        buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * rate < burst }
        if buckets.count >= capacity, let oldest = buckets.min(by: { $0.value.updated < $1.value.updated }) {
            buckets[oldest.key] = nil
        }
    }
}
