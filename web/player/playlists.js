// HLS playlists (RFC 8216) as far as the page needs them: the master's video variants and audio
// renditions, and a media playlist's init segment, segments, their times and their keys.

/** The attributes of a tag line's attribute list; a quoted comma never splits a value. */
export function attributes(text) {
  const result = {};
  const pattern = /([A-Z0-9-]+)=("[^"]*"|[^,]*)/g;
  for (const match of text.matchAll(pattern)) {
    const value = match[2];
    result[match[1]] = value.startsWith('"') ? value.slice(1, -1) : value;
  }
  return result;
}

function lines(text) {
  return text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line.length > 0);
}

function tagValue(line) {
  return line.slice(line.indexOf(':') + 1);
}

/** The variants (lowest bandwidth first) and audio renditions of a master playlist at `base`. */
export function parseMaster(text, base) {
  const all = lines(text);
  if (all[0] !== '#EXTM3U') throw new Error('the master playlist does not start with #EXTM3U');
  const variants = [];
  const audio = [];
  for (let index = 0; index < all.length; index += 1) {
    const line = all[index];
    if (line.startsWith('#EXT-X-STREAM-INF:')) {
      const info = attributes(tagValue(line));
      const uri = all[index + 1];
      if (!uri || uri.startsWith('#')) continue;
      variants.push({
        bandwidth: Number(info.BANDWIDTH) || 0,
        codecs: (info.CODECS || '').split(',').map((codec) => codec.trim()).filter(Boolean),
        audioGroup: info.AUDIO || null,
        url: new URL(uri, base).href,
      });
    } else if (line.startsWith('#EXT-X-MEDIA:')) {
      const info = attributes(tagValue(line));
      if (info.TYPE !== 'AUDIO' || !info.URI) continue;
      audio.push({
        group: info['GROUP-ID'],
        name: info.NAME || info.LANGUAGE || 'Audio',
        language: info.LANGUAGE || '',
        isDefault: info.DEFAULT === 'YES',
        url: new URL(info.URI, base).href,
      });
    }
  }
  variants.sort((a, b) => a.bandwidth - b.bandwidth);
  return { variants, audio };
}

/** The key ID a rewritten key URI names (`…/v1/keys/{32 hex digits}?token=…`), or null. */
export function keyIDFromURI(uri) {
  const match = /\/([0-9a-f]{32})(?:\?|$)/.exec(new URL(uri, 'http://x/').pathname + '?');
  return match ? match[1] : null;
}

/**
 * A media playlist at `base`: its segments with start times from 0, each with the init segment
 * (EXT-X-MAP) and the key (method and key ID) the tags before it name, so that a period with a new
 * key (and a new init segment) is recognised when its first segment is reached.
 */
export function parseMedia(text, base) {
  const all = lines(text);
  if (all[0] !== '#EXTM3U') throw new Error('the media playlist does not start with #EXTM3U');
  let map = null;
  let key = { method: 'NONE', kid: null };
  let duration = null;
  let start = 0;
  const segments = [];
  for (const line of all) {
    if (line.startsWith('#EXT-X-MAP:')) {
      map = new URL(attributes(tagValue(line)).URI, base).href;
    } else if (line.startsWith('#EXT-X-KEY:')) {
      const info = attributes(tagValue(line));
      key = { method: info.METHOD || 'NONE', kid: info.URI ? keyIDFromURI(new URL(info.URI, base).href) : null };
    } else if (line.startsWith('#EXTINF:')) {
      duration = parseFloat(tagValue(line));
    } else if (!line.startsWith('#') && duration !== null) {
      segments.push({ url: new URL(line, base).href, start, duration, key, map });
      start += duration;
      duration = null;
    }
  }
  return {
    url: base.toString(),
    map: segments.length ? segments[0].map : map,
    segments,
    duration: start,
    method: segments.length ? segments[0].key.method : key.method,
  };
}

/** The EME encryption scheme of an HLS key method: `cbcs`, `cenc`, or null for a clear stream. */
export function encryptionScheme(method) {
  if (method === 'SAMPLE-AES') return 'cbcs';
  if (method === 'SAMPLE-AES-CTR') return 'cenc';
  if (method === 'NONE') return null;
  throw new Error(`key method ${method} cannot be decrypted in a browser`);
}

/** The default key ID of an init segment's `tenc` box (ISO/IEC 23001-7 §8.2), as 32 hex digits. */
export function initKeyID(bytes) {
  const view = new Uint8Array(bytes);
  for (let index = 4; index + 28 <= view.length; index += 1) {
    if (view[index] === 0x74 && view[index + 1] === 0x65 && view[index + 2] === 0x6e && view[index + 3] === 0x63) {
      // size(4) type(4) version+flags(4) reserved(1) pattern(1) isProtected(1) ivSize(1) KID(16)
      const kid = view.subarray(index + 12, index + 28);
      return Array.from(kid, (byte) => byte.toString(16).padStart(2, '0')).join('');
    }
  }
  return null;
}
