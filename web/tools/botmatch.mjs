#!/usr/bin/env node
// The offline bot campaign on the WebAssembly engine: the same code as
// `cargo run -p engine --release --example botmatch` (engine::campaign),
// printing one JSON line per level and the same summary fields, so the two
// builds can be compared bit for bit (web/test/botmatch.test.mjs does).
//
// Usage: node web/tools/botmatch.mjs --seed S --players N --levels L [--difficulty D] [--max-ticks T]

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadCampfire } from '../lib/wasm.js';

const USAGE = 'usage: botmatch.mjs --seed S --players N(1-8) --levels L [--difficulty easy|normal|hard] [--max-ticks T]';
const FLAGS = { '--seed': 'seed', '--players': 'players', '--levels': 'levels', '--difficulty': 'difficulty', '--max-ticks': 'maxTicks' };

/** @param {string[]} argv */
function parseArgs(argv) {
  /** @type {Record<string, string|number>} */
  const spec = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = FLAGS[/** @type {keyof typeof FLAGS} */ (argv[i])];
    const value = argv[i + 1];
    if (!key || value === undefined) throw new Error(USAGE);
    spec[key] = key === 'difficulty' ? value : Number(value);
    if (key !== 'difficulty' && !Number.isInteger(spec[key])) throw new Error(`${argv[i]} needs an integer`);
  }
  return spec;
}

async function main() {
  let spec;
  try {
    spec = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`botmatch: ${/** @type {Error} */ (e).message}`);
    process.exit(2);
  }
  const wasm = readFileSync(fileURLToPath(new URL('../campfire.wasm', import.meta.url)));
  const campfire = await loadCampfire(wasm);
  const started = performance.now();
  const { levels, summary } = campfire.botmatch(spec);
  const seconds = (performance.now() - started) / 1000;
  for (const level of levels) console.log(JSON.stringify(level));
  // Level generation is inside the timed call here (the native example
  // times only the simulation), so this rate is a slight underestimate.
  console.log(JSON.stringify({
    ...summary,
    ticksPerSecond: seconds > 0 ? Math.round(summary.ticks / seconds) : 0,
    elapsedSeconds: seconds,
  }));
}

main();
