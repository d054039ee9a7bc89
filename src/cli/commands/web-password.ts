/** `minimr web-password`: the password of the JobTracker's web pages, from the cluster secret. */
import { MinimrError } from '../../errors.js';
import { webPassword } from '../../runtime/index.js';
import { peerSecurity } from '../client.js';
import { defineCommand, jobtrackerOption } from '../options.js';

export const webPasswordCommand = defineCommand({
  command: 'web-password',
  describe:
    "print the password of the JobTracker's web pages and /metrics " +
    '(HTTP Basic, any user name), derived from the cluster secret',
  builder: (y) => jobtrackerOption(y),
  handler: async (argv) => {
    const { credentials } = await peerSecurity(argv);
    if (!credentials)
      throw new MinimrError(
        'EAUTH',
        `no cluster secret for ${argv.jobtracker}: give --secret-file (or $MINIMR_SECRET_FILE)`,
      );
    process.stdout.write(`${webPassword(credentials.secret)}\n`);
  },
});
