import Foundation
import Testing

@testable import Gateway

/// The cursor a node reads other nodes' events with: numbers committed out of order are each read
/// once, late ones included, and a number that never commits is given up after the patience.
struct EventCursorTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func admitsANumberCommittedAfterANewerOneOnce() {
        var cursor = EventCursor(after: 10, patience: 30)
        // 11 and 12 took their numbers first but commit after 13.
        let admitted = [
            cursor.admit(13, at: start), cursor.admit(12, at: start + 1), cursor.admit(12, at: start + 1),
            cursor.admit(13, at: start + 1),
        ]
        #expect(admitted == [true, true, false, false])
        #expect(cursor.newest == 13 && cursor.missing == [11])
        #expect(cursor.isNew(11) && !cursor.isNew(12) && !cursor.isNew(10) && cursor.isNew(14))
        let later = [cursor.admit(14, at: start + 2), cursor.admit(11, at: start + 3), cursor.admit(11, at: start + 3)]
        #expect(later == [true, true, false] && cursor.missing.isEmpty && cursor.newest == 14)
    }

    @Test func givesUpANumberThatNeverCommitsAfterThePatience() {
        var cursor = EventCursor(after: 0, patience: 30)
        cursor.admit(2, at: start)
        cursor.admit(5, at: start + 20)
        cursor.expire(at: start + 29)
        #expect(cursor.missing == [1, 3, 4])
        cursor.expire(at: start + 30)
        #expect(cursor.missing == [3, 4])
        // Given up: a row that commits after that is not read.
        let late = cursor.admit(1, at: start + 31)
        #expect(!late)
        cursor.expire(at: start + 50)
        #expect(cursor.missing.isEmpty && cursor.newest == 5)
    }

    @Test func keepsAtMostItsNumberOfGapsTheOldestGoingFirst() {
        var cursor = EventCursor(after: 0, patience: 30, maxGaps: 4)
        cursor.admit(3, at: start)
        #expect(cursor.missing == [1, 2])
        cursor.admit(6, at: start)
        #expect(cursor.missing == [1, 2, 4, 5])
        cursor.admit(8, at: start)
        #expect(cursor.missing == [2, 4, 5, 7])
        // A jump far past the newest tracks only the last numbers it passed.
        cursor.admit(1_000_000, at: start)
        #expect(cursor.missing == [999_996, 999_997, 999_998, 999_999])
    }

    @Test func aNodeThatStartsTakesTheNumbersWithoutRowsBeforeItsStartAsGaps() {
        // Rows 995…1000 exist but 997, whose transaction is still open, and 1002 committed meanwhile.
        var cursor = EventCursor(startingAt: 1000, recent: [995, 996, 998, 999, 1000, 1002], window: 10, at: start)
        #expect(cursor.newest == 1000 && cursor.missing == [991, 992, 993, 994, 997])
        #expect(cursor.isNew(1002) && cursor.isNew(997) && !cursor.isNew(998))
        let late = cursor.admit(997, at: start + 1)
        #expect(late && cursor.missing == [991, 992, 993, 994])
        // A store with fewer events than the window; and one whose newest row went meanwhile.
        #expect(EventCursor(startingAt: 3, recent: [1, 2, 3], window: 10, at: start).missing.isEmpty)
        let pruned = EventCursor(startingAt: 5, recent: [1, 2], window: 10, at: start)
        #expect(pruned.newest == 5 && pruned.missing == [3, 4])
    }
}
