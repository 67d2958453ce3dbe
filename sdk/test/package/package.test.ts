// The package as a user installs it: `npm pack`, unpacked into a consumer's node_modules (what `npm
// install` does with it), then a tiny consumer compiled by TypeScript under each module resolution a
// user may have (bundler, node16, nodenext; ES module and CommonJS files) with skipLibCheck off, and run
// by Node through both entry points. If the published types did not resolve, they would silently become
// `any` in a consumer with skipLibCheck: the @ts-expect-error lines below would then be errors themselves.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sdkRoot } from '../browser/paths'

const tsc = join(sdkRoot, 'node_modules/typescript/bin/tsc')
let work = ''
let unpacked = ''
let packed: { files: { path: string }[]; filename: string }

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sdk-package-'))
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: sdkRoot, encoding: 'utf8' })
  packed = JSON.parse(out)[0]
  unpacked = join(work, 'package')
  execFileSync('tar', ['-xzf', join(work, packed.filename), '-C', work])
}, 60_000)
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

/** A consumer's source: the same text works as an ES module (.ts, .mts) and as CommonJS (.cts). */
const consumer = `
import { AuthError, ServiceAuthClient, type AuthErrorCode, type ServiceAuthClientOptions, type User } from '@formsservice/service-auth-client'

const options: ServiceAuthClientOptions = {
  baseUrl: 'https://id.example.com',
  clientId: 'app',
  redirectUri: 'https://app.example.com/callback',
}
const auth = new ServiceAuthClient(options)
const user: Promise<User | null> = auth.getUser()
auth.on('tokenRefreshed', ({ expiresAt }) => expiresAt.toFixed())
const code: AuthErrorCode = 'state_not_found'

// Compiled, never called: each line must be a type error.
export function typeErrors() {
  // @ts-expect-error baseUrl is a string
  new ServiceAuthClient({ ...options, baseUrl: 42 })
  // @ts-expect-error storage is 'memory', 'session' or 'local'
  new ServiceAuthClient({ ...options, storage: 'cookie' })
  // @ts-expect-error no such event
  auth.on('signedUp', () => {})
  // @ts-expect-error not an error code
  const wrong: AuthErrorCode = 'nope'
  return wrong
}

let refused = ''
try {
  new ServiceAuthClient({ ...options, baseUrl: 'ftp://id.example.com' })
} catch (e) {
  if (e instanceof AuthError) refused = e.code
}
void user.then((u) => console.log(JSON.stringify({ user: u, code, refused, static: ServiceAuthClient.AuthError === AuthError })))
`

function project(name: string, compilerOptions: Record<string, unknown>, files: string[]): string {
  const dir = join(work, name)
  const pkg = join(dir, 'node_modules/@formsservice/service-auth-client')
  mkdirSync(pkg, { recursive: true })
  cpSync(unpacked, pkg, { recursive: true })
  for (const f of files) writeFileSync(join(dir, f), consumer)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, private: true, type: 'module' }))
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false, // check the package's declarations
        skipDefaultLibCheck: true, // but not TypeScript's own lib.dom.d.ts (slow, and not ours)
        target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], outDir: 'out', ...compilerOptions },
      files,
    }),
  )
  return dir
}

/** Compiles a consumer; resolves the compiler's output, or throws it. */
function compile(dir: string): string {
  try {
    return execFileSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' })
  } catch (e) {
    throw new Error(`tsc failed in ${dir}:\n${(e as { stdout: string }).stdout}`)
  }
}

describe('npm pack', () => {
  it('ships the entry points, their types, the README and the CHANGELOG, nothing else', () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      'CHANGELOG.md',
      'README.md',
      'dist/client.d.cts',
      'dist/client.d.ts',
      'dist/errors.d.cts',
      'dist/errors.d.ts',
      'dist/events.d.cts',
      'dist/events.d.ts',
      'dist/index.d.cts',
      'dist/index.d.ts',
      'dist/jwt.d.cts',
      'dist/jwt.d.ts',
      'dist/options.d.cts',
      'dist/options.d.ts',
      'dist/service-auth-client.cjs',
      'dist/service-auth-client.js',
      'dist/service-auth-client.min.js',
      'package.json',
    ])
    const pkg = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8'))
    expect(pkg.private).toBeUndefined()
    expect(pkg).toMatchObject({ name: '@formsservice/service-auth-client', license: 'Apache-2.0', type: 'module' })
  })
})

describe('types resolve in a consumer with skipLibCheck off', { timeout: 60_000 }, () => {
  it('moduleResolution bundler', () => {
    compile(project('bundler', { module: 'ESNext', moduleResolution: 'Bundler', noEmit: true }, ['app.ts']))
  })

  it.each(['Node16', 'NodeNext'])('moduleResolution %s, from an ES module and from CommonJS, and both run in Node', (mode) => {
    const dir = project(mode.toLowerCase(), { module: mode, moduleResolution: mode }, ['app.mts', 'app.cts'])
    compile(dir)
    for (const file of ['out/app.mjs', 'out/app.cjs']) {
      const printed = JSON.parse(execFileSync(process.execPath, [join(dir, file)], { encoding: 'utf8' }))
      expect(printed).toEqual({ user: null, code: 'state_not_found', refused: 'configuration_error', static: true })
    }
    // the CommonJS file really went through require() and the .cjs build
    expect(readFileSync(join(dir, 'out/app.cjs'), 'utf8')).toContain('require("@formsservice/service-auth-client")')
  })
})

describe('the README', () => {
  it('shows the React example’s src/auth.tsx as it is (the recipe is the tested code)', () => {
    const readme = readFileSync(join(sdkRoot, 'README.md'), 'utf8')
    const recipe = /```tsx\n\/\/ src\/auth\.tsx[^\n]*\n([\s\S]*?)```/.exec(readme)?.[1]
    const file = readFileSync(join(sdkRoot, 'examples/react-vite/src/auth.tsx'), 'utf8').replace(/^(\/\/[^\n]*\n)+/, '')
    expect(recipe).toBe(file)
  })
})
