/** The smallest raw submission `validateSubmission` accepts: tests spread their field under test over it. */
export const minimalSubmission = {
  name: 'wc',
  moduleName: 'wc.js',
  moduleSource: 'export default {}',
  inputPaths: ['/in'],
  outputPath: '/out',
  reducers: 3,
  params: {},
  shared: {},
  input: { kind: 'text' },
  output: { kind: 'text', separator: '\t' },
} as const;
