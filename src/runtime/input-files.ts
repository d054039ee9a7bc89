import { MinimrError } from '../errors.js';
import type { FileStatus, NamenodeApi } from '../storage/index.js';

/**
 * The files an input path names: the file itself, or a directory's files. Like Hadoop's
 * FileInputFormat, names starting with _ or . (e.g. _SUCCESS) are not input. ENOINPUT when there
 * is nothing to read.
 */
export async function inputFilesAt(namenode: Pick<NamenodeApi, 'stat' | 'list'>, path: string): Promise<FileStatus[]> {
  let status: FileStatus;
  try {
    status = await namenode.stat(path);
  } catch (err) {
    if (err instanceof MinimrError && err.code === 'ENOENT') {
      throw new MinimrError('ENOINPUT', `input path ${path} does not exist (put data there with \`minimr fs put LOCAL ${path}\`)`, { path });
    }
    throw err;
  }
  if (status.type === 'file') return [status];
  const children = (await namenode.list(path)).filter((c) => c.type === 'file' && !/^[_.]/.test(c.path.split('/').pop() ?? ''));
  if (children.length === 0) throw new MinimrError('ENOINPUT', `input directory ${path} has no files`, { path });
  return children;
}
