// Builds dist/: the ES module, the CommonJS module, the minified script-tag (IIFE) bundle defining the
// global ServiceAuthClient, and the type declarations (.d.ts for import, .d.cts for require); checks the
// size budget and prints the gzipped size.
//
//   node scripts/build.mjs          build into dist/
//   node scripts/build.mjs --check  build elsewhere and fail when the committed dist/ differs
//
// dist/ is committed so that `go build` and `make run` (which embed the bundle for /demo/) need no npm.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, mkdirSync, existsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const check = process.argv.includes('--check')
const out = check ? mkdtempSync(join(tmpdir(), 'sdk-dist-')) : join(root, 'dist')
const budget = 5 * 1024 // bytes, minified + gzipped IIFE

if (!check) rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

const common = { bundle: true, target: 'es2022', platform: 'browser', logLevel: 'warning', legalComments: 'none' }
await build({
  ...common,
  entryPoints: [join(root, 'src/index.ts')],
  format: 'esm',
  outfile: join(out, 'service-auth-client.js'),
  banner: { js: '// ServiceAuthClient — https://github.com/formsservice/formsservice/tree/main/sdk (generated: npm run build)' },
})
// For require(): Jest's default setup, CommonJS TypeScript (module node16/nodenext in a CommonJS package),
// older tools. Node 20.19 and 22.12+ can require() the ES module too, but TypeScript under node16 cannot.
await build({
  ...common,
  entryPoints: [join(root, 'src/index.ts')],
  format: 'cjs',
  outfile: join(out, 'service-auth-client.cjs'),
  banner: { js: '// ServiceAuthClient — https://github.com/formsservice/formsservice/tree/main/sdk (generated: npm run build)' },
})
await build({
  ...common,
  entryPoints: [join(root, 'src/iife.ts')],
  format: 'iife',
  minify: true,
  outfile: join(out, 'service-auth-client.min.js'),
})
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json'), '--outDir', out], {
  stdio: 'inherit',
})
rmSync(join(out, 'iife.d.ts'))
// Only the declarations the public types reach (from index.d.ts): the internal modules' stay out of the package.
const reached = new Set()
const visit = (name) => {
  if (reached.has(name)) return
  reached.add(name)
  for (const [, dep] of readFileSync(join(out, name), 'utf8').matchAll(/['"]\.\/([\w-]+)\.js['"]/g)) visit(dep + '.d.ts')
}
visit('index.d.ts')
for (const name of readdirSync(out)) if (name.endsWith('.d.ts') && !reached.has(name)) rmSync(join(out, name))
// The same declarations for require(): .d.cts files, importing each other as .cjs, so that TypeScript
// reads them as CommonJS (a .d.ts in this "type": "module" package is an ES module to it).
for (const name of readdirSync(out).filter((n) => n.endsWith('.d.ts'))) {
  const text = readFileSync(join(out, name), 'utf8').replace(/(['"]\.\/[\w-]+)\.js(['"])/g, '$1.cjs$2')
  writeFileSync(join(out, name.replace(/\.d\.ts$/, '.d.cts')), text)
}

const min = readFileSync(join(out, 'service-auth-client.min.js'))
const gz = gzipSync(min, { level: 9 }).length
console.log(`service-auth-client.min.js: ${min.length} bytes minified, ${gz} bytes gzipped (budget ${budget})`)
let failed = false
if (gz >= budget) {
  console.error(`size budget exceeded: ${gz} bytes gzipped >= ${budget}`)
  failed = true
}

if (check) {
  const committed = join(root, 'dist')
  const names = new Set([...readdirSync(out), ...(existsSync(committed) ? readdirSync(committed) : [])])
  const stale = [...names].filter((n) => {
    const a = join(out, n)
    const b = join(committed, n)
    return !existsSync(a) || !existsSync(b) || !readFileSync(a).equals(readFileSync(b))
  })
  rmSync(out, { recursive: true, force: true })
  if (stale.length) {
    console.error(`sdk/dist is out of date (${stale.join(', ')}): run \`npm run build\` in sdk/ and commit dist/`)
    failed = true
  } else {
    console.log('sdk/dist is up to date')
  }
}
process.exit(failed ? 1 : 0)
