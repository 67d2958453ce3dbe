// Real headless Chromium (Debian's package) driven by playwright-core, one fresh profile per test.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page, type Request, type Route } from 'playwright-core'
import { expect } from 'vitest'
import { artifacts, chromiumPath } from './paths'

export const demoUser = { email: 'demo@example.com', password: 'demo-password' }

export interface Browser {
  context: BrowserContext
  page: Page
  /** Uncaught page errors and console errors, of every page of the context. */
  errors: string[]
  /** Requests of every page of the context. */
  requests: Request[]
  /** Every console message of every page of the context ("type: text"). */
  console: string[]
  close(): Promise<void>
}

export async function launch(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'sdk-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox', // root in a container
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  })
  context.setDefaultTimeout(10_000)
  const errors: string[] = []
  const requests: Request[] = []
  const consoleLines: string[] = []
  const watch = (p: Page) => {
    p.on('pageerror', (e) => errors.push(`pageerror on ${p.url()}: ${e.message}`))
    p.on('console', (m) => {
      consoleLines.push(`${m.type()}: ${m.text()}`)
      // the hosted page has no favicon; that 404 is Chromium's request, not the page's
      if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) errors.push(`console on ${p.url()}: ${m.text()} (${m.location().url})`)
    })
    p.on('request', (r) => requests.push(r))
  }
  context.pages().forEach(watch)
  context.on('page', watch)
  const page = context.pages()[0] ?? (await context.newPage())
  return {
    context,
    page,
    errors,
    requests,
    console: consoleLines,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** The demo page's sign-in state: loading, signed-in or signed-out. */
export const authState = (page: Page) => page.locator('#auth-status').getAttribute('data-state')

export async function expectState(page: Page, state: 'signed-in' | 'signed-out') {
  await expect.poll(() => authState(page), { timeout: 10_000 }).toBe(state)
}

/** Fills the hosted sign-in page and submits it. */
export async function submitHostedPage(page: Page, email = demoUser.email, password = demoUser.password) {
  await page.waitForURL((u) => u.pathname === '/oauth2/authorize', { timeout: 10_000 })
  await page.fill('#email', email)
  await page.fill('#password', password)
  await page.click('form button[type="submit"]')
}

/** Opens the demo page and signs in through the hosted page; resolves once the demo says signed in. */
export async function signIn(page: Page, devUrl: string) {
  await page.goto(devUrl + '/demo/')
  await expectState(page, 'signed-out')
  await page.click('#sign-in')
  await submitHostedPage(page)
  await expectState(page, 'signed-in')
}

/** Waits until the page's access token has expired (by the SDK's clock). */
export async function waitForExpiry(page: Page) {
  const expiresAt = await page.evaluate(async () => (await (window as any).auth.getSession()).expiresAt as number)
  const ms = expiresAt - Date.now() + 250
  if (ms > 0) await new Promise((r) => setTimeout(r, ms))
}

export const accessToken = (page: Page) => page.evaluate(() => (window as any).auth.getAccessToken() as Promise<string>)

/** The stored token set of a page (sessionStorage or localStorage, key sac:demo). */
export const storedTokens = (page: Page, where: 'sessionStorage' | 'localStorage' = 'sessionStorage') =>
  page.evaluate((w) => JSON.parse((window as any)[w].getItem('sac:demo') ?? 'null'), where)

export async function screenshot(page: Page, name: string) {
  mkdirSync(artifacts, { recursive: true })
  await page.screenshot({ path: join(artifacts, name), fullPage: true })
}

/** POSTs to the token endpoint from Node, as an attacker or a buggy client would. */
export async function tokenRequest(devUrl: string, params: Record<string, string>) {
  const res = await fetch(devUrl + '/oauth2/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: 'demo', ...params }),
  })
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, string> }
}

export const tokenPosts = (b: Browser) =>
  b.requests.filter((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/oauth2/token')

/** Sends an intercepted request (with the browser's headers and cookies), without following redirects. */
export function fetchRoute(route: Route) {
  return route.fetch({ maxRedirects: 0 })
}
