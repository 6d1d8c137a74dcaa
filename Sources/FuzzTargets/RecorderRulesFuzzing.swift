import CaptureDetectors

/// The recorder-rules file, then the classifier with the rules it read.
enum RecorderRulesFuzzing {
    /// Command lines the classifier sees with the parsed rules.
    static let processes = [
        ProcessSnapshot(pid: 10, comm: "ffmpeg", arguments: ["ffmpeg", "-f", "x11grab", "-i", ":0", "out.mkv"]),
        ProcessSnapshot(pid: 11, comm: "obs", arguments: ["/usr/bin/obs"]),
        ProcessSnapshot(pid: 12, comm: "pw-cat", arguments: ["pw-cat", "--record", "x.wav"]),
        ProcessSnapshot(pid: 13, comm: "gst-launch-1.0", arguments: ["gst-launch-1.0", "ximagesrc", "!", "fakesink"]),
        ProcessSnapshot(pid: 14, comm: "rec", arguments: ["rec", "--mode=screen", "-i", "x"]),
    ]

    static func parse(_ data: UnsafeRawBufferPointer) {
        // The player reads the file as UTF-8 text and refuses anything else before parsing.
        guard let text = String(validating: data, as: UTF8.self) else { return }
        guard let rules = try? RecorderRules.builtIn.applying(config: text) else { return }
        let classifier = ProcessClassifier(rules: rules)
        for process in processes {
            if let detection = classifier.classify(process) {
                precondition((0...1).contains(detection.confidence), "confidence \(detection.confidence)")
            }
        }
    }
}
