import Foundation
import HTTPTestSupport
import ProcessTestSupport

/// Debian's Chromium, headless, driven over the Chrome DevTools Protocol on a pipe
/// (`--remote-debugging-pipe`: it reads NUL-terminated JSON commands on its descriptor 3 and writes
/// answers and events on its descriptor 4), so no WebSocket client and no PyPI package is needed.
///
/// Invariant for `@unchecked Sendable`: `answers`, `events`, `nextID`, `interceptions` and `closed`
/// are read and written only while holding `condition`; the descriptors are written only under it
/// too, and read only by the reader thread.
final class Chromium: @unchecked Sendable {
    static let binary = "/usr/bin/chromium"

    /// Why the browser tests cannot run here, or nil when they can.
    static var unavailableReason: String? {
        FileManager.default.isExecutableFile(atPath: binary)
            ? nil : "\(binary) is missing: scripts/setup.sh installs Debian's chromium package"
    }

    let process: SpawnedProcess
    private let profile: TemporaryDirectory
    private let commands: Int32
    private let replies: Int32
    private let condition = NSCondition()
    private var answers: [Int: [String: Any]] = [:]
    private var events: [[String: Any]] = []
    private var nextID = 0
    private var closed = false
    /// Bodies to answer intercepted requests with, by page session.
    private var interceptions: [String: [UInt8]] = [:]

    init() throws {
        profile = try TemporaryDirectory()
        var toChromium: [Int32] = [0, 0]
        var fromChromium: [Int32] = [0, 0]
        // Close-on-exec at once (the descriptors Chromium gets are duplicated onto 3 and 4 without
        // the flag), so no other test's child inherits an end and holds the pipe open.
        guard pipe(&toChromium) == 0, pipe(&fromChromium) == 0 else {
            throw RawClientError("pipe: \(String(cString: strerror(errno)))")
        }
        for descriptor in toChromium + fromChromium { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        process = try SpawnedProcess(
            [
                Self.binary, "--headless", "--no-sandbox", "--remote-debugging-pipe",
                "--user-data-dir=\(profile.url.path)", "--autoplay-policy=no-user-gesture-required",
                "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--force-device-scale-factor=1",
                "--window-size=1000,700", "--hide-scrollbars", "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows", "about:blank",
            ],
            errors: profile.path("chromium.log"), descriptors: [3: toChromium[0], 4: fromChromium[1]])
        close(toChromium[0])
        close(fromChromium[1])
        commands = toChromium[1]
        replies = fromChromium[0]
        // The reader holds the browser weakly: a strong reference kept it (and its 100–200 MB profile
        // directory, which its deinit removes) alive until the test process exited.
        let thread = Thread { [weak self, replies] in Self.readReplies(replies) { self } }
        thread.name = "cdp-reader"
        thread.start()
    }

    deinit {
        process.end(grace: 1)
        close(commands)
    }

    /// What Chromium wrote to standard error, for messages.
    var log: String { (try? String(contentsOfFile: profile.path("chromium.log"), encoding: .utf8)) ?? "" }

    /// Reads the browser's messages from `replies` until it closes its end, handing each to the
    /// browser while `browser()` still gives one; then closes the descriptor and tells the waiters.
    private static func readReplies(_ replies: Int32, browser: () -> Chromium?) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += chunk[..<count]
            while let end = pending.firstIndex(of: 0) {
                let message = Array(pending[..<end])
                pending.removeSubrange(...end)
                guard let json = (try? JSONSerialization.jsonObject(with: Data(message))) as? [String: Any] else {
                    continue
                }
                browser()?.handle(json)
            }
        }
        close(replies)
        guard let browser = browser() else { return }
        browser.condition.lock()
        browser.closed = true
        browser.condition.broadcast()
        browser.condition.unlock()
    }

    private func handle(_ message: [String: Any]) {
        condition.lock()
        defer { condition.unlock() }
        if let id = message["id"] as? Int {
            answers[id] = message
            condition.broadcast()
            return
        }
        events.append(message)
        // A paused request to answer with the test's own body (Fetch.enable): answered from here, without
        // waiting for the answer, since this thread is the one that would read it.
        if message["method"] as? String == "Fetch.requestPaused", let session = message["sessionId"] as? String,
            let params = message["params"] as? [String: Any], let requestID = params["requestId"] as? String,
            let body = interceptions[session]
        {
            post(
                "Fetch.fulfillRequest",
                [
                    "requestId": requestID, "responseCode": 200,
                    "responseHeaders": [
                        ["name": "Content-Type", "value": "application/json"],
                        ["name": "Cache-Control", "value": "no-store"],
                    ],
                    "body": Data(body).base64EncodedString(),
                ], session: session)
        }
    }

    /// Writes a command; the caller holds `condition`. Returns its ID.
    @discardableResult
    private func post(_ method: String, _ params: [String: Any], session: String?) -> Int {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var bytes = [UInt8]((try? JSONSerialization.data(withJSONObject: message)) ?? Data())
        bytes.append(0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { break }
            offset += written
        }
        return nextID
    }

    /// Sends `method` and waits up to `timeout` seconds for its result.
    @discardableResult
    func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Double = 30)
        throws -> [String: Any]
    {
        condition.lock()
        defer { condition.unlock() }
        let id = post(method, params, session: session)
        let deadline = Date().addingTimeInterval(timeout)
        while answers[id] == nil && !closed {
            guard condition.wait(until: deadline) else { break }
        }
        guard let answer = answers.removeValue(forKey: id) else {
            throw RawClientError("\(method): no answer from Chromium within \(timeout) s\n\(log.suffix(2000))")
        }
        if let error = answer["error"] as? [String: Any] {
            throw RawClientError("\(method): \(error["message"] ?? error)")
        }
        return answer["result"] as? [String: Any] ?? [:]
    }

    /// A new tab at `url`.
    func open(_ url: String) throws -> BrowserPage {
        let target = try call("Target.createTarget", ["url": "about:blank"])["targetId"] as? String ?? ""
        let session = try call("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String
        let page = BrowserPage(browser: self, session: session ?? "")
        try page.call("Page.enable")
        try page.call("Runtime.enable")
        try page.call("Page.navigate", ["url": url])
        return page
    }

    /// Answers the page's requests matching `pattern` with `body` from now on (the test's stand-in for
    /// a server, such as a license with the wrong key).
    func intercept(_ pattern: String, on page: BrowserPage, with body: [UInt8]) throws {
        condition.lock()
        interceptions[page.session] = body
        condition.unlock()
        try page.call("Fetch.enable", ["patterns": [["urlPattern": pattern, "requestStage": "Request"]]])
    }

    /// The events received so far for `session` named `method`.
    func events(_ method: String, session: String) -> [[String: Any]] {
        condition.lock()
        defer { condition.unlock() }
        return events.filter { $0["method"] as? String == method && $0["sessionId"] as? String == session }
    }
}

/// One tab of a `Chromium`.
struct BrowserPage {
    let browser: Chromium
    let session: String

    @discardableResult
    func call(_ method: String, _ params: [String: Any] = [:], timeout: Double = 30) throws -> [String: Any] {
        try browser.call(method, params, session: session, timeout: timeout)
    }

    /// The value of the JavaScript expression `expression` (a promise is awaited), as JSON gives it.
    @discardableResult
    func evaluate(_ expression: String) throws -> Any? {
        let result = try call(
            "Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            throw RawClientError("\(expression): \(exception["text"] ?? "") \(exception["exception"] ?? "")")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    func number(_ expression: String) throws -> Double { try evaluate(expression) as? Double ?? .nan }

    /// Polls `expression` until it is true, for up to `timeout` seconds.
    func waitFor(_ expression: String, timeout: Double = 30) -> Bool {
        eventually(timeout: timeout) { (try? evaluate("Boolean(\(expression))")) as? Bool == true }
    }

    /// A PNG screenshot from Chromium's compositor of the CSS pixel rectangle of the element `selector`.
    func screenshot(of selector: String) throws -> [UInt8] {
        let box = try evaluate(
            "(() => { const r = document.querySelector('\(selector)').getBoundingClientRect();"
                + " return [r.x, r.y, r.width, r.height]; })()")
        guard let rectangle = box as? [Double], rectangle.count == 4 else {
            throw RawClientError("no element \(selector) to take a screenshot of")
        }
        let result = try call(
            "Page.captureScreenshot",
            [
                "format": "png",
                "clip": [
                    "x": rectangle[0], "y": rectangle[1], "width": rectangle[2], "height": rectangle[3], "scale": 1,
                ],
            ])
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw RawClientError("Page.captureScreenshot gave no image")
        }
        return [UInt8](data)
    }
}
