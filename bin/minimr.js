#!/usr/bin/env node
import('../dist/src/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND') {
    process.stderr.write('minimr is not built yet: run `npm run build` (or `npm start`) first\n');
    process.exit(1);
  }
  throw err;
});
