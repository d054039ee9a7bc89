/**
 * The `minimr` command line: the command modules of ./commands, one per command group, under one
 * parser with the options every command takes and `--config FILE`; a usage error prints the help
 * and exits 2, a failed command prints `minimr: CODE: message` and exits 1.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { MinimrError } from '../errors.js';
import { escapeControlCharacters } from '../util/index.js';
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
  streamingCommand,
  submitCommand,
  userCommand,
  webPasswordCommand,
  policiesCommand,
  workerCommand,
  joinTokenCommand,
} from './commands/index.js';
import { commandOf, configFor, configPathOf, readConfigFile } from './config.js';
import { globalOptions } from './options.js';

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
    .command(fsCommand)
    .command(benchCommand)
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
      process.stderr.write(`${y.help()}\n\n${msg}${fromConfig}\n`);
      process.exit(2);
    })
    .parseAsync();
}

main().catch((err: unknown) => {
  if (err instanceof MinimrError) {
    process.stderr.write(`minimr: ${err.code}: ${escapeControlCharacters(err.message)}\n`);
    process.exit(1);
  }
  process.stderr.write(`minimr: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
