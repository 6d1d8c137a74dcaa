import Player
import Testing

@Suite struct FrameTimingTests {
    @Test func earlyFramesWaitForTheClock() {
        #expect(FrameTiming.decide(frame: 1.0, next: 1.04, clock: 0.9) == .wait(1.0 - 0.9))
    }

    @Test func dueFramesArePresented() {
        #expect(FrameTiming.decide(frame: 1.0, next: 1.04, clock: 1.0) == .present)
        #expect(FrameTiming.decide(frame: 1.0, next: 1.04, clock: 1.0395) == .present)
        #expect(FrameTiming.decide(frame: 1.0005, next: nil, clock: 1.0) == .present)
    }

    @Test func lateFramesAreDroppedOnlyWhenTheNextIsDue() {
        // Late, but nothing newer to show: still presented, as ffplay does.
        #expect(FrameTiming.decide(frame: 1.0, next: nil, clock: 2.0) == .present)
        #expect(FrameTiming.decide(frame: 1.0, next: 1.04, clock: 1.04) == .drop)
        #expect(FrameTiming.decide(frame: 1.0, next: 1.04, clock: 1.5) == .drop)
    }
}
