// Starts the real lobby-server binary on 127.0.0.1:0 for the library's
// Node tests (LOBBY_SERVER_BIN, else the workspace's debug build).

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * @param {string[]} [extraArgs]
 * @returns {Promise<{url: string, stop: () => Promise<void>}>}
 */
export async function startLobbyServer(extraArgs = []) {
  const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../target');
  const bin = process.env.LOBBY_SERVER_BIN ?? join(target, 'debug', 'lobby-server');
  const dir = mkdtempSync(join(tmpdir(), 'campfire-web-test-'));
  const child = spawn(bin, [
    '--listen', '127.0.0.1:0', '--log-format', 'json',
    '--database-url', `sqlite://${join(dir, 'lobby.db')}`, ...extraArgs,
  ], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} printed no listening line within 30 s`)), 30_000);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = line.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolveUrl(m[1]); }
    });
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
