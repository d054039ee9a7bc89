import { FairPolicy, createPolicy } from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';

policyConformance('fair', () => new FairPolicy());
policyConformance('fair via createPolicy', () => createPolicy('fair'));
policyConformance('fair without delay or preemption', () => new FairPolicy({ nodeLocalDelayMs: 0, rackLocalDelayMs: 0, preemption: false }));
