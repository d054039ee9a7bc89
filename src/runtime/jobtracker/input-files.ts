import { MinimrError } from '../../errors.js';
import { isInputName, type Caller, type FileStatus } from '../../storage/index.js';

/** What it reads of a NameNode: as `caller` when given (a job's input, read as its submitter). */
interface Lister {
  stat(path: string, caller?: Caller): Promise<FileStatus>;
  list(path: string, caller?: Caller): Promise<FileStatus[]>;
}

/**
 * The files an input path names: the file itself, or a directory's files. Like Hadoop's
 * FileInputFormat, names starting with _ or . (e.g. _SUCCESS) are not input. ENOINPUT when there
 * is nothing to read.
 */
export async function inputFilesAt(namenode: Lister, path: string, caller?: Caller): Promise<FileStatus[]> {
  let status: FileStatus;
  try {
    status = await namenode.stat(path, caller);
  } catch (err) {
    if (err instanceof MinimrError && err.code === 'ENOENT') {
      throw new MinimrError(
        'ENOINPUT',
        `input path ${path} does not exist (put data there with \`minimr fs put LOCAL ${path}\`)`,
        { path },
      );
    }
    throw err;
  }
  if (status.type === 'file') return [status];
  const children = (await namenode.list(path, caller)).filter((c) => c.type === 'file' && isInputName(c.path));
  if (children.length === 0) throw new MinimrError('ENOINPUT', `input directory ${path} has no files`, { path });
  return children;
}
