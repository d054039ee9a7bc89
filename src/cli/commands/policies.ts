/** `minimr policies`: the scheduler policies, their options and defaults, from their own declarations. */
import { policyHelp } from '../../scheduler/index.js';
import { defineCommand } from '../options.js';

export const policiesCommand = defineCommand({
  command: 'policies',
  describe: 'list the scheduler policies (--policy) with their options (--policy-options) and defaults',
  builder: (y) => y,
  handler: async () => {
    process.stdout.write(`${policyHelp()}\n`);
  },
});
