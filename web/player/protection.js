// The session's capture state on the page, from its event stream: while it is `capturing` or
// `unknown` the picture is hidden under an opaque layer and the sound is ramped to silence through
// Web Audio (a short ramp, so there is no click). It starts `unknown` and turns `unknown` the moment
// the stream drops (fail closed); EventSource reconnects on its own, sending Last-Event-ID (the
// gateway numbers revocations and changes of state), and the gateway replays what the page missed,
// then the current state if that differs. A stream the gateway refused is opened afresh, and then
// opens with the current state.

const rampSeconds = 0.03;
const reconnectMs = 3000;

export class CaptureGuard {
  /** `stage` gets the `masked` class; `badge` shows the state; `handlers` hear commands and revocation. */
  constructor(video, stage, badge, eventsURL, handlers) {
    this.video = video;
    this.stage = stage;
    this.badge = badge;
    this.eventsURL = eventsURL;
    this.handlers = handlers;
    this.state = 'unknown';
    this.source = 'starting';
    this.volume = 1;
    this.revoked = false;
    // When protection last began, by the wall clock (Date.now, which the tests compare with the time
    // of the report): the mask applied, the frame with it produced, the gain at 0.
    this.protectedAt = null;
    // The last 100 events received, with the stream's last event ID at each, for diagnostics.
    this.received = [];
    this.apply();
  }

  /** Routes the video's sound through a protection gain and a volume gain (needs a user gesture in most browsers). */
  attachAudio() {
    if (this.context) return;
    try {
      this.context = new AudioContext();
      const source = this.context.createMediaElementSource(this.video);
      this.gate = this.context.createGain();
      this.gate.gain.value = this.protecting ? 0 : 1;
      this.analyser = this.context.createAnalyser();
      this.analyser.fftSize = 2048;
      this.level = this.context.createGain();
      this.level.gain.value = this.volume;
      source.connect(this.gate).connect(this.analyser).connect(this.level).connect(this.context.destination);
    } catch (error) {
      // Without Web Audio the element's own mute still protects; it just clicks.
      this.context = null;
    }
  }

  resumeAudio() {
    if (this.context && this.context.state === 'suspended') this.context.resume().catch(() => {});
  }

  get protecting() {
    return this.state !== 'clear';
  }

  /** The protection gain now (0 while protecting, once the ramp has run). */
  get gain() {
    return this.gate ? this.gate.gain.value : this.video.muted ? 0 : 1;
  }

  /** The peak sample after the protection gain over the analyser's last window: 0 is silence. */
  get peak() {
    if (!this.analyser) return 0;
    const samples = new Float32Array(this.analyser.fftSize);
    this.analyser.getFloatTimeDomainData(samples);
    return samples.reduce((peak, sample) => Math.max(peak, Math.abs(sample)), 0);
  }

  setVolume(volume) {
    this.volume = volume;
    if (this.level) this.level.gain.setTargetAtTime(volume, this.context.currentTime, rampSeconds / 3);
  }

  set(state, source) {
    this.state = this.revoked ? 'revoked' : state;
    this.source = source;
    this.apply();
  }

  apply() {
    const protecting = this.protecting;
    const began = protecting && !this.stage.classList.contains('masked');
    // The mask goes up at once: the picture must not wait for the sound's ramp.
    this.stage.classList.toggle('masked', protecting);
    if (began) {
      const record = { state: this.state, applied: Date.now(), shown: null, muted: null };
      this.protectedAt = record;
      // The second animation frame after the change begins once the frame with the mask is out.
      requestAnimationFrame(() => requestAnimationFrame(() => { record.shown = Date.now(); }));
    }
    this.badge.dataset.state = this.state;
    this.badge.textContent = `capture state: ${this.state} (${this.source})`;
    if (this.gate) {
      const now = this.context.currentTime;
      this.gate.gain.cancelScheduledValues(now);
      this.gate.gain.setValueAtTime(this.gate.gain.value, now);
      this.gate.gain.linearRampToValueAtTime(protecting ? 0 : 1, now + rampSeconds);
    }
    clearTimeout(this.muteTimer);
    if (protecting) {
      // The element's own mute once the ramp is done, in case Web Audio is not in the path.
      const record = this.protectedAt;
      const muted = () => {
        this.video.muted = this.protecting;
        if (!record || !this.protecting || record.muted !== null) return;
        // The audio clock may lag the page's: look again until the gain is at 0.
        if (this.gain === 0) record.muted = Date.now();
        else this.muteTimer = setTimeout(muted, 10);
      };
      this.muteTimer = setTimeout(muted, this.gate ? rampSeconds * 1000 + 10 : 0);
    } else {
      this.video.muted = false;
    }
  }

  /** Follows the session's events until revoked. */
  start() {
    this.connect();
  }

  connect() {
    const events = new EventSource(this.eventsURL);
    this.events = events;
    events.addEventListener('capture-state', (event) => {
      const capture = JSON.parse(event.data);
      this.received = [...this.received.slice(-99), { type: event.type, state: capture.state, lastEventId: event.lastEventId }];
      this.set(capture.state, capture.reason || 'reported');
    });
    events.addEventListener('command', (event) => {
      this.handlers.onCommand(JSON.parse(event.data).command);
    });
    events.addEventListener('revoked', () => {
      this.revoked = true;
      this.set('revoked', 'gateway');
      events.close();
      this.handlers.onRevoked();
    });
    events.addEventListener('error', () => {
      if (this.revoked) return;
      // Fail closed at once; EventSource retries by itself unless the gateway refused the stream.
      this.set('unknown', 'event stream lost');
      if (events.readyState === EventSource.CLOSED) {
        setTimeout(() => { if (this.events === events && !this.revoked) this.connect(); }, reconnectMs);
      }
    });
  }
}
