import CSDL2
import CaptureMonitor
import FoundationEssentials
import MediaCore
import Protection
import Synchronization

/// The video window: an SDL2 window whose every SDL call happens on one thread of its own, the window
/// thread, which initialises SDL's video subsystem, creates the window, renderer and texture, polls the
/// window's events and draws. SDL requires the thread that initialised video to be the one that handles
/// its events and windows; keeping all of it on one thread the window owns satisfies that whichever
/// thread the player runs on.
///
/// The presenter hands each frame (already masked when protection is on) to `present`, which leaves it in
/// a one-frame mailbox; the window thread shows the newest frame, scaled to fit the window with its aspect
/// ratio kept. Between frames the window thread also watches the capture state: when protection comes on
/// while a frame is held (paused, the last frame, a slow frame rate), it masks the picture on screen at
/// once rather than waiting for the next frame, and restores it when protection lifts. Keys pressed in
/// the window go to the key handler; closing the window counts as `q`.
///
/// With `--flicker` the window presents at the display's refresh rate (with vsync; paced by the
/// `RefreshPacer` where vsync does not block, as under Xvfb), each refresh one phase of a pair of
/// complementary masks of the picture (`FlickerCompositor`), so a single screenshot holds half of the
/// region. A masked picture (capture protection) is shown as it is: the mask wins.
///
/// The window offers no screenshot or copy command of its own.
final class WindowVideoSink: VideoSink, Sendable {
    private struct Mailbox {
        var frame: Transfer<Frame>?
        var masked = false
        var closing = false
        var opened: Result<Void, PlayerError>?
        var flicker: FlickerReport?
    }

    private let mailbox = Guarded(Mailbox())
    private let keyHandler = Mutex<(@Sendable (PlayerKey) -> Void)?>(nil)
    private let thread = Mutex<PlayerThread?>(nil)
    private let title: String
    private let size: (width: Int, height: Int)
    private let monitor: CaptureMonitor
    private let switches: OutputSwitches
    private let flicker: FlickerArea?
    private let warn: @Sendable (String) -> Void

    /// Opens a window titled `title` sized for a `width`×`height` picture (scaled down to fit 1280×720),
    /// on a thread of its own; throws the reason SDL gives when no window can be opened. `masker` (used
    /// only by the window thread from now on) masks a held frame when protection comes on between frames.
    /// `flicker` turns the flicker on for that area; `warn` receives the one-line warning about a refresh
    /// rate under 50 Hz (on the window thread).
    init(
        title: String, width: Int, height: Int, masker: VideoMasker, monitor: CaptureMonitor,
        switches: OutputSwitches, flicker: FlickerArea? = nil, warn: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(PlayerError) {
        self.title = title
        self.flicker = flicker
        self.warn = warn
        self.size = WindowLayout.initialSize(width: width, height: height)
        self.monitor = monitor
        self.switches = switches
        let masker = Transfer(masker)
        let started = PlayerThread(name: "guard-play window") { [self] in run(masker: masker.value) }
        let opened = mailbox.wait(until: { $0.opened != nil }) { $0.opened! }
        if case .failure(let error) = opened {
            started.join()
            throw error
        }
        thread.withLock { $0 = started }
    }

    /// Sends the window's keys to `handler` (called on the window thread).
    func onKey(_ handler: @escaping @Sendable (PlayerKey) -> Void) {
        keyHandler.withLock { $0 = handler }
    }

    func present(_ frame: Frame, outputTime: Double, masked: Bool) throws(PlayerError) {
        // A new reference to the same picture: the decoder may reuse its own frame.
        let reference = Transfer(frame.clone())
        mailbox.withLock { mailbox in
            mailbox.frame = reference
            mailbox.masked = masked
        }
    }

    /// The flicker's presentation figures so far; nil without `--flicker`.
    var flickerReport: FlickerReport? { mailbox.withLock { $0.flicker } }

    /// Closes the window and waits for the window thread to end.
    func close() {
        mailbox.withLock { $0.closing = true }
        thread.withLock { $0 }?.join()
    }

    // MARK: The window thread

    /// The window thread's body: every SDL video call is made here.
    private func run(masker: VideoMasker) {
        // SDL would otherwise turn SIGINT/SIGTERM into quit events; the session handles signals itself.
        SDL_SetHint("SDL_NO_SIGNAL_HANDLERS", "1")
        // A window on the desktop only: without this SDL falls back to its offscreen driver, which
        // "opens" a window nobody sees. SDL_VIDEODRIVER in the environment still overrides it.
        SDL_SetHint("SDL_VIDEODRIVER", "x11,wayland")
        // libwayland prints its own complaints while SDL probes; the error below says it all.
        let quiet = StandardErrorSilencer()
        let initialised = SDL_InitSubSystem(csdl2_init_video()) == 0
        quiet.restore()
        guard initialised else {
            return open(failed: "cannot open a window (SDL: \(String(cString: SDL_GetError())))")
        }
        let driver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? "none"
        guard ["x11", "wayland"].contains(driver) || ProcessInfo.processInfo.environment["SDL_VIDEODRIVER"] != nil
        else {
            SDL_QuitSubSystem(csdl2_init_video())
            return open(failed: "cannot open a window (SDL found no display, only its '\(driver)' driver)")
        }
        let flags = SDL_WINDOW_RESIZABLE.rawValue | SDL_WINDOW_SHOWN.rawValue
        guard
            let window = SDL_CreateWindow(
                title, csdl2_windowpos_centered(), csdl2_windowpos_centered(), Int32(size.width), Int32(size.height),
                flags)
        else {
            let reason = String(cString: SDL_GetError())
            SDL_QuitSubSystem(csdl2_init_video())
            return open(failed: "cannot open a window (SDL: \(reason))")
        }
        // The flicker presents once per refresh, so it asks for vsync; the plain window draws on change.
        let rendererFlags = flicker == nil ? 0 : SDL_RENDERER_PRESENTVSYNC.rawValue
        guard let renderer = SDL_CreateRenderer(window, -1, rendererFlags) else {
            let reason = String(cString: SDL_GetError())
            SDL_DestroyWindow(window)
            SDL_QuitSubSystem(csdl2_init_video())
            return open(failed: "cannot draw in the window (SDL: \(reason))")
        }
        mailbox.withLock { $0.opened = .success(()) }
        var screen = WindowScreen(renderer: renderer, masker: masker, flicker: flicker)
        var mode = SDL_DisplayMode()
        let reported = SDL_GetCurrentDisplayMode(max(0, SDL_GetWindowDisplayIndex(window)), &mode) == 0
        var pacer = RefreshPacer(refreshRate: reported ? Double(mode.refresh_rate) : 0)
        // Whether the renderer's vsync holds presents, judged on the first 20 (paced by the clock until
        // then): a present that waits a quarter of a period or more is held by a real vsync.
        var vsyncBlocks = false
        var heldPresents = 0
        if flicker != nil {
            mailbox.withLock {
                $0.flicker = FlickerReport(reportedRate: reported ? Double(mode.refresh_rate) : 0)
            }
        }
        screen.draw()
        while true {
            // Flickering, the loop wakes for every refresh; otherwise it polls every 10 ms.
            var timeout = 0.01
            if screen.isFlickering {
                timeout = vsyncBlocks ? 0 : max(0, (pacer.nextDeadline ?? 0) - MonotonicClock.seconds())
            }
            let (incoming, closing) = mailbox.wait(until: { $0.frame != nil || $0.closing }, timeout: timeout) {
                mailbox -> ((Frame, Bool)?, Bool) in
                defer { mailbox.frame = nil }
                return (mailbox.frame.map { ($0.value, mailbox.masked) }, mailbox.closing)
            }
            if closing { break }
            var redraw = false
            var event = SDL_Event()
            while SDL_PollEvent(&event) != 0 {
                switch handle(event) {
                case .redraw: redraw = true
                case .key(let key): keyHandler.withLock { $0 }?(key)
                case .none: break
                }
            }
            if let (frame, masked) = incoming {
                screen.show(frame, masked: masked)
                redraw = true
            }
            // Protection that comes on between frames reaches the picture on screen now.
            let now = monitor.now.media
            let protecting = monitor.decision(atMedia: now).isProtecting(under: monitor.policy)
            if screen.follow(protecting: protecting) {
                switches.note(.video, protecting: protecting, media: now)
                redraw = true
            }
            if screen.isFlickering {
                if let deadline = pacer.nextDeadline, !vsyncBlocks, MonotonicClock.seconds() < deadline { continue }
                screen.drawFlicker(phase: pacer.phase, newPair: pacer.startsPair)
                let started = MonotonicClock.seconds()
                screen.present()
                let finished = MonotonicClock.seconds()
                if pacer.presents < 20, finished - started >= pacer.period / 4 { heldPresents += 1 }
                pacer.presented(at: finished)
                if pacer.presents == 20 { vsyncBlocks = heldPresents >= 15 }
                report(&pacer)
            } else if redraw {
                screen.draw()
            }
        }
        screen.destroy()
        screen.destroyFlicker()
        SDL_DestroyRenderer(renderer)
        SDL_DestroyWindow(window)
        SDL_QuitSubSystem(csdl2_init_video())
    }

    /// Publishes the pacer's figures, and its warning when the rate is under 50 Hz.
    private func report(_ pacer: inout RefreshPacer) {
        mailbox.withLock {
            $0.flicker?.measuredRate = pacer.measuredRate
            $0.flicker?.presents = pacer.presents
            $0.flicker?.missedVsyncs = pacer.missedVsyncs
        }
        if let warning = pacer.lowRateWarning() { warn(warning) }
    }

    private func open(failed message: String) {
        mailbox.withLock { $0.opened = .failure(PlayerError(.device, message)) }
    }

    private enum Reaction {
        case none, redraw
        case key(PlayerKey)
    }

    /// What a window event asks for: the player's keys (repeats ignored), a close, or a redraw.
    private func handle(_ event: SDL_Event) -> Reaction {
        switch event.type {
        case SDL_QUIT.rawValue:
            return .key(.quit)
        case SDL_WINDOWEVENT.rawValue:
            switch UInt32(event.window.event) {
            case SDL_WINDOWEVENT_CLOSE.rawValue: return .key(.quit)
            case SDL_WINDOWEVENT_EXPOSED.rawValue, SDL_WINDOWEVENT_SIZE_CHANGED.rawValue: return .redraw
            default: return .none
            }
        case SDL_KEYDOWN.rawValue:
            guard event.key.repeat == 0 else { return .none }
            switch UInt32(bitPattern: event.key.keysym.sym) {
            case SDLK_SPACE.rawValue: return .key(.pause)
            case SDLK_LEFT.rawValue: return .key(.seekBack)
            case SDLK_RIGHT.rawValue: return .key(.seekForward)
            case SDLK_m.rawValue: return .key(.mute)
            case SDLK_r.rawValue: return .key(.record)
            case SDLK_q.rawValue: return .key(.quit)
            default: return .none
            }
        default:
            return .none
        }
    }
}

/// The picture in the window and the texture holding it; used only on the window thread.
private struct WindowScreen {
    let renderer: OpaquePointer
    let masker: VideoMasker
    private var texture: OpaquePointer?
    private var textureSize = (width: 0, height: 0)
    private var converter: Scaler?
    /// The picture's shape on screen (width over height).
    private var aspect = 16.0 / 9
    /// The frame on screen, and whether it is masked.
    private var shown: Frame?
    private var shownMasked = false
    /// The unmasked frame when the window masked it itself (protection came on while it was held).
    private var original: Frame?
    /// The flicker's area, its `rgb24` copy of the shown frame, the phase texture and the pair's mask.
    private let flicker: FlickerArea?
    private var flickerConverter: Scaler?
    private var flickerSource: Frame?
    private var flickerPhase: Frame?
    private var flickerTexture: OpaquePointer?
    private var flickerMask: FlickerMask?

    init(renderer: OpaquePointer, masker: VideoMasker, flicker: FlickerArea?) {
        self.renderer = renderer
        self.masker = masker
        self.flicker = flicker
    }

    /// True when every refresh must present a phase: flicker on and an unmasked picture held.
    var isFlickering: Bool { flicker != nil && !shownMasked && flickerSource != nil && flickerTexture != nil }

    /// Puts a new frame on the texture.
    mutating func show(_ frame: Frame, masked: Bool) {
        shown = frame
        shownMasked = masked
        original = nil
        upload(frame)
    }

    /// Masks the held frame when protection is on and it is not masked yet, or brings back a frame the
    /// window masked itself once protection is off; returns true when the picture changed.
    mutating func follow(protecting: Bool) -> Bool {
        if protecting, !shownMasked, let frame = shown {
            guard let masked = try? masker.masked(frame) else {
                // No masked picture could be made: show nothing rather than the clip.
                shown = nil
                destroy()
                return true
            }
            original = frame
            shown = masked
            shownMasked = true
            upload(masked)
            return true
        }
        if !protecting, shownMasked, let frame = original {
            original = nil
            shown = frame
            shownMasked = false
            upload(frame)
            return true
        }
        return false
    }

    private mutating func upload(_ frame: Frame) {
        var picture = frame
        if frame.pixelFormat != .yuv420p && frame.pixelFormat != .yuvj420p {
            if converter == nil || converter?.width != frame.width || converter?.height != frame.height {
                converter = Scaler(width: frame.width, height: frame.height, pixelFormat: .yuv420p)
            }
            guard let converted = try? converter?.scale(frame) else { return }
            picture = converted
        }
        if texture == nil || textureSize != (picture.width, picture.height) {
            destroy()
            texture = SDL_CreateTexture(
                renderer, csdl2_pixelformat_iyuv(), Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(picture.width),
                Int32(picture.height))
            textureSize = (picture.width, picture.height)
        }
        if flicker != nil { prepareFlicker(frame) }
        let sar = frame.sampleAspectRatio.doubleValue
        aspect = Double(picture.width) * (sar > 0 ? sar : 1) / Double(max(1, picture.height))
        picture.withUnsafeMutablePlanes { planes in
            guard planes.count >= 3 else { return }
            _ = SDL_UpdateYUVTexture(
                texture, nil, planes[0].base, Int32(planes[0].linesize), planes[1].base, Int32(planes[1].linesize),
                planes[2].base, Int32(planes[2].linesize))
        }
    }

    /// Keeps an `rgb24` copy of an unmasked frame for the phases (a masked one needs none).
    private mutating func prepareFlicker(_ frame: Frame) {
        // The pair's mask stays: a new frame in the middle of a pair still gets the pair's other half.
        flickerSource = nil
        guard !shownMasked else { return }
        if flickerConverter?.width != frame.width || flickerConverter?.height != frame.height {
            flickerConverter = Scaler(width: frame.width, height: frame.height, pixelFormat: .rgb24)
            flickerPhase = try? Frame(width: frame.width, height: frame.height, pixelFormat: .rgb24)
            if let flickerTexture { SDL_DestroyTexture(flickerTexture) }
            flickerTexture = SDL_CreateTexture(
                renderer, csdl2_pixelformat_rgb24(), Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(frame.width),
                Int32(frame.height))
            // A resized window scales the phases by whole pixels, never blending the two halves.
            _ = SDL_SetTextureScaleMode(flickerTexture, SDL_ScaleModeNearest)
        }
        flickerSource = try? flickerConverter?.scale(frame)
    }

    /// Draws phase `phase` of the held picture, to be presented by `present()`; `newPair` draws a new mask
    /// first.
    mutating func drawFlicker(phase: FlickerPhase, newPair: Bool) {
        guard let source = flickerSource, let target = flickerPhase, let flicker,
            let rectangle = flicker.rectangle(inWidth: source.width, height: source.height)
        else {
            // A region outside the picture: nothing flickers, the picture is drawn as usual.
            return draw(texture, present: false)
        }
        if newPair || flickerMask?.width != rectangle.width || flickerMask?.height != rectangle.height {
            var generator = SystemRandomNumberGenerator()
            flickerMask = FlickerMask(width: rectangle.width, height: rectangle.height, using: &generator)
        }
        source.withUnsafeMutablePlanes { from in
            target.withUnsafeMutablePlanes { to in
                FlickerCompositor.render(
                    maskPlane(from[0]), into: maskPlane(to[0]), rectangle: rectangle, mask: flickerMask!, phase: phase)
                _ = SDL_UpdateTexture(flickerTexture, nil, to[0].base, Int32(to[0].linesize))
            }
        }
        draw(flickerTexture, present: false)
    }

    /// Frees the flicker's texture (when the window closes).
    mutating func destroyFlicker() {
        if let flickerTexture { SDL_DestroyTexture(flickerTexture) }
        flickerTexture = nil
        flickerConverter = nil
        flickerSource = nil
    }

    /// Clears the window to black and draws the picture scaled to fit with its aspect ratio kept.
    func draw() { draw(texture) }

    private func draw(_ texture: OpaquePointer?, present: Bool = true) {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        if let texture, shown != nil {
            var width: Int32 = 0
            var height: Int32 = 0
            SDL_GetRendererOutputSize(renderer, &width, &height)
            let box = WindowLayout.fit(aspect: aspect, width: Int(width), height: Int(height))
            var target = SDL_Rect(x: Int32(box.x), y: Int32(box.y), w: Int32(box.width), h: Int32(box.height))
            SDL_RenderCopy(renderer, texture, nil, &target)
        }
        if present { SDL_RenderPresent(renderer) }
    }

    /// Shows what was drawn (`SDL_RenderPresent`; held until the vsync when the renderer has one).
    func present() { SDL_RenderPresent(renderer) }

    /// Frees the texture.
    mutating func destroy() {
        flickerSource = nil
        if let texture { SDL_DestroyTexture(texture) }
        texture = nil
        textureSize = (0, 0)
    }
}
