/**
 * `minimr policy check FILE`: the conformance suite (src/scheduler/conformance.ts) against a policy
 * plug-in, one line per contract rule it breaks with the decision that broke it; exit status 1 when
 * it breaks any, 0 when it keeps the contract. A file that does not load is EBADCONF, as for --policy.
 */
import { loadPolicyPlugin } from '../../policy-plugins/index.js';
import { checkConformance, conformanceLines } from '../../scheduler/index.js';
import { defineGroup, policySettings } from '../options.js';

export const policyCommand = defineGroup({
  command: 'policy',
  describe: 'policy plug-ins: check',
  builder: (y) =>
    y
      .command(
        'check <file>',
        'run the policy conformance suite against a plug-in file and print each contract rule it breaks',
        (yy) =>
          yy
            .positional('file', { type: 'string', demandOption: true, describe: 'the plug-in (.js, .mjs or .ts)' })
            .option('policy-options', { type: 'string', describe: 'options to create it with, as a JSON object' }),
        async (argv) => {
          const { policyOptions } = await policySettings(argv);
          const definition = await loadPolicyPlugin(argv.file);
          const report = checkConformance(definition, policyOptions);
          const lines = conformanceLines(report);
          for (const line of lines) process.stdout.write(`${line}\n`);
          process.stdout.write(
            lines.length === 0
              ? `${argv.file} (${report.policy}): keeps the policy contract (${report.scenarios} scenarios, ` +
                  `${report.calls} calls)\n`
              : `${argv.file} (${report.policy}): breaks ${lines.length} rule(s) of the policy contract\n`,
          );
          if (lines.length > 0) process.exitCode = 1;
        },
      )
      .demandCommand(1),
});
