// Encrypted Media Extensions with the W3C Clear Key system: one MediaKeys for the video element and
// one key session per key ID, whose license comes from the gateway's /v1/licenses/clearkey. Key IDs
// are asked for as the stream reaches them, so with rotated keys each period's key is requested when
// its first segment is about to be appended (and a capture that began meanwhile refuses it).

/** Words for the problems the license endpoint answers with. */
const refusals = {
  'capture-active': 'key refused: a screen capture is active',
  'capture-unknown': 'key refused: the capture state is unknown',
  'session-revoked': 'session revoked',
  'token-expired': 'the session has expired',
  'token-wrong-asset': 'key refused: the key belongs to another asset',
  'rate-limited': 'key refused: too many refused requests, try again later',
};

/** An error the page shows in words. */
export class PlayerError extends Error {
  constructor(message, code, keyRefused = false) {
    super(message);
    this.code = code;
    this.keyRefused = keyRefused;
  }
}

function base64url(bytes) {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function hexBytes(hex) {
  return Uint8Array.from(hex.match(/../g), (pair) => parseInt(pair, 16));
}

export class LicenseClient {
  /**
   * `video` plays; `licenseURL` carries the session token; `scheme` is `cbcs` or `cenc`;
   * `codecs` are the video and audio codec strings of the stream.
   */
  constructor(video, licenseURL, scheme, codecs) {
    this.video = video;
    this.licenseURL = licenseURL;
    this.scheme = scheme;
    this.codecs = codecs;
    this.sessions = new Map();
  }

  /** Asks the browser for Clear Key with the stream's scheme and attaches it to the video. */
  async attach() {
    const capability = (type, codec) => ({ contentType: `${type}; codecs="${codec}"`, encryptionScheme: this.scheme });
    const configuration = { initDataTypes: ['keyids'], sessionTypes: ['temporary'] };
    if (this.codecs.video) configuration.videoCapabilities = [capability('video/mp4', this.codecs.video)];
    if (this.codecs.audio) configuration.audioCapabilities = [capability('audio/mp4', this.codecs.audio)];
    let access;
    try {
      access = await navigator.requestMediaKeySystemAccess('org.w3.clearkey', [configuration]);
    } catch (error) {
      throw new PlayerError(`this browser cannot decrypt ${this.scheme}`, 'no-clear-key');
    }
    const keys = await access.createMediaKeys();
    await this.video.setMediaKeys(keys);
    this.mediaKeys = keys;
  }

  /** True once the key `kid` has been asked for (and not refused). */
  has(kid) {
    return this.sessions.has(kid);
  }

  /** Resolves once the key `kid` (32 hex digits) is in the CDM; rejects with the refusal in words. */
  request(kid) {
    if (!this.sessions.has(kid)) {
      const pending = this.open(kid);
      this.sessions.set(kid, pending);
      // A refused key may be asked for again later (when the capture has stopped, say).
      pending.catch(() => this.sessions.delete(kid));
    }
    return this.sessions.get(kid);
  }

  async open(kid) {
    const session = this.mediaKeys.createSession('temporary');
    const licensed = new Promise((resolve, reject) => {
      session.addEventListener('message', (event) => {
        this.license(event.message).then((license) => session.update(license)).then(resolve, reject);
      });
    });
    const initData = new TextEncoder().encode(JSON.stringify({ kids: [base64url(hexBytes(kid))] }));
    await session.generateRequest('keyids', initData);
    try {
      await licensed;
    } catch (error) {
      session.close().catch(() => {});
      throw error;
    }
  }

  /** POSTs the CDM's license request as it is and returns the gateway's license. */
  async license(message) {
    const response = await fetch(this.licenseURL, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: message,
      cache: 'no-store',
    });
    if (response.ok) return new Uint8Array(await response.arrayBuffer());
    let code = 'license-refused';
    try {
      const problem = await response.json();
      code = (problem.type || '').replace('/problems/', '') || code;
    } catch (ignored) {
      // Not a problem document: the status says enough.
    }
    throw new PlayerError(refusals[code] || `key refused (${response.status} ${code})`, code, true);
  }
}
