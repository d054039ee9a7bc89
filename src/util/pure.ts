/**
 * The part of util with no I/O, no clock and no process state: what the pure folders (the public policy
 * API `minimr/scheduler`, the books) may import. util/index.ts re-exports all of it beside the helpers
 * that write files or keep process-wide state, so a plug-in importing 'minimr/scheduler' never loads those.
 */
export { hashSeed, seededRandom, seededUint32, streamFor } from './random.js';
export { Mt19937 } from './mt19937.js';
export { zipfSampler } from './zipf.js';
export { parseSize, formatBytes } from './units.js';
export { EventHeap, type HeapEntry } from './event-heap.js';
export { describeKey, escapeControlCharacters, escapeTerminalControls } from './text.js';
export { meanWithStandardError, type MeanWithError } from './stats.js';
export { keyValuePairs } from './key-value.js';
export { murmur3_32 } from './murmur3.js';
export { KEY_HASH_START, keyHash, keyHashStep, keySlotHash } from './key-hash.js';
export { readVaruint } from './varuint.js';
