// Starts what a developer runs: `formsservice dev` (make run: the embedded store, the dev fixtures) built
// from this repository, the app built with Vite and served by `vite preview`, and the Vite dev server (React
// in development, StrictMode effects running twice). Every server binds port 0. The dev server starts
// first, so that the app is built against its address; the app's origins are then added to the dev
// server's CONFIG file, which it reloads live, and the setup waits until it answers for them.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, createServer, preview } from 'vite'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    /** formsservice dev: the issuer and the forms service. */
    devUrl: string
    /** The production build under `vite preview`. */
    previewUrl: string
    /** The Vite dev server: React in development mode, StrictMode on. */
    viteDevUrl: string
  }
}

export const appRoot = join(dirname(fileURLToPath(import.meta.url)), '..')
const repoRoot = join(appRoot, '../../..')
export const clientId = 'react-vite-example'

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined | false> | T | undefined | false): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await f()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The configuration for the app's origins, written whole and renamed into place (the server watches the folder). */
function writeConfig(path: string, origins: string[]) {
  const lines = ['# the React example, served by the tests at these origins', `allowedOrigins: [${origins.join(', ')}]`]
  if (origins.length) {
    lines.push('auth:', '  clients:', `    - clientID: ${clientId}`)
    lines.push(`      redirectURIs: [${origins.map((o) => o + '/callback').join(', ')}]`)
    lines.push(`      postLogoutRedirectURIs: [${origins.map((o) => o + '/').join(', ')}]`)
  }
  writeFileSync(path + '.tmp', lines.join('\n') + '\n')
  renameSync(path + '.tmp', path)
}

/** Whether the dev server knows the app at origin: its client and redirect URI, and the origin for the forms. */
async function knows(devUrl: string, origin: string): Promise<boolean> {
  const authorize = new URL(devUrl + '/oauth2/authorize')
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: origin + '/callback',
    scope: 'openid',
    state: 'setup-check-state',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }))
    authorize.searchParams.set(k, v)
  const signInPage = await fetch(authorize, { redirect: 'manual' }).catch(() => undefined)
  const preflight = await fetch(devUrl + '/waitlist', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  }).catch(() => undefined)
  return signInPage?.status === 200 && preflight?.status === 204
}

export default async function setup(project: TestProject) {
  const work = mkdtempSync(join(tmpdir(), 'react-vite-example-'))
  const procs: ChildProcess[] = []
  const closers: (() => Promise<void>)[] = []
  const teardown = async () => {
    for (const close of closers) await close().catch(() => {})
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM')
    rmSync(work, { recursive: true, force: true })
  }
  try {
    let bin = process.env.FORMSSERVICE_BIN
    if (!bin) {
      bin = join(work, 'formsservice')
      execFileSync('go', ['build', '-o', bin, './cmd/formsservice'], { cwd: repoRoot, stdio: 'inherit' })
    }
    if (!existsSync(bin)) throw new Error(`no formsservice binary at ${bin}`)

    const config = join(work, 'formsservice.yaml')
    writeConfig(config, [])
    const logPath = join(repoRoot, 'artifacts', 'react-vite-example-formsservice.log')
    mkdirSync(dirname(logPath), { recursive: true })
    const log = createWriteStream(logPath)
    // As `make run` does it: no REDIS_URL, so the dev server runs its embedded store.
    const env: NodeJS.ProcessEnv = { ...process.env, FORMSSERVICE_LOG_LEVEL: 'info' }
    delete env.REDIS_URL
    const dev = spawn(bin, ['dev', '-addr', '127.0.0.1:0', '-config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    procs.push(dev)
    let output = ''
    let devUrl = ''
    const onData = (d: Buffer) => {
      log.write(d)
      output += d.toString()
      devUrl ||= /"msg":"dev server ready"[^\n]*"url":"([^"]+)"/.exec(output)?.[1] ?? ''
    }
    dev.stdout!.on('data', onData)
    dev.stderr!.on('data', onData)
    const ready = await until('formsservice dev to be ready', 60_000, () => (dev.exitCode !== null ? 'exited' : devUrl && 'ready'))
    if (ready === 'exited') throw new Error(`formsservice dev exited (${dev.exitCode}):\n${output.slice(-3000)}`)

    // Vite reads VITE_* variables from the environment, as it would from a .env file.
    process.env.VITE_FORMSSERVICE_URL = devUrl
    process.env.VITE_CLIENT_ID = clientId
    // A production build, as `npm run build` makes it (vitest sets NODE_ENV=test, which would give React's
    // development build).
    const nodeEnv = process.env.NODE_ENV
    process.env.NODE_ENV = 'production'
    try {
      await build({ root: appRoot, logLevel: 'warn', mode: 'production', build: { outDir: join(work, 'dist'), emptyOutDir: true } })
    } finally {
      process.env.NODE_ENV = nodeEnv
    }
    const previewServer = await preview({
      root: appRoot,
      logLevel: 'warn',
      build: { outDir: join(work, 'dist') },
      preview: { host: '127.0.0.1', port: 0, strictPort: false },
    })
    closers.push(() => previewServer.close())
    const viteDev = await createServer({ root: appRoot, logLevel: 'warn', server: { host: '127.0.0.1', port: 0, strictPort: false } })
    closers.push(() => viteDev.close())
    await viteDev.listen()
    const origin = (u: string) => new URL(u).origin
    const previewUrl = origin(previewServer.resolvedUrls!.local[0])
    const viteDevUrl = origin(viteDev.resolvedUrls!.local[0])

    writeConfig(config, [previewUrl, viteDevUrl])
    for (const o of [previewUrl, viteDevUrl]) await until(`formsservice dev to reload ${o} from its CONFIG`, 30_000, () => knows(devUrl, o))

    project.provide('devUrl', devUrl)
    project.provide('previewUrl', previewUrl)
    project.provide('viteDevUrl', viteDevUrl)
    console.log(`react-vite example: formsservice dev ${devUrl} (log ${logPath}), vite preview ${previewUrl}, vite dev ${viteDevUrl}`)
  } catch (e) {
    await teardown()
    throw e
  }
  return teardown
}
