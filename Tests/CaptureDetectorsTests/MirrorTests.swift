import CaptureDetectors
import CaptureMonitor
import Foundation
import Testing

/// A recorded or hand-written `xrandr --query` text (see Fixtures/README.md).
func xrandrFixture(_ name: String) throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/xrandr/\(name)")
    return try String(contentsOf: url, encoding: .utf8)
}

@Suite struct DisplayLayoutTests {
    @Test func singleOutputIsClear() throws {
        let layout = try DisplayLayout(xrandr: try xrandrFixture("single.txt"))
        #expect(layout.active.map(\.name) == ["eDP-1"])
        #expect(layout.active.first?.rectangle == .init(width: 1920, height: 1080, x: 0, y: 0))
        #expect(layout.mirrors.isEmpty)
        #expect(layout.verdict().state == .clear)
    }

    @Test func xvfbScreenIsOneOutput() throws {
        let layout = try DisplayLayout(xrandr: try xrandrFixture("xvfb.txt"))
        #expect(layout.active == [.init(name: "screen", rectangle: .init(width: 1280, height: 720, x: 0, y: 0))])
        #expect(layout.verdict().state == .clear)
    }

    @Test func sameGeometryIsAMirror() throws {
        let layout = try DisplayLayout(xrandr: try xrandrFixture("clone.txt"))
        #expect(layout.active.map(\.name) == ["eDP-1", "HDMI-1"])
        #expect(layout.mirrors.map { [$0.0.name, $0.1.name] } == [["eDP-1", "HDMI-1"]])
        let verdict = layout.verdict()
        #expect(verdict.state == .capturing)
        #expect(verdict.app == "HDMI-1")
        #expect(verdict.reason.contains("HDMI-1 (1920x1080+0+0) shows the same picture as eDP-1"))
    }

    @Test func smallerOutputAtTheSameOriginIsAMirror() throws {
        let layout = try DisplayLayout(xrandr: try xrandrFixture("clone-smaller.txt"))
        #expect(layout.verdict().state == .capturing)
    }

    @Test func sideBySideIsExtendedNotAMirror() throws {
        for name in ["extended.txt", "extended-left.txt"] {
            let layout = try DisplayLayout(xrandr: try xrandrFixture(name))
            #expect(layout.active.count == 2, "\(name)")
            #expect(layout.mirrors.isEmpty, "\(name)")
            let verdict = layout.verdict()
            #expect(verdict.state == .clear, "\(name)")
            #expect(verdict.reason.hasPrefix("extended desktop"), "\(name)")
        }
        let left = try DisplayLayout(xrandr: try xrandrFixture("extended-left.txt"))
        #expect(left.active.first?.rectangle == .init(width: 1080, height: 1920, x: -1080, y: 0))
    }

    @Test func disconnectedAndSwitchedOffOutputsShowNothing() throws {
        let layout = try DisplayLayout(xrandr: try xrandrFixture("connected-off.txt"))
        #expect(layout.active.map(\.name) == ["eDP-1"])
        #expect(layout.inactive == ["HDMI-1"])
        #expect(layout.verdict().state == .clear)
    }

    /// Recorded from a real Xorg with the dummy driver, which reports its second output `disconnected`
    /// while a CRTC drives it: driven counts, sensed or not.
    @Test func aDrivenOutputCountsEvenWhenReportedDisconnected() throws {
        let clone = try DisplayLayout(xrandr: try xrandrFixture("dummy-clone.txt"))
        #expect(clone.active.map(\.name) == ["DUMMY0", "DUMMY1"])
        #expect(clone.verdict().state == .capturing)
        #expect(clone.verdict().app == "DUMMY1")
        let extended = try DisplayLayout(xrandr: try xrandrFixture("dummy-extended.txt"))
        #expect(extended.active.map(\.rectangle.x) == [0, 1920])
        #expect(extended.verdict().state == .clear)
        let off = try DisplayLayout(xrandr: try xrandrFixture("dummy-off.txt"))
        #expect(off.active.map(\.name) == ["DUMMY0"])
        #expect(off.verdict().state == .clear)
    }

    @Test func onMirrorAllowClearsAMirrorAndNamesIt() throws {
        let verdict = try DisplayLayout(xrandr: try xrandrFixture("clone.txt")).verdict(allowMirror: true)
        #expect(verdict.state == .clear)
        #expect(verdict.reason.contains("--on-mirror allow"))
        #expect(verdict.app == "HDMI-1")
    }

    @Test func garbageIsRefused() throws {
        for name in ["garbage.txt", "truncated.txt"] {
            #expect(throws: DisplayLayoutError.self, "\(name)") {
                try DisplayLayout(xrandr: try xrandrFixture(name))
            }
        }
        #expect(throws: DisplayLayoutError.self) { try DisplayLayout(xrandr: "") }
        // A screen line and nothing active: no output shows the picture, so nothing is known.
        #expect(throws: DisplayLayoutError.self) {
            try DisplayLayout(xrandr: "Screen 0: minimum 8 x 8, current 8 x 8, maximum 8 x 8\nX disconnected\n")
        }
    }

    @Test func geometryParsing() {
        #expect(
            DisplayLayout.Rectangle(geometry: "1920x1080+1920+0") == .init(width: 1920, height: 1080, x: 1920, y: 0))
        #expect(
            DisplayLayout.Rectangle(geometry: "800x600+-800+-10") == .init(width: 800, height: 600, x: -800, y: -10))
        for bad in ["1920x1080", "0x1080+0+0", "1920x1080+0", "1920x1080+0+0+0", "axb+0+0", "(normal", ""] {
            #expect(DisplayLayout.Rectangle(geometry: Substring(bad)) == nil, "\(bad)")
        }
    }
}

/// A sysfs `class/drm` tree on disk: one directory per connector with its `status` and `enabled`.
struct FakeDRMSysfs {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("drm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // The card itself and the version file sit beside the connectors, as in the kernel's tree.
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("card0"), withIntermediateDirectories: true)
        try Data("drm 1.1.0 20060810\n".utf8).write(to: root.appendingPathComponent("version"))
    }

    func connector(_ name: String, status: String?, enabled: String?) throws {
        let directory = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let status { try Data((status + "\n").utf8).write(to: directory.appendingPathComponent("status")) }
        if let enabled { try Data((enabled + "\n").utf8).write(to: directory.appendingPathComponent("enabled")) }
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }
}

@Suite struct DRMConnectorsTests {
    @Test func oneLitConnectorIsClear() throws {
        let sysfs = try FakeDRMSysfs()
        defer { sysfs.remove() }
        try sysfs.connector("card0-eDP-1", status: "connected", enabled: "enabled")
        try sysfs.connector("card0-HDMI-A-1", status: "disconnected", enabled: "disabled")
        try sysfs.connector("card0-DP-1", status: "connected", enabled: "disabled")
        let connectors = DRMConnectors(root: sysfs.root.path)
        #expect(connectors.lit == ["card0-eDP-1"])
        #expect(connectors.dark == ["card0-DP-1", "card0-HDMI-A-1"])
        #expect(connectors.verdict().state == .clear)
    }

    @Test func twoLitConnectorsAreUnknownUnlessMirrorsAreAllowed() throws {
        let sysfs = try FakeDRMSysfs()
        defer { sysfs.remove() }
        try sysfs.connector("card0-eDP-1", status: "connected", enabled: "enabled")
        try sysfs.connector("card1-HDMI-A-1", status: "connected", enabled: "enabled")
        let connectors = DRMConnectors(root: sysfs.root.path)
        #expect(connectors.lit == ["card0-eDP-1", "card1-HDMI-A-1"])
        let verdict = connectors.verdict()
        #expect(verdict.state == .unknown)
        #expect(verdict.reason.contains("cannot tell a mirror from an extended desktop"))
        #expect(connectors.verdict(allowMirror: true).state == .clear)
    }

    @Test func unknownConnectionWithNoEnabledFileCountsAsLit() throws {
        let sysfs = try FakeDRMSysfs()
        defer { sysfs.remove() }
        try sysfs.connector("card0-Virtual-1", status: "connected", enabled: "enabled")
        try sysfs.connector("card0-VGA-1", status: "unknown", enabled: nil)
        #expect(DRMConnectors(root: sysfs.root.path).verdict().state == .unknown)
    }

    @Test func noConnectorMissingTreeOrUnreadableStatusIsUnknown() throws {
        let sysfs = try FakeDRMSysfs()
        defer { sysfs.remove() }
        #expect(DRMConnectors(root: sysfs.root.path).verdict().state == .unknown)
        #expect(DRMConnectors(root: sysfs.root.appendingPathComponent("missing").path).verdict().state == .unknown)
        try sysfs.connector("card0-eDP-1", status: "connected", enabled: "enabled")
        try sysfs.connector("card0-HDMI-A-1", status: nil, enabled: "enabled")
        let broken = DRMConnectors(root: sysfs.root.path)
        #expect(broken.failure != nil)
        #expect(broken.verdict().state == .unknown)
    }
}

@Suite struct MirrorSourceTests {
    @Test func aClonedLayoutIsReportedAsCapturingWithALease() throws {
        let text = try xrandrFixture("clone.txt")
        let clock = ManualClock()
        let monitor = CaptureMonitor(wallClock: { clock.now })
        monitor.attach(
            MirrorSource(interval: 5) {
                (try? DisplayLayout(xrandr: text).verdict())
                    ?? PollVerdict(.unknown, reason: "unreadable", confidence: 0.5)
            })
        defer { monitor.stopAll() }
        let decision = monitor.decision(atMedia: 0)
        #expect(decision.state == .capturing && decision.source == "mirror" && decision.app == "HDMI-1")
        // No renewal within the lease (the next poll is 5 s away): it lapses to unknown.
        clock.advance(10.2)
        #expect(monitor.decision(atMedia: 0).state == .unknown)
    }

    @Test func sysfsBackendReadsTheConnectors() throws {
        let sysfs = try FakeDRMSysfs()
        defer { sysfs.remove() }
        try sysfs.connector("card0-eDP-1", status: "connected", enabled: "enabled")
        let single = CaptureMonitor()
        single.attach(MirrorSource(interval: 5, backend: .sysfs(root: sysfs.root.path), allowMirror: false))
        defer { single.stopAll() }
        #expect(single.decision(atMedia: 0).state == .clear)

        try sysfs.connector("card0-HDMI-A-1", status: "connected", enabled: "enabled")
        let two = CaptureMonitor()
        two.attach(MirrorSource(interval: 5, backend: .sysfs(root: sysfs.root.path), allowMirror: false))
        defer { two.stopAll() }
        let decision = two.decision(atMedia: 0)
        #expect(decision.state == .unknown && decision.source == "mirror")
        let allowed = CaptureMonitor()
        allowed.attach(MirrorSource(interval: 5, backend: .sysfs(root: sysfs.root.path), allowMirror: true))
        defer { allowed.stopAll() }
        #expect(allowed.decision(atMedia: 0).state == .clear)
    }

    @Test func anXDisplayNobodyServesIsUnknown() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A socket path where nothing listens: no X server can ever answer it.
        let display = directory.appendingPathComponent("no-x-server").path + ":0"
        let monitor = CaptureMonitor()
        monitor.attach(MirrorSource(interval: 5, backend: .xrandr(display: display), allowMirror: false))
        defer { monitor.stopAll() }
        let decision = monitor.decision(atMedia: 0)
        #expect(decision.state == .unknown && decision.source == "mirror")
        #expect(decision.reason.contains("xrandr"), "\(decision.reason)")
    }

    @Test func backendFollowsDisplay() {
        #expect(MirrorSource.Backend.detect(environment: ["DISPLAY": ":3"]) == .xrandr(display: ":3"))
        #expect(MirrorSource.Backend.detect(environment: ["DISPLAY": ""]) == .sysfs(root: "/sys/class/drm"))
        #expect(MirrorSource.Backend.detect(environment: [:]) == .sysfs(root: "/sys/class/drm"))
    }
}
