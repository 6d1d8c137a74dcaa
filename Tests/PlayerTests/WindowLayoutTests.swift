import Player
import Testing

@Suite struct WindowLayoutTests {
    @Test func aWiderWindowGetsBarsLeftAndRight() {
        #expect(
            WindowLayout.fit(aspect: 16.0 / 9, width: 1000, height: 360)
                == WindowLayout.Box(x: 180, y: 0, width: 640, height: 360))
    }

    @Test func aTallerWindowGetsBarsAboveAndBelow() {
        #expect(
            WindowLayout.fit(aspect: 16.0 / 9, width: 640, height: 600)
                == WindowLayout.Box(x: 0, y: 120, width: 640, height: 360))
    }

    @Test func theSameShapeFillsTheWindow() {
        #expect(
            WindowLayout.fit(aspect: 4.0 / 3, width: 800, height: 600)
                == WindowLayout.Box(x: 0, y: 0, width: 800, height: 600))
    }

    @Test func nonSquarePixelsAreShownAtTheirDisplayShape() {
        // 720×576 with 16:15 pixels is 4:3 on screen: in a 1024×576 window, 768 wide.
        let box = WindowLayout.fit(aspect: 720.0 * 16 / 15 / 576, width: 1024, height: 576)
        #expect(box == WindowLayout.Box(x: 128, y: 0, width: 768, height: 576))
    }

    @Test func degenerateSizesStayInside() {
        #expect(
            WindowLayout.fit(aspect: 0, width: 10, height: 10) == WindowLayout.Box(x: 0, y: 0, width: 10, height: 10))
        #expect(WindowLayout.fit(aspect: 100, width: 10, height: 10).height == 1)
    }

    @Test func theFirstWindowIsThePictureSizeUpTo720p() {
        #expect(WindowLayout.initialSize(width: 640, height: 360) == (640, 360))
        #expect(WindowLayout.initialSize(width: 1920, height: 1080) == (1280, 720))
        #expect(WindowLayout.initialSize(width: 1080, height: 1920) == (405, 720))
        #expect(WindowLayout.initialSize(width: 0, height: 0) == (640, 360))
    }
}
