import CSDL2
import FoundationEssentials
import Glibc
import Synchronization

/// Something that pulls audio from an `AudioRenderer` at the pace of playback.
protocol AudioDevice: AnyObject {
    /// Starts pulling.
    func start()
    /// Stops pulling; returns after the last pull has finished.
    func stop()
}

/// SDL2's audio callback: a plain nonisolated function, so it is safe on SDL's audio thread.
/// `userdata` is the `AudioRenderer` retained by the `SDLAudioDevice` that opened the device.
func guardPlayAudioCallback(
    _ userdata: UnsafeMutableRawPointer?, _ stream: UnsafeMutablePointer<UInt8>?, _ length: Int32
) {
    guard let userdata, let stream, length > 0 else { return }
    let renderer = Unmanaged<AudioRenderer>.fromOpaque(userdata).takeUnretainedValue()
    let count = Int(length) / MemoryLayout<Float>.size
    let samples = UnsafeMutableRawPointer(stream).bindMemory(to: Float.self, capacity: count)
    renderer.render(into: UnsafeMutableBufferPointer(start: samples, count: count))
}

/// The sound card through SDL2 (`SDL_OpenAudioDevice` with 32-bit float samples at the source's rate and
/// channel count; SDL converts if the hardware wants something else).
final class SDLAudioDevice: AudioDevice {
    private let device: SDL_AudioDeviceID
    private let retained: Unmanaged<AudioRenderer>
    private var open = true
    /// The driver SDL chose, such as `pulseaudio` or `alsa`.
    let driver: String

    /// Opens the default device, or throws the reason SDL gives (one line).
    init(renderer: AudioRenderer, sampleRate: Int, channels: Int) throws(PlayerError) {
        // ALSA prints its own errors to standard error while SDL probes; the one line we print says it all.
        let quiet = StandardErrorSilencer()
        defer { quiet.restore() }
        guard SDL_InitSubSystem(csdl2_init_audio()) == 0 else {
            throw PlayerError(.device, "no audio device (SDL: \(String(cString: SDL_GetError())))")
        }
        // Ownership: the device holds one retain of the renderer for the callback, released in stop().
        retained = Unmanaged.passRetained(renderer)
        var wanted = SDL_AudioSpec()
        wanted.freq = Int32(sampleRate)
        wanted.format = csdl2_audio_f32sys()
        wanted.channels = UInt8(clamping: channels)
        // About 10 ms at 48 kHz: a live capture event reaches the gate within one device period.
        wanted.samples = 512
        wanted.callback = guardPlayAudioCallback
        wanted.userdata = retained.toOpaque()
        var obtained = SDL_AudioSpec()
        let device = SDL_OpenAudioDevice(nil, 0, &wanted, &obtained, 0)
        guard device != 0 else {
            let reason = String(cString: SDL_GetError())
            retained.release()
            SDL_QuitSubSystem(csdl2_init_audio())
            throw PlayerError(.device, "no audio device (SDL: \(reason.isEmpty ? "none found" : reason))")
        }
        self.device = device
        driver = SDL_GetCurrentAudioDriver().map { String(cString: $0) } ?? "unknown"
        renderer.latency = 2 * Double(obtained.samples) / Double(sampleRate)
    }

    func start() { SDL_PauseAudioDevice(device, 0) }

    func stop() {
        guard open else { return }
        open = false
        SDL_CloseAudioDevice(device)
        retained.release()
        SDL_QuitSubSystem(csdl2_init_audio())
    }

    deinit { stop() }
}

/// No sound card: a thread of its own pulls a period of audio each period of wall time, as a device
/// would, so realtime playback, the audio clock and the gate behave the same.
final class EmulatedAudioDevice: AudioDevice, Sendable {
    private let renderer: AudioRenderer
    private let period: Int
    private let channels: Int
    private let sampleRate: Int
    private let stopped = Atomic<Bool>(false)
    private let thread = Mutex<PlayerThread?>(nil)

    init(renderer: AudioRenderer, sampleRate: Int, channels: Int, period: Int = 512) {
        self.renderer = renderer
        self.sampleRate = sampleRate
        self.channels = channels
        self.period = period
    }

    func start() {
        let started = PlayerThread(name: "guard-play audio") { [self] in pump() }
        thread.withLock { $0 = started }
    }

    private func pump() {
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: period * channels)
        defer { buffer.deallocate() }
        let periodSeconds = Double(period) / Double(sampleRate)
        var deadline = MonotonicSeconds.now()
        while !stopped.load(ordering: .acquiring) {
            renderer.render(into: buffer)
            deadline += periodSeconds
            let now = MonotonicSeconds.now()
            if deadline < now - 0.2 { deadline = now }
            MonotonicSeconds.sleep(deadline - now)
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        thread.withLock { $0 }?.join()
    }
}

/// Points standard error at /dev/null until `restore()`, for C libraries that print instead of returning.
struct StandardErrorSilencer {
    private let saved: Int32

    init() {
        fflush(nil)
        saved = dup(STDERR_FILENO)
        let null = open("/dev/null", O_WRONLY)
        if null >= 0 {
            dup2(null, STDERR_FILENO)
            close(null)
        }
    }

    func restore() {
        guard saved >= 0 else { return }
        fflush(nil)
        dup2(saved, STDERR_FILENO)
        close(saved)
    }
}
