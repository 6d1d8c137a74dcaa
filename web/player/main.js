// The GuardPlay web player: reads the session's master and media playlists, plays the CMAF tracks
// through MSE with Clear Key EME, and follows the session's capture state. Configuration comes from
// the page's data attributes (written by the gateway) and the session token from the page's URL.

import { Controls } from './controls.js';
import { LicenseClient, PlayerError } from './keys.js';
import { encryptionScheme, parseMaster, parseMedia } from './playlists.js';
import { CaptureGuard } from './protection.js';
import { Track } from './stream.js';

const root = document.getElementById('player');
const video = document.getElementById('video');
const token = new URLSearchParams(location.search).get('token') || '';
const withToken = (path) => `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;

async function text(url) {
  const response = await fetch(url, { cache: 'no-store' });
  if (response.status === 403 || response.status === 401) {
    const problem = await response.json().catch(() => ({}));
    if ((problem.type || '').endsWith('/session-revoked')) throw new PlayerError('session revoked', 'session-revoked');
    throw new PlayerError(problem.detail || `the gateway refused ${url}`, 'refused');
  }
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

class Player {
  constructor() {
    this.controls = new Controls(document, this);
    this.guard = new CaptureGuard(video, document.getElementById('stage'), document.getElementById('badge'),
      withToken(root.dataset.events), {
        onCommand: (command) => this.command(command),
        onRevoked: () => this.fail(new PlayerError('session revoked', 'session-revoked')),
      });
    this.tracks = [];
    // The last few video segments' bits per second.
    this.samples = [];
    this.throughput = 0;
    this.status = 'starting';
    video.addEventListener('error', () => {
      const error = video.error;
      // The element's own error says most (a wrong key is a decode error), so it replaces a failure
      // the buffers reported first.
      this.fail(new PlayerError(`playback failed: ${error ? error.message || `media error ${error.code}` : 'unknown'}`,
        'media-error'), true);
    });
    video.addEventListener('timeupdate', () => this.controls.update());
    video.addEventListener('play', () => this.controls.update());
    video.addEventListener('pause', () => this.controls.update());
    video.addEventListener('seeking', () => this.seeked());
  }

  get paused() { return video.paused; }
  get origin() { return this.tracks.length && this.tracks[0].origin !== null ? this.tracks[0].origin : 0; }
  get time() { return Math.max(0, video.currentTime - this.origin); }
  get duration() { return this.media ? this.media.duration : 0; }

  play() {
    this.guard.attachAudio();
    this.guard.resumeAudio();
    return video.play().catch(() => {});
  }

  pause() { video.pause(); }

  seek(seconds) {
    video.currentTime = this.origin + Math.min(Math.max(0, seconds), Math.max(0, this.duration - 0.1));
  }

  setVolume(volume) { this.guard.setVolume(volume); }

  /** A seek outside what is buffered restarts each track's loading at the new playhead. */
  seeked() {
    for (const track of this.tracks) {
      if (track.aheadOf(video.currentTime) <= 0) track.restartAt(this.time);
    }
  }

  async setAudio(index) {
    const rendition = this.audio[index];
    const track = this.tracks.find((candidate) => candidate.kind === 'audio');
    if (!rendition || !track) return;
    this.audioIndex = index;
    const playlist = parseMedia(await text(rendition.url), rendition.url);
    await track.switchTo(playlist, this.time, true);
  }

  /**
   * Picks the best video rendition for the measured throughput (there may be only one): the harmonic
   * mean of the last three segments', which one slow segment pulls down at once (a mean of a fast
   * local network's gigabits would take a dozen), while rising again needs them all fast.
   */
  async adapt(bitsPerSecond) {
    this.samples = [...this.samples.slice(-2), bitsPerSecond];
    this.throughput = this.samples.length / this.samples.reduce((sum, sample) => sum + 1 / sample, 0);
    const affordable = this.variants.filter((variant) => variant.bandwidth <= 0.8 * this.throughput);
    const choice = affordable.length ? affordable[affordable.length - 1] : this.variants[0];
    if (choice === this.variant || this.switching) return;
    this.switching = true;
    try {
      const playlist = parseMedia(await text(choice.url), choice.url);
      this.variant = choice;
      await this.tracks[0].switchTo(playlist, this.tracks[0].playlist.segments[this.tracks[0].next]?.start ?? 0, false);
    } finally {
      this.switching = false;
    }
  }

  command(command) {
    if (command === 'pause') this.pause();
    else if (command === 'resume') this.play();
    else if (command === 'stop') this.stop('stopped by the operator');
  }

  stop(reason) {
    for (const track of this.tracks) track.stopped = true;
    video.pause();
    this.status = 'stopped';
    this.controls.say(reason);
  }

  fail(error, overriding = false) {
    if (this.status === 'failed' && !overriding) return;
    if (error.keyRefused && this.status === 'playing') {
      // A later period's key was refused: what is buffered under the keys already held plays out
      // (behind the mask while capturing), and playback stops where the refused period begins.
      this.status = 'key-refused';
      this.error = error;
      for (const track of this.tracks) track.stopped = true;
      this.controls.say(error.message);
      return;
    }
    this.status = 'failed';
    this.error = error;
    for (const track of this.tracks) track.stopped = true;
    video.pause();
    this.controls.say(error.message);
  }

  async start() {
    this.guard.start();
    const master = parseMaster(await text(withToken(root.dataset.master)), new URL(root.dataset.master, location.href));
    if (!master.variants.length) throw new PlayerError('the master playlist names no video rendition', 'no-variant');
    this.variants = master.variants;
    this.variant = master.variants[0];
    this.media = parseMedia(await text(this.variant.url), this.variant.url);
    if (!this.media.map) {
      throw new PlayerError('This asset is MPEG-TS (SAMPLE-AES): it needs an HLS client such as Safari or AVPlayer, '
        + 'not this page. Package it with --container fmp4 to play it here.', 'transport-stream');
    }
    const videoCodec = this.variant.codecs.find((codec) => /^(avc1|avc3|hvc1|hev1)/.test(codec));
    const audioCodec = this.variant.codecs.find((codec) => codec.startsWith('mp4a'));
    if (videoCodec && /^(hvc1|hev1)/.test(videoCodec) && !MediaSource.isTypeSupported(`video/mp4; codecs="${videoCodec}"`)) {
      throw new PlayerError(`this browser cannot decode HEVC (${videoCodec})`, 'no-hevc');
    }
    this.audio = master.audio.filter((rendition) => rendition.group === this.variant.audioGroup);
    this.audioIndex = Math.max(0, this.audio.findIndex((rendition) => rendition.isDefault));
    this.controls.showAudio(this.audio, this.audioIndex);
    const scheme = encryptionScheme(this.media.method);
    const keys = scheme ? new LicenseClient(video, withToken(root.dataset.license), scheme,
      { video: videoCodec, audio: this.audio.length ? audioCodec : null }) : null;
    if (keys) await keys.attach();
    const source = new MediaSource();
    video.src = URL.createObjectURL(source);
    await new Promise((resolve) => source.addEventListener('sourceopen', resolve, { once: true }));
    source.duration = this.media.duration + 10;
    this.tracks.push(new Track(source, video, 'video', videoCodec, this.media, keys,
      (bits) => this.adapt(bits).catch(() => {})));
    if (this.audio.length) {
      const rendition = this.audio[this.audioIndex];
      const playlist = parseMedia(await text(rendition.url), rendition.url);
      this.tracks.push(new Track(source, video, 'audio', audioCodec, playlist, keys));
    }
    let started = 0;
    const ready = () => {
      started += 1;
      if (started < this.tracks.length) return;
      // The media may start later than 0 (1.4 s, say): begin where it does.
      video.currentTime = Math.max(...this.tracks.map((track) => track.origin));
      this.status = 'playing';
      if (root.dataset.autoplay !== 'false') this.play();
    };
    const runs = this.tracks.map((track) => track.run(ready, () => this.time));
    // The end of the stream is declared once every track has appended its last segment (and again
    // after a seek back has reopened the source).
    setInterval(() => {
      if (this.tracks.every((track) => track.done && !track.buffer.updating) && source.readyState === 'open') {
        source.endOfStream();
      }
    }, 500);
    await Promise.all(runs);
  }
}

const player = new Player();
// Read-only diagnostics (the browser tests read them over the DevTools protocol).
window.guardPlay = Object.freeze({
  get status() { return player.status; },
  get error() { return player.error ? { message: player.error.message, code: player.error.code } : null; },
  get capture() { return { state: player.guard.state, source: player.guard.source }; },
  get protectedAt() { return player.guard.protectedAt && { ...player.guard.protectedAt }; },
  get received() { return player.guard.received.map((event) => ({ ...event })); },
  get streamState() { return player.guard.events ? player.guard.events.readyState : null; },
  get variant() { return player.variant ? { bandwidth: player.variant.bandwidth, url: player.variant.url } : null; },
  get throughput() { return player.throughput; },
  get loaded() { return player.tracks.length > 0 && player.tracks.every((track) => track.done); },
  get gain() { return player.guard.gain; },
  get peak() { return player.guard.peak; },
  get origin() { return player.origin; },
  get time() { return player.time; },
  get message() { return document.getElementById('message').hidden ? '' : document.getElementById('message').textContent; },
});
player.start().catch((error) => player.fail(error instanceof PlayerError ? error : new PlayerError(String(error.message || error), 'error')));
