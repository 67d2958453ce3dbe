// Starts the real product for the browser tests: a redis-server on a free port, `formsservice dev`
// built from this tree (auth, forms, health, the demo page) with short token lifetimes, and a second
// tiny HTTP server on another origin serving a copy of the demo page that the forms service must refuse.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { chromiumPath, repoRoot, sdkRoot } from './paths'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The dev server, e.g. http://127.0.0.1:41234 (its issuer and the demo page's origin). */
    devUrl: string
    /** Another origin serving a copy of the demo page; not an allowed origin of the forms service. */
    otherUrl: string
    /** The dev server under http://localhost:<port>: the demo app on another origin than the issuer. */
    localhostUrl: string
    /** The access token lifetime configured for the run, in seconds. */
    accessTokenSeconds: number
  }
}

const accessTokenSeconds = 5

function need(path: string | undefined, what: string): string {
  if (!path || !existsSync(path)) throw new Error(`${what} not found: run \`make test\`, which installs it`)
  return path
}

function which(cmd: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || undefined
  } catch {
    return undefined
  }
}

async function freePort(): Promise<number> {
  const srv = createTcpServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const { port } = srv.address() as AddressInfo
  await new Promise((resolve) => srv.close(resolve))
  return port
}

function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.setTimeout(500)
    s.on('connect', () => s.write('PING\r\n'))
    s.on('data', (d) => {
      resolve(d.toString().startsWith('+PONG'))
      s.destroy()
    })
    s.on('error', () => resolve(false))
    s.on('timeout', () => {
      resolve(false)
      s.destroy()
    })
  })
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await f()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function stop(p: ChildProcess | undefined) {
  if (p && p.exitCode === null && p.signalCode === null) p.kill('SIGTERM')
}

export default async function setup(project: TestProject) {
  need(chromiumPath, 'Chromium (/usr/bin/chromium, Debian package chromium; hack/install-chromium.sh)')
  const redisServer = need(
    [join(repoRoot, 'bin/redis-server'), which('redis-server')].find((p) => p && existsSync(p)),
    'redis-server (hack/install-redis.sh)',
  )
  const work = mkdtempSync(join(tmpdir(), 'sdk-browser-'))
  const procs: ChildProcess[] = []
  let other: Server | undefined
  const teardown = async () => {
    procs.forEach(stop)
    other?.close()
    await new Promise((r) => setTimeout(r, 200))
    rmSync(work, { recursive: true, force: true })
  }
  try {
    // formsservice from this tree (FORMSSERVICE_BIN: an already built one)
    let bin = process.env.FORMSSERVICE_BIN
    if (!bin) {
      bin = join(work, 'formsservice')
      execFileSync('go', ['build', '-o', bin, './cmd/formsservice'], { cwd: repoRoot, stdio: 'inherit' })
    }

    // a real redis-server on a free port (retried: another process may take the port first)
    let redisPort = 0
    for (let attempt = 0; attempt < 5 && !redisPort; attempt++) {
      const port = await freePort()
      // appendonly yes, as the forms' default durability (process) needs of its store: on a stock
      // redis-server (appendonly no) every submission is refused with 502 durability_unmet.
      const redis = spawn(
        redisServer,
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', work, '--save', '', '--appendonly', 'yes', '--appendfsync', 'no'],
        { stdio: 'ignore' },
      )
      procs.push(redis)
      const up = await until('redis-server', 5000, async () => (redis.exitCode !== null ? 'exited' : (await redisPing(port)) && 'up')).catch(
        () => 'timeout',
      )
      if (up === 'up') redisPort = port
      else stop(redis)
    }
    if (!redisPort) throw new Error('could not start redis-server')

    // The port is chosen first so that the configuration can also register the demo client and origin
    // under http://localhost:<port>: an app on another origin than the provider (127.0.0.1:<port>). The
    // issuer is set to 127.0.0.1 for that: on its own the dev server's would be localhost, and a browser
    // opening 127.0.0.1 would be sent there (D74).
    const logPath = join(repoRoot, 'artifacts', 'browser-tests-formsservice.log')
    mkdirSync(join(repoRoot, 'artifacts'), { recursive: true })
    const log = createWriteStream(logPath)
    let devUrl = ''
    for (let attempt = 1; !devUrl; attempt++) {
      const port = await freePort()
      const config = join(work, 'config.yaml')
      writeFileSync(
        config,
        [
          '# browser tests: short access tokens so that refreshes happen within a test, and the demo app',
          '# also on http://localhost:<port>, another origin than the issuer http://127.0.0.1:<port>',
          'allowedOrigins:',
          `  - http://localhost:${port}`,
          'auth:',
          `  accessTokenLifetime: ${accessTokenSeconds}s`,
          '  clients:',
          '    - clientID: demo',
          `      redirectURIs: [http://127.0.0.1:${port}/demo/callback, http://localhost:${port}/demo/callback]`,
          `      postLogoutRedirectURIs: [http://127.0.0.1:${port}/demo/, http://localhost:${port}/demo/]`,
          '',
        ].join('\n'),
      )
      const issuer = `http://127.0.0.1:${port}`
      const dev = spawn(bin, ['dev', '-addr', `127.0.0.1:${port}`, '-config', config], {
        env: {
          ...process.env,
          REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
          FORMSSERVICE_LOG_LEVEL: 'info',
          FORMSSERVICE_PUBLIC_URL: issuer,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      procs.push(dev)
      let output = ''
      const onData = (d: Buffer) => {
        log.write(d)
        output += d.toString()
        if (/"msg":"dev server ready"/.test(output)) devUrl = issuer // the ready line names localhost
      }
      dev.stdout!.on('data', onData)
      dev.stderr!.on('data', onData)
      const exited = await until('formsservice dev to be ready', 60_000, () => (dev.exitCode !== null ? 'exited' : devUrl && 'ready'))
      if (exited === 'exited') {
        if (attempt >= 3 || !/address already in use/.test(output)) {
          throw new Error(`formsservice dev exited (${dev.exitCode}):\n${output.slice(-3000)}`)
        }
      }
    }
    await until('the auth service', 30_000, async () => {
      const r = await fetch(devUrl + '/.well-known/openid-configuration').catch(() => undefined)
      return r?.ok
    })

    // the demo page from another origin, naming the dev server as its forms and auth service
    const page = readFileSync(join(sdkRoot, 'demo/index.html'), 'utf8').replace(
      'data-auth-base="" data-forms-base=""',
      `data-auth-base="${devUrl}" data-forms-base="${devUrl}"`,
    )
    const files: Record<string, [string, string]> = {
      '/demo/app.js': [join(sdkRoot, 'demo/app.js'), 'text/javascript'],
      '/demo/app.css': [join(sdkRoot, 'demo/app.css'), 'text/css'],
      '/demo/service-auth-client.min.js': [join(sdkRoot, 'dist/service-auth-client.min.js'), 'text/javascript'],
    }
    other = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      if (path === '/demo/' || path === '/demo/callback') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page)
      } else if (files[path]) {
        res.writeHead(200, { 'content-type': files[path][1] }).end(readFileSync(files[path][0]))
      } else {
        res.writeHead(404).end()
      }
    })
    await new Promise<void>((resolve) => other!.listen(0, '127.0.0.1', resolve))
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`

    project.provide('devUrl', devUrl)
    project.provide('otherUrl', otherUrl)
    project.provide('localhostUrl', devUrl.replace('//127.0.0.1:', '//localhost:'))
    project.provide('accessTokenSeconds', accessTokenSeconds)
    console.log(`browser tests: formsservice dev at ${devUrl} (redis 127.0.0.1:${redisPort}), other origin ${otherUrl}, log ${logPath}`)
  } catch (e) {
    await teardown()
    throw e
  }
  return teardown
}
