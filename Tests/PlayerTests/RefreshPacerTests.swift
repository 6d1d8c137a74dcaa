import Player
import Protection
import Testing

@Suite struct RefreshPacerTests {
    @Test func aMissedVsyncNeverShowsTheSamePhaseTwice() {
        var pacer = RefreshPacer(refreshRate: 60)
        let period = 1.0 / 60
        // Presents on refreshes 0, 1, 2, then 5 (two missed), 6, then 10 (three missed).
        let refreshes = [0, 1, 2, 5, 6, 10, 11]
        var phases: [FlickerPhase] = []
        for refresh in refreshes {
            phases.append(pacer.phase)
            pacer.presented(at: 100 + Double(refresh) * period)
        }
        for index in 1..<phases.count { #expect(phases[index] != phases[index - 1], "phase repeated at \(index)") }
        #expect(pacer.missedVsyncs == 5)
        #expect(pacer.presents == refreshes.count)
        // Seven presents over eleven periods.
        #expect(abs(pacer.measuredRate! - 6.0 / (11 * period)) < 1e-6)
    }

    @Test func pairsStartOnEveryFirstPhaseAndDeadlinesFollowThePeriod() {
        var pacer = RefreshPacer(refreshRate: 0)
        #expect(abs(pacer.period - 1.0 / 60) < 1e-12)
        #expect(pacer.startsPair)
        #expect(pacer.nextDeadline == nil)
        pacer.presented(at: 10)
        #expect(!pacer.startsPair)
        #expect(abs(pacer.nextDeadline! - (10 + 1.0 / 60)) < 1e-9)
        // On time: the grid keeps its phase, so early and late presents do not drift it.
        pacer.presented(at: 10.0170)
        #expect(pacer.startsPair)
        #expect(abs(pacer.nextDeadline! - (10 + 2.0 / 60)) < 1e-9)
        // Late by more than a period: the next deadline is one period after this present.
        pacer.presented(at: 10.1)
        #expect(abs(pacer.nextDeadline! - (10.1 + 1.0 / 60)) < 1e-9)
        #expect(pacer.missedVsyncs == 4)
        #expect(pacer.measuredRate != nil)
    }

    @Test(arguments: [(40.0, true), (49.0, true), (60.0, false), (75.0, false)])
    func aRateUnder50HzIsWarnedAboutOnce(rate: Double, warns: Bool) {
        var pacer = RefreshPacer(refreshRate: 60)
        var warnings: [String] = []
        for present in 0..<Int(rate * 3) {
            pacer.presented(at: Double(present) / rate)
            // Not before a second's worth of presents.
            if let warning = pacer.lowRateWarning() {
                #expect(Double(present + 1) >= rate && present + 1 >= 30)
                warnings.append(warning)
            }
        }
        #expect(warnings.count == (warns ? 1 : 0), "\(warnings)")
        if warns { #expect(warnings[0].contains("\(Int(rate)) Hz, under 50 Hz")) }
    }
}
