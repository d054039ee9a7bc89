#!/usr/bin/env node
/** Loads the built CLI; a failure to load it is one `minimr: EINTERNAL:` line too (a stack with MINIMR_DEBUG=1). */
const NOT_BUILT = /Cannot find module '[^']*dist\/src\/cli\/main\.js'/;
import('../dist/src/cli/main.js').catch((err) => {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && NOT_BUILT.test(String(err.message))) {
    process.stderr.write('minimr: EINTERNAL: minimr is not built yet: run `npm run build` (or `npm start`) first\n');
    process.exit(1);
  }
  process.stderr.write(`minimr: EINTERNAL: ${err?.message ? err.message : String(err)}\n`);
  if (process.env.MINIMR_DEBUG === '1' && err?.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
