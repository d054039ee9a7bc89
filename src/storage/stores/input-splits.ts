/**
 * A job's input in a store other than the block store, as splits: the files an input URI names (the
 * file itself, or a directory's files; names starting with _ or . are not input, as in Hadoop's
 * FileInputFormat), cut into ranges of `splitBytes`. Each split carries the version listed now, so a
 * file that changes before a task reads it fails the job (ECHANGED). Record readers apply Hadoop's
 * LineRecordReader rule at the range edges, as on the block store.
 */
import { MinimrError } from '../../errors.js';
import { isInputName } from '../paths.js';
import type { Store, StoreStatus } from './types.js';

export interface ExternalSplit {
  /** The file's URI. */
  readonly path: string;
  readonly start: number;
  readonly length: number;
  readonly fileLength: number;
  readonly version: string;
}

/** The files `uri` names; ENOINPUT when there are none. */
export async function externalInputFiles(store: Store, uri: string): Promise<StoreStatus[]> {
  let status: StoreStatus;
  try {
    status = await store.stat(uri);
  } catch (err) {
    if (err instanceof MinimrError && err.code === 'ENOENT')
      throw new MinimrError('ENOINPUT', `input path ${uri} does not exist`, { path: uri });
    throw err;
  }
  if (status.type === 'file') return [status];
  const files = (await store.list(uri)).filter((c) => c.type === 'file' && isInputName(c.uri));
  if (files.length === 0) throw new MinimrError('ENOINPUT', `input directory ${uri} has no files`, { path: uri });
  return files;
}

/** The splits of one file: ranges of `splitBytes` (an empty file has none). */
export function externalSplits(file: StoreStatus, splitBytes: number): ExternalSplit[] {
  const splits: ExternalSplit[] = [];
  for (let start = 0; start < file.length; start += splitBytes) {
    splits.push({
      path: file.uri,
      start,
      length: Math.min(splitBytes, file.length - start),
      fileLength: file.length,
      version: file.version,
    });
  }
  return splits;
}
