import { MinimrError } from '../errors.js';

/**
 * Opens a LevelDB store that one process holds at a time (its LOCK file). A second JobTracker or
 * `minimr local` on the same directory gets one line saying so, not level's "Database failed to
 * open".
 */
export async function openExclusively(db: { open(): Promise<void> }, dir: string): Promise<void> {
  try {
    await db.open();
  } catch (err) {
    if ((err as { cause?: { code?: unknown } }).cause?.code !== 'LEVEL_LOCKED') throw err;
    throw new MinimrError(
      'EBUSY',
      `another minimr process is using ${dir} (a JobTracker or \`minimr local\` with this --dir): ` +
        'stop it, or give another --dir',
      { path: dir },
    );
  }
}
