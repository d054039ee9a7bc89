/**
 * The `minimr` command line: the command modules of ./commands, one per command group, under one
 * parser with the options every command takes and `--config FILE`. It fails as a Unix tool does
 * (./failure.ts): a usage error prints what was wrong, the nearest command or flag and where the
 * help is, and exits 2; a failed command prints `minimr: CODE: message` and exits 1; a closed pipe
 * ends it quietly with 0.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { MinimrError } from '../errors.js';
import {
  benchCommand,
  fsCommand,
  jobCommand,
  jobtrackerCommand,
  localCommand,
  mrcCommand,
  profileCommand,
  profilesCommand,
  runCommand,
  simCommand,
  sweepCommand,
  streamingCommand,
  submitCommand,
  userCommand,
  webPasswordCommand,
  policiesCommand,
  policyCommand,
  workerCommand,
  joinTokenCommand,
} from './commands/index.js';
import { commandOf, configFor, configPathOf, readConfigFile } from './config.js';
import { endQuietlyOnClosedPipe, exitWithFailure, USAGE_EXIT_CODE, usageFailure } from './failure.js';
import { globalOptions } from './options.js';

/**
 * yargs reads `--workers many` as NaN, and a port is any number to it: usage errors naming the
 * option, before any command runs.
 */
function refuseBadNumbers(argv: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(argv)) {
    if (typeof value !== 'number' || key.length <= 1 || /[A-Z]/.test(key)) continue;
    if (Number.isNaN(value)) throw new MinimrError('EUSAGE', `--${key} takes a number`);
    if (/(^|-)port$/.test(key) && !(Number.isInteger(value) && value >= 0 && value <= 65535))
      throw new MinimrError('EUSAGE', `--${key} takes a port number from 0 to 65535, not ${value}`);
  }
}

async function main(): Promise<void> {
  const args = hideBin(process.argv);
  const configPath = configPathOf(args);
  const config = configPath !== undefined ? configFor(await readConfigFile(configPath), commandOf(args)) : {};
  await globalOptions(yargs(args).scriptName('minimr').usage('$0 <command> [options]'))
    .config(config)
    // In the order `minimr --help` lists them.
    .command(localCommand)
    .command(runCommand)
    .command(simCommand)
    .command(sweepCommand)
    .command(jobtrackerCommand)
    .command(workerCommand)
    .command(submitCommand)
    .command(streamingCommand)
    .command(profileCommand)
    .command(profilesCommand)
    .command(jobCommand)
    .command(mrcCommand)
    .command(userCommand)
    .command(webPasswordCommand)
    .command(joinTokenCommand)
    .command(policiesCommand)
    .command(policyCommand)
    .command(fsCommand)
    .command(benchCommand)
    .middleware(refuseBadNumbers)
    .demandCommand(1)
    .strict()
    .help()
    .fail((msg, err, y) => {
      if (err) throw err;
      const fromConfig =
        configPath !== undefined && /^Unknown argument/.test(msg)
          ? ` (an option in ${configPath}'s "${commandOf(args)}" section or ` +
            `on the command line that this command does not have)`
          : '';
      // yargs' usage object: help() is the help text of the command being parsed.
      const help = String((y as unknown as { help(): string }).help());
      const [line, where] = usageFailure(msg, help, args);
      process.stderr.write(`minimr: ${line}${fromConfig}\n${where}\n`);
      process.exit(USAGE_EXIT_CODE);
    })
    .parseAsync();
}

endQuietlyOnClosedPipe();
process.on('uncaughtException', (err) => exitWithFailure(err));
process.on('unhandledRejection', (err) => exitWithFailure(err));
main().catch((err: unknown) => exitWithFailure(err));
