/**
 * `minimr user add | list | revoke`: the users the admin gives credentials (auth.ts). `add` writes
 * the credential to a file only its owner may read, for the admin to hand to the user, who then
 * acts as that user and no other (`--credential-file`).
 */
import { writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { MinimrError } from '../../errors.js';
import { withClient } from '../client.js';
import { defineGroup, jobtrackerOption } from '../options.js';

function when(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString();
}

export const userCommand = defineGroup({
  command: 'user',
  describe: 'users and their credentials (the admin): add | list | revoke',
  builder: (y) =>
    jobtrackerOption(y)
      .command(
        'add <name>',
        'give a user a credential, written to a file only you can read (a new key: any old one stops working)',
        (yy) =>
          yy
            .positional('name', { type: 'string', demandOption: true })
            .option('out', { type: 'string', describe: 'the credential file to write (default: ./NAME.credential)' }),
        async (argv) => {
          const out = resolvePath(argv.out ?? `${argv.name}.credential`);
          const credential = await withClient(argv, (c) => c.addUser(argv.name));
          try {
            await writeFile(out, `${JSON.stringify(credential)}\n`, { mode: 0o600, flag: 'wx' });
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code;
            throw new MinimrError(
              code === 'EEXIST' ? 'EEXIST' : 'EBADCONF',
              `cannot write the credential of ${argv.name} to ${out} (${code ?? (err as Error).message}); ` +
                'the JobTracker has made it, so run `minimr user add` again with another --out ' +
                '(the new key replaces this one)',
            );
          }
          process.stdout.write(
            `credential of user ${credential.user} written to ${out}: give it to them ` +
              '(`--credential-file` or MINIMR_CREDENTIAL_FILE)\n',
          );
        },
      )
      .command(
        'list',
        'list the users with credentials, current and revoked',
        (yy) => yy,
        async (argv) => {
          const users = await withClient(argv, (c) => c.users());
          process.stdout.write('USER  CREATED  REVOKED\n');
          for (const u of users) process.stdout.write(`${u.name}  ${when(u.createdAt)}  ${when(u.revokedAt)}\n`);
        },
      )
      .command(
        'revoke <name>',
        "revoke a user's credential: its connections close and it can no longer sign in",
        (yy) => yy.positional('name', { type: 'string', demandOption: true }),
        async (argv) => {
          const u = await withClient(argv, (c) => c.revokeUser(argv.name));
          process.stdout.write(`revoked user ${u.name} at ${when(u.revokedAt)}\n`);
        },
      ),
});
