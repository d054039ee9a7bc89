/** `minimr profiles list | show | import | rm`: the profiles of recurring jobs the JobTracker keeps. */
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { JsonValue } from '../../api/index.js';
import { MinimrError } from '../../errors.js';
import { withClient } from '../client.js';
import { defineGroup, jobtrackerOption } from '../options.js';

export const profilesCommand = defineGroup({
  command: 'profiles',
  describe: 'profiles of recurring jobs kept by the JobTracker: list | show | import | rm',
  builder: (y) =>
    jobtrackerOption(y)
      .command(
        'list',
        'list the profiles',
        (yy) => yy,
        async (argv) => {
          await withClient(argv, async (c) => {
            for (const p of await c.profiles()) {
              const attempts = (b: readonly { attempts: number }[]) =>
                Math.round(b.reduce((n, x) => n + x.attempts, 0));
              const sizes = (b: readonly { bufferMiB: number }[]) => b.map((x) => x.bufferMiB).join(',') || '-';
              process.stdout.write(
                `${p.job}  runs ${p.runs}  imports ${p.imports}  ` +
                  `maps ${attempts(p.map)} at buffers ${sizes(p.map)} MiB  ` +
                  `reduces ${attempts(p.reduce)} at ${sizes(p.reduce)} MiB  ` +
                  `updated ${new Date(p.updatedAt).toISOString()}\n`,
              );
            }
          });
        },
      )
      .command(
        'show <job>',
        "print a job's profile (JSON)",
        (yy) => yy.positional('job', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const [p] = await c.profiles(argv.job);
            if (!p)
              throw new MinimrError('ENOENT', `no profile of a job named ${argv.job} (see \`minimr profiles list\`)`);
            process.stdout.write(`${JSON.stringify(p, null, 2)}\n`);
          });
        },
      )
      .command(
        'import <file>',
        'add a `minimr profile` result (profile-JOB.json) to the profile of its job',
        (yy) =>
          yy.positional('file', { type: 'string', demandOption: true }).option('job', {
            type: 'string',
            describe: "the job's name (defineJob's `name`); default: the one the profile recorded",
          }),
        async (argv) => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(await readFile(resolvePath(argv.file), 'utf8'));
          } catch (err) {
            throw new MinimrError('EBADCONF', `cannot read the profile ${argv.file}: ${(err as Error).message}`);
          }
          if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
            throw new MinimrError('EBADCONF', `${argv.file} is not a \`minimr profile\` result (a JSON object)`);
          const named = (parsed as { jobName?: unknown }).jobName;
          const job = argv.job ?? (typeof named === 'string' ? named : undefined);
          if (!job)
            throw new MinimrError(
              'EBADCONF',
              `${argv.file} does not say which job it profiles: give --job NAME (the name in its defineJob)`,
            );
          await withClient(argv, async (c) => {
            const p = await c.importProfile(job, parsed as Record<string, JsonValue>);
            process.stdout.write(`profile of ${p.job}: ${p.runs} runs, ${p.imports} imports\n`);
          });
        },
      )
      .command(
        'rm <job>',
        "forget a job's profile (its next run is regular)",
        (yy) => yy.positional('job', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => {
            if (!(await c.removeProfile(argv.job)))
              throw new MinimrError('ENOENT', `no profile of a job named ${argv.job}`);
          });
        },
      )
      .demandCommand(1),
});
