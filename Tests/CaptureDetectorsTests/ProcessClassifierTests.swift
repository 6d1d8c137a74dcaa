import CaptureDetectors
import Testing

@Suite struct ProcessClassifierTests {
    let classifier = ProcessClassifier()

    static let recorders = [
        "obs", "simplescreenrecorder", "kazam", "vokoscreen", "vokoscreenNG", "peek", "recordmydesktop",
        "gpu-screen-recorder", "kooha", "wf-recorder", "wl-screenrec", "grim", "flameshot", "spectacle",
        "gnome-screenshot", "scrot", "maim", "parec", "parecord", "pw-record",
    ]

    @Test(arguments: recorders)
    func knownRecorderByCommAndPath(_ name: String) throws {
        // comm is cut to 15 characters by the kernel; argv[0] keeps the full path.
        let process = ProcessSnapshot(pid: 4321, comm: String(name.prefix(15)), arguments: ["/usr/bin/\(name)"])
        let detection = try #require(classifier.classify(process))
        #expect(detection.app == name)
        #expect(detection.pid == 4321)
        let expected: CaptureKind =
            ["parec", "parecord", "pw-record"].contains(name)
            ? .audio
            : ["grim", "flameshot", "spectacle", "gnome-screenshot", "scrot", "maim"].contains(name)
                ? .screenshot : .screen
        #expect(detection.kind == expected)
    }

    @Test func scriptRunByAnInterpreter() throws {
        let kazam = ProcessSnapshot(pid: 7, comm: "kazam", arguments: ["/usr/bin/python3", "-E", "/usr/bin/kazam"])
        #expect(try #require(classifier.classify(kazam)).app == "kazam")
        let renamed = ProcessSnapshot(pid: 8, comm: "python3", arguments: ["/usr/bin/python3", "/opt/obs"])
        #expect(try #require(classifier.classify(renamed)).app == "obs")
    }

    @Test(arguments: [
        (["ffmpeg", "-video_size", "1024x768", "-f", "x11grab", "-i", ":0.0", "out.mkv"], CaptureKind.screen),
        (["ffmpeg", "-f", "kmsgrab", "-i", "-", "-vf", "hwdownload", "out.mkv"], .screen),
        (["/usr/bin/ffmpeg", "-y", "-f", "pipewiregrab", "-i", "x", "o.mp4"], .screen),
        (["ffmpeg", "-f", "pulse", "-i", "default.monitor", "out.wav"], .audio),
        (["ffmpeg", "-f", "alsa", "-i", "hw:0", "out.wav"], .audio),
    ])
    func ffmpegGrabbing(_ arguments: [String], _ kind: CaptureKind) throws {
        let detection = try #require(classifier.classify(ProcessSnapshot(pid: 9, comm: "ffmpeg", arguments: arguments)))
        #expect(detection.kind == kind)
        #expect(detection.app == "ffmpeg")
    }

    @Test(arguments: [
        ["ffmpeg", "-i", "a.mp4", "b.mkv"],
        ["ffmpeg", "-f", "lavfi", "-i", "testsrc", "-f", "pulse", "default"],
        ["ffmpeg", "-i", "x11grab.mp4", "-f", "matroska", "out.mkv"],
        ["ffmpeg", "-i", "in.wav", "-f", "alsa", "default"],
    ])
    func ffmpegNotGrabbing(_ arguments: [String]) {
        #expect(classifier.classify(ProcessSnapshot(pid: 9, comm: "ffmpeg", arguments: arguments)) == nil)
    }

    @Test func gstreamerPipelines() throws {
        let grab = ProcessSnapshot(
            pid: 3, comm: "gst-launch-1.0",
            arguments: [
                "gst-launch-1.0", "ximagesrc", "use-damage=0", "!", "videoconvert", "!", "x264enc", "!", "fakesink",
            ])
        #expect(try #require(classifier.classify(grab)).kind == .screen)
        let quoted = ProcessSnapshot(
            pid: 3, comm: "gst-launch-1.0", arguments: ["gst-launch-1.0", "pipewiresrc path=42 ! fakesink"])
        #expect(classifier.classify(quoted) != nil)
        let playback = ProcessSnapshot(
            pid: 3, comm: "gst-launch-1.0",
            arguments: ["gst-launch-1.0", "filesrc", "location=a.mp4", "!", "decodebin"])
        #expect(classifier.classify(playback) == nil)
    }

    @Test func generalSoundToolsCountOnlyWhenRecording() throws {
        let record = ProcessSnapshot(pid: 5, comm: "pacat", arguments: ["pacat", "-r", "-d", "x.monitor", "a.raw"])
        #expect(try #require(classifier.classify(record)).kind == .audio)
        let pwcat = ProcessSnapshot(pid: 5, comm: "pw-cat", arguments: ["pw-cat", "--record", "a.wav"])
        #expect(try #require(classifier.classify(pwcat)).kind == .audio)
        #expect(classifier.classify(ProcessSnapshot(pid: 5, comm: "pacat", arguments: ["pacat", "a.raw"])) == nil)
        #expect(classifier.classify(ProcessSnapshot(pid: 5, comm: "pw-cat", arguments: ["pw-cat", "-p", "a"])) == nil)
        let gst = ProcessSnapshot(
            pid: 6, comm: "gst-launch-1.0",
            arguments: ["gst-launch-1.0", "pulsesrc", "device=x.monitor", "!", "wavenc", "!", "filesink"])
        #expect(try #require(classifier.classify(gst)).kind == .audio)
    }

    @Test func ordinaryProcessesAreIgnored() {
        for (comm, arguments) in [
            ("bash", ["/bin/bash"]), ("sleep", ["sleep", "30"]), ("python3", ["python3", "obs.py"]),
            ("vim", ["vim", "obs"]), ("guard-play", ["guard-play", "clip.mp4"]),
        ] {
            #expect(classifier.classify(ProcessSnapshot(pid: 1, comm: comm, arguments: arguments)) == nil, "\(comm)")
        }
    }
}

@Suite struct RecorderRulesTests {
    @Test func configAddsAndIgnoresRules() throws {
        let rules = try RecorderRules.builtIn.applying(
            config: """
                # site additions
                screen  my-capture-tool
                audio   arecord  when-arg  hw:Loopback  confidence 0.6
                screen  vlc      when-input screen      # vlc screen:// style
                ignore  flameshot
                """)
        let classifier = ProcessClassifier(rules: rules)
        #expect(classifier.classify(ProcessSnapshot(pid: 1, comm: "my-capture-tool", arguments: [])) != nil)
        let loopback = try #require(
            classifier.classify(ProcessSnapshot(pid: 2, comm: "arecord", arguments: ["arecord", "-D", "hw:Loopback"])))
        #expect(loopback.kind == .audio && loopback.confidence == 0.6)
        #expect(
            classifier.classify(ProcessSnapshot(pid: 2, comm: "arecord", arguments: ["arecord", "-D", "hw:0"])) == nil)
        #expect(classifier.classify(ProcessSnapshot(pid: 3, comm: "flameshot", arguments: ["flameshot"])) == nil)
        #expect(classifier.classify(ProcessSnapshot(pid: 4, comm: "obs", arguments: ["obs"])) != nil)
    }

    @Test func readsACRLFRuleFileAsALFOne() throws {
        let text = ["# site", "screen  my-capture-tool", "ignore  flameshot", "", "screen x when-input"].joined(
            separator: "\r\n")
        #expect(throws: RuleFileError(line: 5, message: "'when-input' needs a value")) {
            try RecorderRules.builtIn.applying(config: text)
        }
        let rules = try RecorderRules.builtIn.applying(
            config: text.split(separator: "\r\n").dropLast().joined(separator: "\r\n"))
        let classifier = ProcessClassifier(rules: rules)
        #expect(classifier.classify(ProcessSnapshot(pid: 1, comm: "my-capture-tool", arguments: [])) != nil)
        #expect(classifier.classify(ProcessSnapshot(pid: 3, comm: "flameshot", arguments: ["flameshot"])) == nil)
    }

    @Test(arguments: [
        ("record obs", 1, "unknown kind 'record' (expected screen, screenshot, audio or ignore)"),
        ("screen", 1, "'screen' needs a process name"),
        ("\n\nscreen x when-input", 3, "'when-input' needs a value"),
        ("audio x confidence 2", 1, "confidence must be one number from 0 to 1"),
        ("screen x sometimes y", 1, "unknown word 'sometimes'"),
        ("ignore a b", 1, "'ignore' takes only a name"),
    ])
    func badConfigSaysWhereAndWhy(_ text: String, _ line: Int, _ message: String) {
        #expect(throws: RuleFileError(line: line, message: message)) {
            try RecorderRules.builtIn.applying(config: text)
        }
    }
}
