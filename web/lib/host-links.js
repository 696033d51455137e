// The host page's side of each guest connection: an offer made ready for a
// round (one RTCPeerConnection with the three data channels, ICE gathered),
// accepted with the joiner's answer once its channels open, then a link the
// session sends on until it closes, flushed.

import { CHANNELS } from './facts.js';
import { channelOptions, gatheringComplete } from './webrtc.js';

/** ICE gathering and channel opening, each. */
export const CONNECT_TIMEOUT_MS = 20_000;
/** Bytes queued on one guest's channel before it counts as not keeping up. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** How long a closing connection may take to flush what was sent. */
const CLOSE_FLUSH_MS = 2_000;

/** Resolves after `ms`. */
export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** One guest connection: its peer connection and its channels. */
export class GuestLink {
  /**
   * @param {RTCPeerConnection} pc
   * @param {Record<string, RTCDataChannel>} channels by label
   */
  constructor(pc, channels) {
    this.pc = pc;
    this.channels = channels;
    this.closing = false;
  }

  /**
   * @param {string} label
   * @param {string|Uint8Array} data
   * @returns {boolean} false when the guest is not keeping up
   */
  send(label, data) {
    const dc = this.channels[label];
    if (dc.readyState !== 'open') return true;
    if (dc.bufferedAmount > MAX_BUFFERED_BYTES) return false;
    dc.send(data);
    return true;
  }

  /**
   * Closes once what was sent has gone out (bounded): waits for the send
   * buffers to drain, then closes each channel (an SCTP stream reset, which
   * the guest receives after the data before it), then the connection.
   * Closing the connection at once would abort the association and could
   * drop the session's last bundles still in flight or unread.
   */
  async closeWhenFlushed() {
    if (this.closing) return;
    this.closing = true;
    const deadline = performance.now() + CLOSE_FLUSH_MS;
    const channels = Object.values(this.channels);
    const pending = () => channels.some((dc) => dc.readyState === 'open' && dc.bufferedAmount > 0);
    while (pending() && performance.now() < deadline) await sleep(50);
    const open = channels.filter((dc) => dc.readyState === 'open');
    for (const dc of channels) if (dc.readyState === 'open' || dc.readyState === 'connecting') dc.close();
    // Only channels that carried data are worth waiting for.
    while (open.some((dc) => dc.readyState !== 'closed') && performance.now() < deadline) await sleep(50);
    this.pc.close();
  }
}

/** An offer round's connection, before its answer arrives. */
export class PendingOffer {
  /** @param {RTCIceServer[]} iceServers */
  static async create(iceServers) {
    const pc = new RTCPeerConnection({ iceServers });
    /** @type {Record<string, RTCDataChannel>} */
    const channels = {};
    for (const label of CHANNELS) {
      channels[label] = pc.createDataChannel(label, channelOptions(label));
      // Binary messages as ArrayBuffers (see webrtc.js's guestChannels).
      channels[label].binaryType = 'arraybuffer';
    }
    try {
      await pc.setLocalDescription(await pc.createOffer());
      await gatheringComplete(pc, CONNECT_TIMEOUT_MS);
    } catch (e) {
      pc.close();
      throw e;
    }
    return new PendingOffer(pc, channels, pc.localDescription?.sdp ?? '');
  }

  /**
   * @param {RTCPeerConnection} pc
   * @param {Record<string, RTCDataChannel>} channels by label
   * @param {string} sdp
   */
  constructor(pc, channels, sdp) {
    this.pc = pc;
    this.channels = channels;
    this.sdp = sdp;
  }

  /**
   * Applies the joiner's answer and waits for every channel to open.
   * @param {string} answerSdp
   * @param {() => void} [onIceProgress] called once when ICE connects (the joiner's checks arrived)
   * @returns {Promise<GuestLink>}
   */
  async accept(answerSdp, onIceProgress) {
    const pc = this.pc;
    const iceUp = () => ['connected', 'completed'].includes(pc.iceConnectionState);
    const watchIce = () => {
      if (!iceUp()) return;
      pc.removeEventListener('iceconnectionstatechange', watchIce);
      onIceProgress?.();
    };
    pc.addEventListener('iceconnectionstatechange', watchIce);
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answerSdp });
    watchIce();
    const opened = Object.values(this.channels).map((dc) => new Promise((resolve, reject) => {
      if (dc.readyState === 'open') resolve(null);
      dc.addEventListener('open', () => resolve(null), { once: true });
      dc.addEventListener('close', () => reject(new Error(`channel ${dc.label} closed before it opened`)), { once: true });
    }));
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the joiner's channels did not open within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
    });
    try {
      await Promise.race([Promise.all(opened), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return new GuestLink(this.pc, this.channels);
  }

  close() {
    this.pc.close();
  }
}
