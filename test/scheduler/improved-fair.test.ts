import { ImprovedFairPolicy, createPolicy } from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';

policyConformance('improved-fair', () => new ImprovedFairPolicy());
policyConformance('improved-fair via createPolicy', () => createPolicy('improved-fair'));
