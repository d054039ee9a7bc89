/**
 * `minimr mrc activate | list | deactivate`: MR-clusters (FAWKES), the operator's side of
 * src/runtime/mr-cluster-runtime.ts.
 */
import { MinimrError } from '../../errors.js';
import type { JobClient, MrClusterListing, MrClusterRow } from '../../runtime/index.js';
import { formatBytes } from '../../util/index.js';
import { withClient } from '../client.js';
import { defineGroup, jobtrackerOption } from '../options.js';

const fixed = (x: number | undefined, digits = 3): string => (x === undefined ? '-' : x.toFixed(digits));

/** One line per cluster, then its nodes by kind. */
export function formatMrClusters(listing: MrClusterListing): string {
  const header = [
    'NAME',
    'STATE',
    'MIN',
    'CORE',
    'TC',
    'TR',
    'LEAVING',
    'WEIGHT',
    'SHARE',
    'D',
    'JOBS',
    'WAITING',
    'STORED',
    'BLOCKS',
    'MISSING',
  ];
  const rows = listing.clusters.map((c) => [
    c.name,
    c.state,
    String(c.minNodes),
    String(c.nodes.core.length),
    String(c.nodes['transient-core'].length),
    String(c.nodes.transient.length),
    String(c.leaving.length),
    fixed(c.weight),
    fixed(c.share),
    fixed(c.discrimination, 4),
    String(c.jobs),
    String(c.waitingJobs),
    formatBytes(c.storedBytes),
    String(c.blocks),
    String(c.missingBlocks),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out = [line(header), ...rows.map(line)];
  for (const c of listing.clusters) {
    const kinds = (['core', 'transient-core', 'transient'] as const)
      .filter((k) => c.nodes[k].length > 0)
      .map((k) => `${k}: ${c.nodes[k].join(', ')}`);
    const leaving = c.leaving.map((l) => `${l.workerId} -> ${l.to}`);
    out.push(
      `${c.name}: ${kinds.join('; ') || 'no nodes'}${leaving.length > 0 ? `; draining: ${leaving.join(', ')}` : ''}`,
    );
    if (c.queued) out.push(`  ${c.queued}`);
    if (c.inputError) out.push(`  input ${c.inputPath ?? ''} could not be loaded: ${c.inputError}`);
  }
  out.push(`free pool: ${listing.freeNodes.join(', ') || 'none'}`);
  if (listing.globalDiscrimination !== undefined)
    out.push(`Var(D) of the last interval: ${listing.globalDiscrimination.toFixed(5)}`);
  return `${out.join('\n')}\n`;
}

function describeRow(c: MrClusterRow): string {
  if (c.queued) return `${c.queued}\n`;
  return (
    `MR-cluster ${c.name} is ${c.state}: core ` +
    `nodes ${c.nodes.core.join(', ') || 'none yet'}${c.inputPath ? `, input ${c.inputPath} -> /mrc/${c.name}/input` : ''}\n`
  );
}

/** Waits until the cluster is active (or released, or `timeoutMs` passed). */
async function waitActive(client: JobClient, name: string, timeoutMs: number): Promise<MrClusterRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = (await client.mrcList()).clusters.find((c) => c.name === name);
    if (!row) throw new MinimrError('ENOMRCLUSTER', `MR-cluster ${name} was released before it became active`);
    if (row.state === 'active') return row;
    if (Date.now() > deadline)
      throw new MinimrError(
        'ETIMEOUT',
        `MR-cluster ${name} is still ${row.state} after ${timeoutMs} ms${row.queued ? `: ${row.queued}` : ''}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export const mrcCommand = defineGroup({
  command: 'mrc',
  describe: 'MR-clusters (FAWKES): activate | list | deactivate',
  builder: (y) =>
    jobtrackerOption(y)
      .command(
        'activate <name>',
        'request an MR-cluster with a minimum share of core nodes; it waits in the queue when the minimum does not fit',
        (yy) =>
          yy
            .positional('name', { type: 'string', demandOption: true })
            .option('min-nodes', {
              type: 'number',
              demandOption: true,
              describe: 'minimum share: core nodes it keeps while it has jobs',
            })
            .option('input', {
              type: 'string',
              describe: 'block-store path (file or directory) copied into /mrc/NAME/input on its core nodes',
            })
            .option('wait', { type: 'boolean', default: false, describe: 'return only once the cluster is active' })
            .option('wait-timeout-ms', { type: 'number', default: 600_000 }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const row = await c.mrcActivate(argv.name, argv['min-nodes'], argv.input);
            process.stdout.write(describeRow(row));
            if (argv.wait && row.state !== 'active')
              process.stdout.write(describeRow(await waitActive(c, argv.name, argv['wait-timeout-ms'])));
          });
        },
      )
      .command(
        'list',
        'MR-clusters: nodes by kind, weight, share and discrimination of the last interval, job queue, stored blocks',
        (yy) => yy.option('json', { type: 'boolean', default: false }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const listing = await c.mrcList();
            process.stdout.write(argv.json ? `${JSON.stringify(listing, null, 2)}\n` : formatMrClusters(listing));
          });
        },
      )
      .command(
        'deactivate <name>',
        'deactivate an MR-cluster without jobs: /mrc/NAME is saved to ' +
          '/mrc-saved/NAME, then its nodes return to the pool',
        (yy) => yy.positional('name', { type: 'string', demandOption: true }),
        async (argv) => {
          await withClient(argv, async (c) => {
            const row = await c.mrcDeactivate(argv.name);
            process.stdout.write(
              `MR-cluster ${row.name} is deactivating: its namespace goes to ` +
                `/mrc-saved/${row.name}, then ` +
                `its ${row.nodes.core.length + row.nodes['transient-core'].length + row.nodes.transient.length} ` +
                `nodes return to the pool\n`,
            );
          });
        },
      )
      .demandCommand(1),
});
