export { seededRandom, seededUint32 } from './random.js';
