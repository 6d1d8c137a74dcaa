// Media Source Extensions: one SourceBuffer per track, fed with the init segment and then the
// segments in order, about 30 s ahead of the playhead. The fMP4 segments go in as they are.

import { initKeyID } from './playlists.js';

const bufferAhead = 30;
const keepBehind = 30;
// A segment under a key not yet in the CDM waits until the playhead is this close to it: a period's
// key is asked for as playback reaches the period, so a capture that began meanwhile stops it there.
const keyLead = 3;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The bytes at `url`, and how long they took to arrive. */
export async function fetchBytes(url) {
  const started = performance.now();
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  return { bytes, seconds: Math.max((performance.now() - started) / 1000, 0.001) };
}

/**
 * One track (video or audio): its SourceBuffer and the media playlist it follows. `keys` is the
 * LicenseClient (null for a clear stream); `onThroughput` hears each segment's bits per second.
 */
export class Track {
  constructor(mediaSource, video, kind, codec, playlist, keys, onThroughput = () => {}) {
    this.video = video;
    this.kind = kind;
    this.buffer = mediaSource.addSourceBuffer(`${kind}/mp4; codecs="${codec}"`);
    this.playlist = playlist;
    this.keys = keys;
    this.onThroughput = onThroughput;
    this.next = 0;
    // The init segment last appended; a segment naming another is preceded by its own.
    this.appendedInit = null;
    this.generation = 0;
    // Where the stream's time 0 lies on the media timeline (packagers may start at 1.4 s, say).
    this.origin = null;
    this.stopped = false;
  }

  get done() {
    return this.next >= this.playlist.segments.length;
  }

  async append(bytes) {
    while (this.buffer.updating) await new Promise((resolve) => this.buffer.addEventListener('updateend', resolve, { once: true }));
    await new Promise((resolve, reject) => {
      const finished = () => {
        this.buffer.removeEventListener('error', failed);
        resolve();
      };
      const failed = () => {
        this.buffer.removeEventListener('updateend', finished);
        reject(new Error(`the ${this.kind} buffer refused a segment`));
      };
      this.buffer.addEventListener('updateend', finished, { once: true });
      this.buffer.addEventListener('error', failed, { once: true });
      this.buffer.appendBuffer(bytes);
    });
  }

  async remove(start, end) {
    if (end <= start) return;
    while (this.buffer.updating) await new Promise((resolve) => this.buffer.addEventListener('updateend', resolve, { once: true }));
    await new Promise((resolve) => {
      this.buffer.addEventListener('updateend', resolve, { once: true });
      this.buffer.remove(start, end);
    });
  }

  /** Seconds buffered ahead of `time` without a gap. */
  aheadOf(time) {
    const ranges = this.buffer.buffered;
    for (let index = 0; index < ranges.length; index += 1) {
      if (ranges.start(index) <= time + 0.1 && time < ranges.end(index)) return ranges.end(index) - time;
    }
    return 0;
  }

  /** The index of the segment holding stream time `seconds`. */
  segmentAt(seconds) {
    const segments = this.playlist.segments;
    let index = 0;
    while (index + 1 < segments.length && segments[index + 1].start <= seconds) index += 1;
    return index;
  }

  /** Carries on from the segment holding the playhead (after a seek outside the buffer). */
  restartAt(seconds) {
    this.generation += 1;
    this.next = this.segmentAt(Math.max(0, seconds));
  }

  /** Follows another playlist of the same track (an audio language, a video rendition) from the playhead. */
  async switchTo(playlist, seconds, dropAhead) {
    this.generation += 1;
    this.playlist = playlist;
    this.appendedInit = null;
    if (dropAhead) await this.remove(this.video.currentTime + 0.25, Infinity);
    this.next = this.segmentAt(Math.max(0, seconds));
  }

  /**
   * Appends segments while less than 30 s is buffered ahead, until stopped; calls `onFirstSegment`
   * once. `streamTime` gives the playhead in stream time (from 0).
   */
  async run(onFirstSegment, streamTime) {
    while (!this.stopped) {
      const generation = this.generation;
      const now = this.video.currentTime;
      if (this.done || (this.origin !== null && this.aheadOf(now) >= bufferAhead)) {
        if (this.origin !== null && now - keepBehind > 0) await this.remove(0, now - keepBehind);
        await sleep(250);
        continue;
      }
      const segment = this.playlist.segments[this.next];
      if (segment.map !== this.appendedInit) {
        const { bytes } = await fetchBytes(segment.map);
        if (generation !== this.generation) continue;
        this.initKID = initKeyID(bytes);
        await this.append(bytes);
        this.appendedInit = segment.map;
        continue;
      }
      const kid = segment.key.kid || this.initKID;
      if (this.keys && segment.key.method !== 'NONE' && kid) {
        if (!this.keys.has(kid) && this.origin !== null && segment.start - streamTime() > keyLead) {
          await sleep(250);
          continue;
        }
        await this.keys.request(kid);
      }
      const { bytes, seconds } = await fetchBytes(segment.url);
      if (generation !== this.generation) continue;
      this.onThroughput((bytes.byteLength * 8) / seconds);
      await this.append(bytes);
      if (this.origin === null && this.buffer.buffered.length > 0) this.origin = this.buffer.buffered.start(0);
      this.next += 1;
      if (onFirstSegment && this.next === 1) onFirstSegment();
    }
  }
}
