// Validated reassembly of chunked peer payloads (protocol/src/chunk.rs): a
// map or a level-transition payload arrives as `{index, data}` chunks of at
// most CHUNK_SIZE_BYTES UTF-8 bytes, then an end marker
// `{totalBytes, chunkCount, checksum}` (FNV-1a 64, 16 lowercase hex digits).
// Chunks must arrive strictly in order; every failure is a ChunkError, never
// a half-built payload.

import { CHUNK_SIZE_BYTES, MAX_PAYLOAD_BYTES } from './constants.js';

/** A rejected chunked payload; `kind` names the check that failed. */
export class ChunkError extends Error {
  /**
   * @param {'out-of-order'|'chunk-too-large'|'payload-too-large'|'count-mismatch'|'size-mismatch'|'checksum-mismatch'|'parse'} kind
   * @param {string} message
   */
  constructor(kind, message) {
    super(message);
    this.name = 'ChunkError';
    this.kind = kind;
  }
}

const encoder = new TextEncoder();

/**
 * FNV-1a 64 of `bytes`, as 16 lowercase hex digits. Computed on two 32-bit
 * halves (no BigInt in the loop: a map is tens of kilobytes).
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function fnv1a64(bytes) {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    // h * 0x100000001b3 = h * 0x1b3 + (h << 40), modulo 2^64.
    const p = lo * 0x1b3;
    const carry = Math.floor(p / 0x100000000);
    hi = (Math.imul(hi, 0x1b3) + carry + (lo << 8)) >>> 0;
    lo = p >>> 0;
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/**
 * The checksum of a text payload (over its UTF-8 bytes).
 * @param {string} text
 */
export function checksum(text) {
  return fnv1a64(encoder.encode(text));
}

/**
 * @typedef {{index: number, data: string}} Chunk
 * @typedef {{totalBytes: number, chunkCount: number, checksum: string}} ChunkEnd
 */

/** Collects chunks in order and checks them against the end marker. */
export class Reassembler {
  /** @param {number} [limit] largest payload accepted, in bytes */
  constructor(limit = MAX_PAYLOAD_BYTES) {
    this.limit = limit;
    /** @type {string[]} */
    this.parts = [];
    this.bytes = 0;
    this.next = 0;
  }

  /** Chunks accepted so far. */
  get received() {
    return this.next;
  }

  /**
   * Accepts the next chunk.
   * @param {Chunk} chunk
   * @throws {ChunkError} on a gap, a repeat, an oversized chunk or payload
   */
  push(chunk) {
    if (!chunk || chunk.index !== this.next || typeof chunk.data !== 'string') {
      throw new ChunkError('out-of-order',
        `chunk ${chunk && chunk.index} arrived but chunk ${this.next} was expected`);
    }
    const len = encoder.encode(chunk.data).length;
    if (len > CHUNK_SIZE_BYTES) {
      throw new ChunkError('chunk-too-large',
        `chunk ${chunk.index} holds ${len} bytes, more than ${CHUNK_SIZE_BYTES}`);
    }
    if (this.bytes + len > this.limit) {
      throw new ChunkError('payload-too-large', `payload exceeds ${this.limit} bytes`);
    }
    this.parts.push(chunk.data);
    this.bytes += len;
    this.next += 1;
  }

  /**
   * Checks the end marker and returns the payload text.
   * @param {ChunkEnd} end
   * @returns {string}
   */
  finish(end) {
    if (end.chunkCount !== this.next) {
      throw new ChunkError('count-mismatch',
        `end marker announces ${end.chunkCount} chunks but ${this.next} arrived`);
    }
    if (end.totalBytes !== this.bytes) {
      throw new ChunkError('size-mismatch',
        `end marker announces ${end.totalBytes} bytes but ${this.bytes} arrived`);
    }
    const text = this.parts.join('');
    const got = checksum(text);
    if (got !== end.checksum) {
      throw new ChunkError('checksum-mismatch',
        `checksum mismatch: announced ${end.checksum}, computed ${got}`);
    }
    return text;
  }

  /**
   * Checks the end marker and parses the payload as JSON.
   * @param {ChunkEnd} end
   * @returns {any}
   */
  finishParse(end) {
    const text = this.finish(end);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ChunkError('parse', `reassembled payload does not parse: ${e.message}`);
    }
  }
}

/**
 * Splits a payload into chunks cut at character boundaries (the sending
 * side, for a browser host or for tests).
 * @param {string} payload
 * @returns {{chunks: Chunk[], end: ChunkEnd}}
 */
export function split(payload) {
  /** @type {Chunk[]} */
  const chunks = [];
  let current = '';
  let currentBytes = 0;
  let total = 0;
  for (const ch of payload) {
    const n = encoder.encode(ch).length;
    if (currentBytes + n > CHUNK_SIZE_BYTES) {
      chunks.push({ index: chunks.length, data: current });
      current = '';
      currentBytes = 0;
    }
    current += ch;
    currentBytes += n;
    total += n;
  }
  if (current.length > 0) chunks.push({ index: chunks.length, data: current });
  return { chunks, end: { totalBytes: total, chunkCount: chunks.length, checksum: checksum(payload) } };
}
