export { codecs, type Codec } from './codecs.js';
export {
  textInput,
  fixedRecordInput,
  generatedInput,
  textOutput,
  recordOutput,
  type InputFormat,
  type TextInputFormat,
  type FixedRecordInputFormat,
  type GeneratedInputFormat,
  type OutputFormat,
  type InputValue,
  type InputChunk,
  type ChunkOptions,
  type SplitInput,
} from './formats.js';
export {
  defineJob,
  validateJobDefinition,
  assertOneMapFunction,
  type JobDefinition,
  type AnyJobDefinition,
  type TaskContext,
  type MapContext,
  type ReduceContext,
  type CombineContext,
  type ReduceGroup,
  type PrepareContext,
} from './job.js';
export type { JsonValue, JsonObject } from './json.js';
export { sumValues } from './sum.js';
export { KEY_HASH_START, keyHash, keyHashStep } from '../util/key-hash.js';
export { openStore, type Store, type StoreStatus, type StoreWriter } from './stores.js';
