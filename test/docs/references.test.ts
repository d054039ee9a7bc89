/**
 * Every reference to a Markdown file resolves inside the repository (issue 33, item 10): the
 * papers' algorithms are in docs/specs/, and a comment that cites one names a page a reader can
 * open. Reads files only; starts no process.
 *
 * A reference is a word ending in `.md`. It resolves when it names an existing file relative to
 * the repository root or to the directory of the file it is in. The only words that need not
 * resolve are files the code writes, not reads (a benchmark's own report, `results.md` and
 * `summary.md` of `minimr sim` and `bench policies`) and one document of another project; each
 * is listed below with the rule that lets it through.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, relative, sep } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository root: this file runs as dist/test/docs/references.test.js. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** This test's source, which the scan leaves out. */
const SELF = new URL('../../../test/docs/references.test.ts', import.meta.url);

/** Where references are looked for: code, tests, benchmarks, example apps, scripts and the docs. */
const SCANNED_DIRS = ['src', 'test', 'benchmarks', 'apps', 'scripts', 'cluster', 'bin', 'docs'];
const SCANNED_FILES = ['README.md'];
const SCANNED_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs', '.cjs', '.sh', '.md']);
/** Build output, dependencies, and data files (inputs of jobs, not text anyone cites from). */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', 'data']);

/** Reports the code writes, so they are named without existing in the repository. */
const WRITTEN_REPORTS = new Set([
  'results.md', // minimr sim --out and bench policies, src/metrics/report.ts
  'summary.md', // bench policies, src/experiments/bench-policies.ts
]);
/** Documents of other projects, named as their projects name them. */
const OTHER_PROJECTS = new Set([
  'SchedulerLoadSimulator.md', // Hadoop's SLS documentation
]);

/** A word ending in .md: an optional path of ./, ../ and directory names, a file name, maybe #a-heading. */
const MD_WORD = /(?<![\w./@-])((?:\.{1,2}\/)*(?:[\w@-][\w.@-]*\/)*[\w@-][\w.@-]*\.md)(?:#([\w-]+))?(?![\w-]|\.\w)/g;

interface Reference {
  /** Repository-relative path of the file the reference is in, with / separators. */
  readonly file: string;
  readonly line: number;
  readonly word: string;
  /** The heading it points at (`page.md#heading`), if any. */
  readonly anchor?: string;
}

function scannedFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(path);
      } else if (entry.isFile() && SCANNED_EXTENSIONS.has(extname(entry.name))) {
        files.push(path);
      }
    }
  };
  for (const dir of SCANNED_DIRS) if (existsSync(join(ROOT, dir))) walk(join(ROOT, dir));
  for (const file of SCANNED_FILES) if (existsSync(join(ROOT, file))) files.push(join(ROOT, file));
  return files;
}

function toRepoPath(path: string): string {
  return relative(ROOT, path).split(sep).join('/');
}

/** The references in `text`, the content of the repository file `file`. */
function referencesInText(file: string, text: string): Reference[] {
  const found: Reference[] = [];
  text.split('\n').forEach((line, i) => {
    for (const match of line.matchAll(MD_WORD)) {
      found.push({ file, line: i + 1, word: match[1]!, ...(match[2] !== undefined ? { anchor: match[2] } : {}) });
    }
  });
  return found;
}

function referencesIn(path: string): Reference[] {
  return referencesInText(toRepoPath(path), readFileSync(path, 'utf8'));
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

/** Whether `path` lies inside the checkout: a file beside it (../shared/...) exists on one machine only. */
function insideRepository(path: string): boolean {
  const rel = relative(ROOT, path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep);
}

/** The file of the repository `ref` names, from the root or from the referring file's directory. */
function target(ref: Reference): string | undefined {
  return [join(ROOT, ref.word), join(ROOT, dirname(ref.file), ref.word)].find(
    (path) => insideRepository(path) && isFile(path),
  );
}

function resolves(ref: Reference): boolean {
  return target(ref) !== undefined;
}

/** The anchors of a Markdown file's headings, as GitHub makes them ("## GC pacer" is #gc-pacer). */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const line of markdown.split('\n')) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    anchors.add(
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return anchors;
}

/** Why `ref` need not name a file in the repository, or undefined when it must. */
function exemption(ref: Reference): string | undefined {
  if (ref.word.includes('/')) return undefined;
  if (WRITTEN_REPORTS.has(ref.word)) return 'a report the code writes';
  if (OTHER_PROJECTS.has(ref.word)) return "another project's document";
  // benchmarks/<name>.ts writes its report as <name>.md (or <name>-<variant>.md) into bench-results/.
  const benchmark = /^benchmarks\/([\w-]+)\.ts$/.exec(ref.file)?.[1];
  if (benchmark !== undefined && ref.word.startsWith(benchmark)) return "the benchmark's own report";
  return undefined;
}

/** The Markdown files of docs/ by file name, to say where a bare name that does not resolve should point. */
function docsByName(): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const path of scannedFiles()) {
    const repoPath = toRepoPath(path);
    if (!repoPath.startsWith('docs/') || extname(path) !== '.md') continue;
    byName.set(basename(path), [...(byName.get(basename(path)) ?? []), repoPath]);
  }
  return byName;
}

describe('references to Markdown files', () => {
  const files = scannedFiles();
  // This file is left out: its own test below holds bad references on purpose.
  const references = files.filter((path) => path !== fileURLToPath(SELF)).flatMap(referencesIn);

  test('the scan sees the code and the specs it cites', () => {
    // Guards the scan itself: a wrong root or pattern would find nothing and pass.
    assert.ok(files.some((f) => toRepoPath(f) === 'src/scheduler/yarn-me.ts'));
    assert.ok(references.some((r) => r.file === 'src/scheduler/yarn-me.ts' && r.word === 'docs/specs/yarn-me.md'));
  });

  test('the rules catch the references this test exists for, and let outputs through', () => {
    // How the code cited specs before docs/specs existed, and a report a benchmark writes.
    const text = [
      ' * YARN-ME (../shared/specs/yarn-me.md): elastic grants',
      ' * The timeline generator (yarn-me.md): when each job ends',
      ' * See docs/specs/yarn-me.md and [FAWKES](../../docs/specs/fawkes.md).',
      "  writeFileSync(join(OUT, 'fair.md'), md);",
    ].join('\n');
    const inScheduler = referencesInText('src/scheduler/timeline.ts', text);
    assert.deepEqual(
      inScheduler.map((r) => r.word),
      ['../shared/specs/yarn-me.md', 'yarn-me.md', 'docs/specs/yarn-me.md', '../../docs/specs/fawkes.md', 'fair.md'],
    );
    assert.deepEqual(
      inScheduler.map((r) => resolves(r) || exemption(r) !== undefined),
      [false, false, true, true, false],
    );
    // Written from the root, as the code did, it left the checkout (to /work/shared on the machine it was written on).
    assert.equal(insideRepository(join(ROOT, inScheduler[0]!.word)), false);
    assert.equal(insideRepository(join(ROOT, inScheduler[2]!.word)), true);
    // The same report name is the benchmark's own output in benchmarks/fair.ts, and only there.
    const inBenchmark = referencesInText('benchmarks/fair.ts', text);
    assert.equal(exemption(inBenchmark[4]!), "the benchmark's own report");
    assert.equal(exemption(inBenchmark[1]!), undefined);
    // A heading anchor is taken apart from the path, and headings become anchors as GitHub makes them.
    assert.deepEqual(referencesInText('src/shuffle/gc-pacer.ts', ' * figures: docs/performance-notes.md#gc-pacer'), [
      { file: 'src/shuffle/gc-pacer.ts', line: 1, word: 'docs/performance-notes.md', anchor: 'gc-pacer' },
    ]);
    assert.deepEqual(
      [...headingAnchors('# Title\n## GC pacer\ntext\n### `src/x.ts`: the (1) sort\n')],
      ['title', 'gc-pacer', 'srcxts-the-1-sort'],
    );
  });

  test('every reference names a file in the repository', () => {
    const docs = docsByName();
    const unresolved = references
      .filter((ref) => !resolves(ref) && exemption(ref) === undefined)
      .map((ref) => {
        const candidates = docs.get(basename(ref.word));
        return `${ref.file}:${ref.line}: ${ref.word}${candidates ? ` (did you mean ${candidates.join(' or ')}?)` : ''}`;
      });
    assert.deepEqual(
      unresolved,
      [],
      `references to Markdown files that are not in the repository:\n${unresolved.join('\n')}`,
    );
  });

  test('every #heading a reference points at is a heading of its page', () => {
    const missing = references
      .filter((ref) => ref.anchor !== undefined)
      .filter((ref) => {
        const path = target(ref);
        return path !== undefined && !headingAnchors(readFileSync(path, 'utf8')).has(ref.anchor!);
      })
      .map((ref) => `${ref.file}:${ref.line}: ${ref.word}#${ref.anchor}`);
    assert.deepEqual(missing, [], `references to headings that do not exist:\n${missing.join('\n')}`);
  });

  test('every page of docs/specs is cited from src/', () => {
    const specs = readdirSync(join(ROOT, 'docs/specs')).filter((name) => name.endsWith('.md') && name !== 'README.md');
    assert.ok(specs.length > 0);
    const cited = new Set(references.filter((r) => r.file.startsWith('src/')).map((r) => r.word));
    const uncited = specs.filter((name) => !cited.has(`docs/specs/${name}`));
    assert.deepEqual(uncited, [], 'a spec no code cites: cite it where its algorithm is implemented');
  });

  test('the files and folders docs/specs names exist', () => {
    // A page names where each part lives (`src/scheduler/yarn-me.ts`); when code moves, the page must follow.
    const named = /`((?:src|test|benchmarks|apps|scripts|docs)\/[\w./-]*[\w/])`/g;
    const missing: string[] = [];
    for (const path of files) {
      const file = toRepoPath(path);
      if (!file.startsWith('docs/specs/')) continue;
      readFileSync(path, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          for (const match of text.matchAll(named)) {
            if (!existsSync(join(ROOT, match[1]!))) missing.push(`${file}:${i + 1}: ${match[1]}`);
          }
        });
    }
    assert.deepEqual(missing, [], `paths named in docs/specs that do not exist:\n${missing.join('\n')}`);
  });
});
