import Foundation
import Testing

@testable import Packager

/// The verifier's reading allowance: every file it reads is charged, and a read that would pass the
/// limit is refused before the file is read.
@Suite struct ReadBudgetTests {
    @Test func chargesEveryReadAndRefusesOnceTheLimitWouldPass() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("budget-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("segment.ts").path
        try Data(repeating: 0x47, count: 600).write(to: URL(fileURLWithPath: path))

        let budget = ReadBudget(bytes: 1_000)
        guard case .bytes(let first) = budget.read(path, limit: 1 << 20) else {
            Issue.record("the first read was refused")
            return
        }
        #expect(first.count == 600 && budget.remaining == 400)
        guard case .overBudget = budget.read(path, limit: 1 << 20) else {
            Issue.record("a read past the limit was allowed")
            return
        }
        #expect(budget.remaining == 400)
        guard case .unreadable = budget.read(path, limit: 599) else {
            Issue.record("a file over its own size limit was read")
            return
        }
        guard case .unreadable = budget.read(directory.path, limit: 1 << 20) else {
            Issue.record("a directory was read as a file")
            return
        }
    }
}
