/**
 * DistCp, as Hadoop's: a map-only job that copies files between stores, which `minimr fs cp` runs
 * when a tree is large. The client lists the source tree, makes the destination's directories and
 * deals the files out to the maps by size (largest first, each to the map with the fewest bytes so
 * far: Hadoop's uniform-size splitting); each map copies its files one after another, each through
 * the destination store's create, so a file appears only whole, and emits `destination<TAB>bytes`.
 * A source read is pinned to the version listed, when given (ECHANGED if the file changed meanwhile).
 *
 * params: `splits` (one list of files per map), `from` and `to` (the stores' settings of each end:
 * a block-store end is reached through the cluster's own WebHDFS with the user's delegation token),
 * `overwrite`.
 */
import { defineJob, generatedInput, openStore, textOutput, type JsonValue, type Store } from 'minimr';

/** One file to copy. */
export interface CopyItem {
  readonly src: string;
  readonly dst: string;
  readonly bytes: number;
  readonly version: string;
}

type Settings = Record<string, string>;

export default defineJob({
  name: 'distcp',
  input: generatedInput((params) => params.splits as JsonValue[]),
  output: textOutput(),
  reducers: 0,
  async map(_index, split, ctx) {
    const params = ctx.params as { from: Settings; to: Settings; overwrite: boolean };
    const items = split as unknown as CopyItem[];
    const stores = new Map<string, Promise<Store>>();
    const storeOf = (uri: string, settings: Settings): Promise<Store> => {
      const key = `${uri.slice(0, uri.indexOf('/', uri.indexOf('//') + 2))}|${JSON.stringify(settings)}`;
      let store = stores.get(key);
      if (!store) stores.set(key, (store = openStore(uri, settings)));
      return store;
    };
    for (const item of items) {
      const from = await storeOf(item.src, params.from);
      const to = await storeOf(item.dst, params.to);
      const writer = await to.create(item.dst, { overwrite: params.overwrite });
      let bytes = 0;
      try {
        for await (const chunk of from.readRange(item.src, 0, Number.POSITIVE_INFINITY, item.version || undefined)) {
          await writer.write(chunk);
          bytes += chunk.length;
        }
        await writer.close();
      } catch (err) {
        await writer.abort().catch(() => undefined);
        throw err;
      }
      ctx.emit(item.dst, bytes);
    }
  },
});
