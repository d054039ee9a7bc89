/** `minimr join-token`: the one string a worker or the operator's tools join the cluster with. */
import { readFile } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { MinimrError } from '../../errors.js';
import { AUTHORITY_CERT_FILE, certificateFingerprint, makeJoinToken, readSecretFile } from '../../runtime/index.js';
import { readCredentialFile } from '../../runtime/wire/index.js';
import { defineCommand } from '../options.js';

/** Where a JobTracker notes the URL others reach it by (jobtracker.ts writes it at start). */
export const JOIN_URL_FILE = 'join-url';

export const joinTokenCommand = defineCommand({
  command: 'join-token',
  describe:
    "print the string a worker joins with (--join-token or MINIMR_JOIN_TOKEN): the JobTracker's URL, the " +
    'cluster secret and the fingerprint of its certificate authority; with --credential, the string a user ' +
    'joins with (their credential instead of the secret); run it where the JobTracker directory is',
  builder: (y) =>
    y
      .option('dir', { type: 'string', default: '.minimr/jobtracker', describe: "the JobTracker's directory" })
      .option('url', {
        type: 'string',
        describe: 'the URL workers reach the JobTracker by (default: the one it noted in its directory at start)',
      })
      .option('credential', {
        type: 'string',
        describe: "a user's credential file (`minimr user add` wrote it): the token acts as that user, and no other",
      }),
  handler: async (argv) => {
    const dir = resolvePath(argv.dir);
    let url = argv.url;
    if (url === undefined) {
      try {
        url = (await readFile(join(dir, JOIN_URL_FILE), 'utf8')).trim();
      } catch {
        throw new MinimrError(
          'EBADCONF',
          `no JobTracker has started in ${dir} (no ${JOIN_URL_FILE} there): give its directory with --dir, or its URL with --url`,
        );
      }
    }
    let who: { secret: string } | { user: string; key: string };
    if (argv.credential !== undefined) {
      const credential = await readCredentialFile(resolvePath(argv.credential));
      who = { user: credential.user, key: credential.secret.toString('base64url') };
    } else {
      const secretFile = argv['secret-file'] ?? process.env.MINIMR_SECRET_FILE ?? join(dir, 'secret');
      who = { secret: (await readSecretFile(resolvePath(secretFile))).toString('utf8') };
    }
    let ca: string | undefined;
    if (url.startsWith('wss:')) {
      let pem: string;
      try {
        pem = await readFile(join(dir, AUTHORITY_CERT_FILE), 'utf8');
      } catch {
        throw new MinimrError(
          'EBADCONF',
          `${url} is TLS but ${dir} holds no cluster authority (${AUTHORITY_CERT_FILE}): start the JobTracker there first`,
        );
      }
      ca = certificateFingerprint(pem);
    }
    process.stdout.write(`${makeJoinToken({ url, ...(ca !== undefined ? { ca } : {}), ...who })}\n`);
  },
});
