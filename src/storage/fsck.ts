/**
 * `minimr fs fsck [PATH]`, as HDFS's: every file under PATH with its blocks, the live replicas of
 * each against the file's replication, and the totals. A block with fewer live replicas than its
 * file asks is under-replicated; one with none is missing (its data is gone until a holder comes
 * back), and then the file system is CORRUPT (the CLI exits 1).
 */

export interface FsckBlock {
  readonly blockId: string;
  readonly length: number;
  /** Live datanodes holding it, in id order. */
  readonly replicas: readonly string[];
}

export interface FsckFile {
  readonly path: string;
  readonly length: number;
  readonly replication: number;
  readonly blocks: readonly FsckBlock[];
}

export interface FsckReport {
  readonly path: string;
  readonly files: readonly FsckFile[];
  readonly directories: number;
  readonly totalBlocks: number;
  readonly totalBytes: number;
  /** Live replicas over all blocks. */
  readonly totalReplicas: number;
  readonly underReplicated: readonly {
    readonly path: string;
    readonly blockId: string;
    readonly replicas: number;
    readonly replication: number;
  }[];
  readonly missing: readonly { readonly path: string; readonly blockId: string; readonly length: number }[];
  readonly liveDatanodes: number;
  readonly healthy: boolean;
}

/** Tallies the files' blocks into a report. */
export function fsckReport(
  path: string,
  files: readonly FsckFile[],
  directories: number,
  liveDatanodes: number,
): FsckReport {
  let totalBlocks = 0;
  let totalBytes = 0;
  let totalReplicas = 0;
  const underReplicated: Array<FsckReport['underReplicated'][number]> = [];
  const missing: Array<FsckReport['missing'][number]> = [];
  for (const f of files) {
    for (const b of f.blocks) {
      totalBlocks++;
      totalBytes += b.length;
      totalReplicas += b.replicas.length;
      if (b.replicas.length === 0) missing.push({ path: f.path, blockId: b.blockId, length: b.length });
      else if (b.replicas.length < f.replication)
        underReplicated.push({
          path: f.path,
          blockId: b.blockId,
          replicas: b.replicas.length,
          replication: f.replication,
        });
    }
  }
  return {
    path,
    files,
    directories,
    totalBlocks,
    totalBytes,
    totalReplicas,
    underReplicated,
    missing,
    liveDatanodes,
    healthy: missing.length === 0,
  };
}

/** HDFS-like text: one line per file (with `verbose`, per block too), the problems, then the summary. */
export function formatFsck(r: FsckReport, verbose = false): string {
  const lines: string[] = [`FSCK of ${r.path}`];
  const missingBy = new Map<string, number>();
  for (const m of r.missing) missingBy.set(m.path, (missingBy.get(m.path) ?? 0) + 1);
  for (const f of r.files) {
    const lost = missingBy.get(f.path) ?? 0;
    lines.push(
      `${f.path} ${f.length} bytes, replicated: ` +
        `replication=${f.replication}, ${f.blocks.length} ` +
        `block(s): ${lost > 0 ? `MISSING ${lost} blocks` : 'OK'}`,
    );
    if (verbose) {
      for (const [i, b] of f.blocks.entries())
        lines.push(`  ${i}. ${b.blockId} len=${b.length} repl=${b.replicas.length} [${b.replicas.join(', ')}]`);
    }
  }
  for (const u of r.underReplicated)
    lines.push(
      `${u.path}: Under replicated ${u.blockId}. Target Replicas ` +
        `is ${u.replication} but found ${u.replicas} live replica(s).`,
    );
  for (const m of r.missing) lines.push(`${m.path}: MISSING block ${m.blockId} len=${m.length} (no live replica)`);
  const avg = r.totalBlocks > 0 ? (r.totalReplicas / r.totalBlocks).toFixed(3) : '0';
  lines.push(
    '',
    'Status: ' + (r.healthy ? 'HEALTHY' : 'CORRUPT'),
    ` Total size:\t${r.totalBytes} B`,
    ` Total dirs:\t${r.directories}`,
    ` Total files:\t${r.files.length}`,
    ` Total blocks (validated):\t${r.totalBlocks}`,
    ` Under-replicated blocks:\t${r.underReplicated.length}`,
    ` Missing blocks:\t${r.missing.length}`,
    ` Average block replication:\t${avg}`,
    ` Number of data-nodes:\t${r.liveDatanodes}`,
    '',
    `The filesystem under path '${r.path}' is ${r.healthy ? 'HEALTHY' : 'CORRUPT'}`,
  );
  return lines.join('\n');
}
