/// The "did you mean" for a mistyped command or option: the known word nearest to what was typed, when
/// it is near enough to be the likely intent.
enum Suggestion {
    /// The candidate closest to `typed` by edit distance (insertions, deletions, substitutions and
    /// swaps of two neighbours each count 1), or nil when none is within a third of the typed length,
    /// at most 3. Ties go to the earlier candidate, so a table's order decides.
    static func closest(to typed: String, among candidates: [String]) -> String? {
        let limit = min(3, max(1, typed.count / 3))
        var best: (word: String, distance: Int)?
        for candidate in candidates where candidate != typed {
            let distance = editDistance(Array(typed), Array(candidate))
            if distance <= limit && distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.word
    }

    /// The optimal-string-alignment distance between `a` and `b`: Levenshtein's, plus a transposition of
    /// two adjacent characters as one edit (`pakcage` is one edit from `package`).
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // Three rows of the dynamic-programming table: two back, the previous one and the current one.
        var twoBack = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], twoBack[j - 2] + 1)
                }
            }
            (twoBack, previous, current) = (previous, current, twoBack)
        }
        return previous[b.count]
    }
}
