import { afterEach, vi } from 'vitest'
import { ServiceAuthClient, type ServiceAuthClientOptions } from '../../src/index'
import { installBrowser, type FakeBrowser } from './fake-browser'
import { FakeProvider } from './fake-provider'

export interface World {
  provider: FakeProvider
  browser: FakeBrowser
  /** A client for the current tab, with the provider's fixtures as defaults. */
  client(opts?: Partial<ServiceAuthClientOptions>): ServiceAuthClient
  /** signIn() and the provider's redirect back: the URL the browser lands on. */
  startSignIn(c: ServiceAuthClient, opts?: Parameters<ServiceAuthClient['signIn']>[0]): Promise<string>
  /** A whole sign-in: signIn, the hosted page, handleRedirectCallback. */
  signIn(c: ServiceAuthClient): Promise<void>
}

let cleanups: (() => void)[] = []
afterEach(() => {
  vi.useRealTimers()
  vi.unstubAllGlobals() // first: the fake browser's restore puts back what was there before it
  for (const c of cleanups.splice(0)) c()
})

export async function world(opts: { locks?: boolean; href?: string } = {}): Promise<World> {
  const provider = await FakeProvider.create()
  const browser = installBrowser(opts.href ?? 'http://127.0.0.1:8080/demo/', { locks: opts.locks })
  cleanups.push(() => browser.restore())
  vi.stubGlobal('fetch', provider.fetch)
  const w: World = {
    provider,
    browser,
    client: (o = {}) =>
      new ServiceAuthClient({
        baseUrl: provider.issuer,
        clientId: provider.clientId,
        redirectUri: provider.redirectUri,
        postLogoutRedirectUri: 'http://127.0.0.1:8080/demo/',
        ...o,
      }),
    async startSignIn(c, o) {
      await c.signIn(o)
      const authorizeUrl = browser.location.assigned.at(-1)!
      return provider.authorize(authorizeUrl)
    },
    async signIn(c) {
      browser.location.href = await w.startSignIn(c)
      await c.handleRedirectCallback()
    },
  }
  return w
}

/** The rejection of p, which must be an AuthError with this code. */
export async function rejection(p: Promise<unknown>): Promise<{ code: string; description?: string; message: string }> {
  try {
    await p
  } catch (e) {
    return e as { code: string; message: string }
  }
  throw new Error('expected a rejection')
}
