// WebRTC for campfire's peers in the browser: complete (non-trickle) ICE
// gathering, offers without their candidates, the data channels' options
// and their opening, and messages that arrive before anyone listens.

import { CHANNELS, UNRELIABLE_CHANNELS, UNRELIABLE_CHANNEL_ID } from './facts.js';
import { LobbyError } from './lobby-error.js';

/**
 * Resolves once the connection's ICE gathering is complete (non-trickle
 * signaling sends one complete description).
 * @param {RTCPeerConnection} pc
 * @param {number} timeoutMs
 * @returns {Promise<void>}
 */
export function gatheringComplete(pc, timeoutMs) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pc.removeEventListener('icegatheringstatechange', check);
      reject(new LobbyError(0, 'ice_gathering_timeout',
        `ICE gathering did not complete within ${timeoutMs} ms`));
    }, timeoutMs);
    function check() {
      if (pc.iceGatheringState === 'complete') {
        clearTimeout(timer);
        pc.removeEventListener('icegatheringstatechange', check);
        resolve();
      }
    }
    pc.addEventListener('icegatheringstatechange', check);
  });
}

/**
 * An offer without its ICE candidates, and the candidates set aside.
 *
 * A joiner applies the offer without them, so it sends no connectivity
 * check to the host before its answer has won the round: a losing
 * Chromium joiner that had the candidates would reach the host over ICE
 * and start a DTLS handshake the host then keeps, so the winner's never
 * completes. The candidates are added once the answer is accepted.
 * @param {string} sdp
 * @returns {{sdp: string, candidates: RTCIceCandidateInit[]}}
 */
export function withoutCandidates(sdp) {
  const lines = sdp.split('\r\n');
  /** @type {RTCIceCandidateInit[]} */
  const candidates = [];
  const kept = [];
  let mLine = -1;
  /** @type {string|null} */
  let mid = null;
  /** @type {RTCIceCandidateInit[]} */
  let section = [];
  const closeSection = () => {
    for (const c of section) c.sdpMid = mid;
    section = [];
  };
  for (const line of lines) {
    if (line.startsWith('m=')) {
      closeSection();
      mLine += 1;
      mid = null;
    } else if (line.startsWith('a=mid:')) {
      mid = line.slice('a=mid:'.length);
    }
    if (line.startsWith('a=candidate:') && mLine >= 0) {
      const c = { candidate: line.slice(2), sdpMLineIndex: mLine, sdpMid: /** @type {string|null} */ (null) };
      candidates.push(c);
      section.push(c);
    } else if (line !== 'a=end-of-candidates') {
      kept.push(line);
    }
  }
  closeSection();
  return { sdp: kept.join('\r\n'), candidates };
}

/** Messages that arrived on a channel before its consumer attached. */
const early = new WeakMap();

/**
 * Takes the messages that arrived on `dc` before this call and stops
 * buffering: a consumer calls it as it adds its own `message` listener, so
 * nothing the host sent while the other channel was still opening is lost.
 * @param {RTCDataChannel} dc
 * @returns {(string|ArrayBuffer)[]}
 */
export function takeEarlyMessages(dc) {
  const buffered = early.get(dc);
  if (!buffered) return [];
  early.delete(dc);
  dc.removeEventListener('message', buffered.listener);
  return buffered.messages;
}

/**
 * How a data channel is created: `input` and `reconciliation` reliable and
 * ordered, opened by the host and accepted by the guest; `input-unreliable`
 * unordered with no retransmissions, and negotiated: both sides create it
 * with these options and its fixed id.
 * @param {string} label
 * @returns {RTCDataChannelInit}
 */
export function channelOptions(label) {
  if (!(/** @type {readonly string[]} */ (UNRELIABLE_CHANNELS)).includes(label)) return { ordered: true };
  return { ordered: false, maxRetransmits: 0, negotiated: true, id: UNRELIABLE_CHANNEL_ID };
}

/**
 * Resolves with every data channel once all are open: the ones the host
 * opens (announced in band) and the negotiated ones, created here. Text
 * messages arriving before then are kept for takeEarlyMessages.
 * @param {RTCPeerConnection} pc
 * @param {number} timeoutMs
 * @returns {Promise<Record<string, RTCDataChannel>>}
 */
export function guestChannels(pc, timeoutMs) {
  const negotiated = CHANNELS.filter((l) => channelOptions(l).negotiated);
  const announced = CHANNELS.filter((l) => !channelOptions(l).negotiated);
  const ours = negotiated.map((label) => pc.createDataChannel(label, channelOptions(label)));
  return remoteChannels(pc, announced, ours, timeoutMs);
}

/**
 * Resolves with the named data channels once the remote side has opened
 * them all and every channel of `ours` is open too. Messages arriving
 * before then are kept for takeEarlyMessages.
 * @param {RTCPeerConnection} pc
 * @param {string[]} labels
 * @param {RTCDataChannel[]} ours
 * @param {number} timeoutMs
 * @returns {Promise<Record<string, RTCDataChannel>>}
 */
function remoteChannels(pc, labels, ours, timeoutMs) {
  return new Promise((resolve, reject) => {
    /** @type {Record<string, RTCDataChannel>} */
    const open = {};
    const timer = setTimeout(() => reject(new LobbyError(0, 'connect_timeout',
      `the host's data channels did not open within ${timeoutMs / 1000} s`)), timeoutMs);
    const done = () => {
      if (labels.every((l) => open[l]) && ours.every((dc) => open[dc.label])) {
        clearTimeout(timer);
        resolve(open);
      }
    };
    const track = (/** @type {RTCDataChannel} */ dc) => {
      // Binary messages as ArrayBuffers: a Blob needs an asynchronous
      // read, which would reorder them among the text ones.
      dc.binaryType = 'arraybuffer';
      /** @type {(string|ArrayBuffer)[]} */
      const messages = [];
      const listener = (/** @type {MessageEvent} */ m) => {
        if (typeof m.data === 'string' || m.data instanceof ArrayBuffer) messages.push(m.data);
      };
      dc.addEventListener('message', listener);
      early.set(dc, { messages, listener });
      if (dc.readyState === 'open') {
        open[dc.label] = dc;
        done();
      } else {
        dc.addEventListener('open', () => { open[dc.label] = dc; done(); }, { once: true });
      }
    };
    for (const dc of ours) track(dc);
    pc.addEventListener('datachannel', (ev) => {
      if (labels.includes(ev.channel.label)) track(ev.channel);
    });
  });
}
