// Real headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, a fresh profile per test,
// with the flags this machine needs (root in a container, no network but loopback).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core'

const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium'
export const artifacts = join(dirname(fileURLToPath(import.meta.url)), '../../../../artifacts')
export const demoUser = { email: 'demo@example.com', password: 'demo-password' }

export interface Browser {
  context: BrowserContext
  page: Page
  /** Uncaught errors and console errors of every page. */
  errors: string[]
  requests: Request[]
  close(): Promise<void>
}

export async function launch(opts: { width?: number; dark?: boolean } = {}): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'react-vite-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: opts.width ?? 1280, height: 900 },
    colorScheme: opts.dark ? 'dark' : 'light',
  })
  context.setDefaultTimeout(30_000)
  const errors: string[] = []
  const requests: Request[] = []
  const watch = (p: Page) => {
    p.on('pageerror', (e) => errors.push(`pageerror on ${p.url()}: ${e.message}`))
    p.on('console', (m) => {
      // Chromium reports a 400 answer itself (the tests look at those answers directly), and the hosted
      // pages' missing favicon (its request, not the page's)
      if (m.type() === 'error' && !/status of 400/.test(m.text()) && !m.location().url.endsWith('/favicon.ico')) {
        errors.push(`console on ${p.url()}: ${m.text()} (${m.location().url})`)
      }
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
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

export const tokenPosts = (b: Browser) => b.requests.filter((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/oauth2/token')

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** The page's WCAG 2.x A and AA violations found by axe-core, as "rule: targets" lines. */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axeSource })
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(o: object): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> } }).axe
    const r = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } })
    return r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
  })
  return violations
}

const nonTextContrastSource = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../../../internal/testbrowser/nontextcontrast.js'), 'utf8')

/**
 * WCAG 2.2 1.4.11, which axe-core leaves to people: every field border, button edge and focus ring at 3:1
 * against what is around it — the check the hosted pages and the demo page pass (the Go tests evaluate
 * the same file). A key press first puts Chromium in keyboard mode, so focus shows its :focus-visible ring.
 */
export async function nonTextContrastProblems(page: Page): Promise<string[]> {
  await page.keyboard.press('Shift')
  return (await page.evaluate(nonTextContrastSource)) as string[]
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(artifacts, { recursive: true })
  await page.screenshot({ path: join(artifacts, name), fullPage: true })
}
