// The controls a person expects: play/pause, a seek bar, the time, volume, an audio language,
// full screen and keys (space or k: play/pause; ←/→: 5 s back/on; ↑/↓: volume; f: full screen).

function clock(seconds) {
  const whole = Math.max(0, Math.floor(seconds || 0));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
}

export class Controls {
  /** `player` offers play(), pause(), seek(seconds), time, duration, setVolume(v) and setAudio(index). */
  constructor(document, player) {
    this.player = player;
    this.play = document.getElementById('play');
    this.seek = document.getElementById('seek');
    this.time = document.getElementById('time');
    this.volume = document.getElementById('volume');
    this.audio = document.getElementById('audio');
    this.fullscreen = document.getElementById('fullscreen');
    this.stage = document.getElementById('stage');
    this.message = document.getElementById('message');
    this.play.addEventListener('click', () => (player.paused ? player.play() : player.pause()));
    this.seek.addEventListener('change', () => player.seek(Number(this.seek.value)));
    this.volume.addEventListener('input', () => player.setVolume(Number(this.volume.value)));
    this.audio.addEventListener('change', () => player.setAudio(Number(this.audio.value)));
    this.fullscreen.addEventListener('click', () => this.toggleFullscreen());
    document.addEventListener('keydown', (event) => this.key(event));
  }

  key(event) {
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    const actions = {
      ' ': () => (this.player.paused ? this.player.play() : this.player.pause()),
      k: () => (this.player.paused ? this.player.play() : this.player.pause()),
      ArrowLeft: () => this.player.seek(this.player.time - 5),
      ArrowRight: () => this.player.seek(this.player.time + 5),
      ArrowUp: () => this.setVolume(Number(this.volume.value) + 0.1),
      ArrowDown: () => this.setVolume(Number(this.volume.value) - 0.1),
      f: () => this.toggleFullscreen(),
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  }

  setVolume(value) {
    this.volume.value = String(Math.min(1, Math.max(0, value)));
    this.player.setVolume(Number(this.volume.value));
  }

  toggleFullscreen() {
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    else this.stage.requestFullscreen().catch(() => {});
  }

  /** Lists the audio renditions; the one at `selected` is chosen. */
  showAudio(renditions, selected) {
    this.audio.replaceChildren(...renditions.map((rendition, index) => {
      const option = document.createElement('option');
      option.value = String(index);
      option.textContent = rendition.language ? `${rendition.name} (${rendition.language})` : rendition.name;
      option.selected = index === selected;
      return option;
    }));
    this.audio.disabled = renditions.length < 2;
  }

  /** Shows the time, the seek bar and the play button's state. */
  update() {
    const { time, duration, paused } = this.player;
    this.seek.max = String(duration || 0);
    if (document.activeElement !== this.seek) this.seek.value = String(time);
    this.time.value = `${clock(time)} / ${clock(duration)}`;
    this.play.textContent = paused ? 'Play' : 'Pause';
    this.play.setAttribute('aria-label', paused ? 'Play' : 'Pause');
  }

  /** Says `text` on the page, in words. */
  say(text) {
    this.message.textContent = text;
    this.message.hidden = false;
  }
}
