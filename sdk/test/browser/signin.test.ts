// Sign-in with the SDK through the real hosted page, in real Chromium, against the real auth service.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest'
import {
  accessToken,
  authState,
  type Browser,
  demoUser,
  expectState,
  fetchRoute,
  launch,
  screenshot,
  signIn,
  storedTokens,
  submitHostedPage,
  tokenPosts,
  tokenRequest,
  waitForExpiry,
} from './browser'
import { artifacts } from './paths'

const devUrl = inject('devUrl')
let b: Browser

beforeEach(async () => {
  b = await launch()
})
afterEach(async () => {
  await b.close()
})

describe('sign-in through the hosted page', () => {
  it('signs in with the dev user and comes back to the demo page, signed in, with a clean address bar', async () => {
    const { page } = b
    await page.goto(devUrl + '/demo/')
    await expectState(page, 'signed-out')
    await page.click('#sign-in')
    await page.waitForURL((u) => u.pathname === '/oauth2/authorize')
    const authorize = new URL(page.url()).searchParams
    expect(authorize.get('code_challenge_method')).toBe('S256')
    expect(authorize.get('client_id')).toBe('demo')
    await page.locator('#email').waitFor()
    await screenshot(page, 'hosted-page.png')
    await submitHostedPage(page)
    await expectState(page, 'signed-in')
    expect(new URL(page.url()).pathname).toBe('/demo/')
    expect(page.url()).not.toMatch(/code=|state=/)
    await expect.poll(() => page.locator('#auth-status').textContent()).toContain(demoUser.email)
    expect(await page.locator('#user-email').textContent()).toBe(demoUser.email)
    expect(await page.locator('#expires').textContent()).toMatch(/\(in \d+ s\)/)

    // the page calls userinfo with its access token
    await page.click('#call-userinfo')
    await expect.poll(() => page.locator('#userinfo').textContent()).toContain('→ 200')
    expect(JSON.parse((await page.locator('#userinfo').textContent())!.split('\n').slice(1).join('\n'))).toMatchObject({
      email: demoUser.email,
    })
    await screenshot(page, 'demo-page.png')

    // tokens live in this tab's sessionStorage (the default), nowhere else, and in no URL
    const tokens = await storedTokens(page)
    expect(tokens.access).toBeTruthy()
    expect(tokens.refresh).toBeTruthy()
    expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain(tokens.access)
    for (const r of b.requests) {
      for (const t of [tokens.access, tokens.refresh, tokens.idToken]) expect(r.url()).not.toContain(t)
    }
    // nor in a log: the page's console (the SDK writes none) or the provider's log of this run
    const serverLog = readFileSync(join(artifacts, 'browser-tests-formsservice.log'), 'utf8')
    expect(serverLog.length).toBeGreaterThan(0)
    for (const t of [tokens.access, tokens.refresh, tokens.idToken]) {
      expect(b.console.join('\n')).not.toContain(t)
      expect(serverLog).not.toContain(t)
    }
    expect(b.errors).toEqual([])
  })

  it('a second sign-in while the provider session lives skips the form (SSO)', async () => {
    const { page } = b
    await signIn(page, devUrl)
    await page.evaluate(() => (window as any).auth.signOut({ redirect: false }))
    await expectState(page, 'signed-out')
    await page.click('#sign-in')
    await expectState(page, 'signed-in') // no form: the hosted page's session answered at once
    expect(b.requests.filter((r) => r.method() === 'POST' && r.url().includes('/oauth2/authorize'))).toHaveLength(1)
  })

  it('refreshes the access token after it expires, rotating the refresh token', async () => {
    const { page } = b
    await signIn(page, devUrl)
    const first = await storedTokens(page)
    await waitForExpiry(page)
    const token = await accessToken(page)
    const second = await storedTokens(page)
    expect(token).not.toBe(first.access)
    expect(second.access).toBe(token)
    expect(second.refresh).not.toBe(first.refresh) // rotation
    expect(second.expiresAt).toBeGreaterThan(Date.now())
    // the new token works at userinfo
    await page.click('#call-userinfo')
    await expect.poll(() => page.locator('#userinfo').textContent()).toContain('→ 200')
    expect(tokenPosts(b).map((r) => new URLSearchParams(r.postData() ?? '').get('grant_type'))).toEqual([
      'authorization_code',
      'refresh_token',
    ])
    expect(b.errors).toEqual([])
  })

  it('the provider revokes the whole session when a rotated refresh token is reused, and the page learns it is signed out', async () => {
    // What the SDK's cross-tab coordination prevents, done on purpose: reuse of an old refresh token.
    const { page } = b
    await signIn(page, devUrl)
    const first = await storedTokens(page)
    await waitForExpiry(page)
    await accessToken(page) // rotates
    const reused = await tokenRequest(devUrl, { grant_type: 'refresh_token', refresh_token: first.refresh })
    expect(reused.status).toBe(400)
    expect(reused.body.error).toBe('invalid_grant')
    await waitForExpiry(page)
    const err = await page.evaluate(() => (window as any).auth.getAccessToken().then(
      () => null,
      (e: any) => ({ code: e.code, name: e.name }),
    ))
    expect(err).toEqual({ code: 'invalid_grant', name: 'AuthError' })
    await expectState(page, 'signed-out') // the signedOut event updated the page
    expect(await storedTokens(page)).toBeNull()
  })
})

describe('two tabs', () => {
  it('tabs sharing localStorage refresh at once: one refresh, the same token, nobody signed out', async () => {
    const { page, context } = b
    await page.goto(devUrl + '/demo/')
    await page.evaluate(() => localStorage.setItem('demo.storage', 'local'))
    await signIn(page, devUrl)
    expect(await storedTokens(page)).toBeNull() // not in sessionStorage
    expect(await storedTokens(page, 'localStorage')).toMatchObject({ refresh: expect.any(String) })
    const second = await context.newPage()
    await second.goto(devUrl + '/demo/')
    await expectState(second, 'signed-in')

    for (let round = 1; round <= 2; round++) {
      await waitForExpiry(page)
      const before = tokenPosts(b).length
      const [a, c] = await Promise.all([accessToken(page), accessToken(second)])
      expect(a).toBe(c)
      expect(tokenPosts(b).length - before).toBe(1)
    }
    await expectState(page, 'signed-in')
    await expectState(second, 'signed-in')
    await second.click('#call-userinfo')
    await expect.poll(() => second.locator('#userinfo').textContent()).toContain('→ 200')
    expect(b.errors).toEqual([])
  })

  it('a duplicated tab (its own copy of sessionStorage) takes the rotated tokens instead of reusing the old refresh token', async () => {
    const { page, context } = b
    await signIn(page, devUrl)
    // window.open copies sessionStorage into the new tab: both hold the same refresh token
    const [copy] = await Promise.all([context.waitForEvent('page'), page.evaluate(() => void window.open('/demo/'))])
    await expectState(copy, 'signed-in')
    expect((await storedTokens(copy)).refresh).toBe((await storedTokens(page)).refresh)

    for (let round = 1; round <= 2; round++) {
      await waitForExpiry(page)
      const before = tokenPosts(b).length
      const [a, c] = await Promise.all([accessToken(page), accessToken(copy)])
      expect(a).toBe(c)
      expect(tokenPosts(b).length - before).toBe(1)
      expect((await storedTokens(copy)).refresh).toBe((await storedTokens(page)).refresh)
    }
    await copy.click('#call-userinfo')
    await expect.poll(() => copy.locator('#userinfo').textContent()).toContain('→ 200')
    expect(b.errors).toEqual([])
  })
})

describe('sign-out', () => {
  it('revokes the refresh token, ends the provider session and comes back signed out', async () => {
    const { page } = b
    await signIn(page, devUrl)
    const tokens = await storedTokens(page)
    // the page is /demo/ before and after: wait for the new document the provider redirects back to
    const landed = page.waitForResponse((r) => r.request().isNavigationRequest() && new URL(r.url()).pathname === '/demo/')
    await page.click('#sign-out')
    await landed
    await page.waitForLoadState('load')
    await expectState(page, 'signed-out')
    expect(await storedTokens(page)).toBeNull()
    // the id_token went in a POST body, never in a URL
    const logout = b.requests.find((r) => new URL(r.url()).pathname === '/oauth2/logout')!
    expect(logout.method()).toBe('POST')
    expect(logout.url()).not.toContain(tokens.idToken)
    // the refresh token is dead
    const reuse = await tokenRequest(devUrl, { grant_type: 'refresh_token', refresh_token: tokens.refresh })
    expect(reuse.status).toBe(400)
    // the provider session ended: signing in asks for the password again
    await page.click('#sign-in')
    await page.waitForURL((u) => u.pathname === '/oauth2/authorize')
    await expect(page.locator('#password').isVisible()).resolves.toBe(true)
    expect(b.errors).toEqual([])
  })
})

describe('handleRedirectCallback twice for one response (React 18 StrictMode runs effects twice)', () => {
  it('the second call gets the first call’s result, and the code is exchanged once', async () => {
    const { page } = b
    // The SDK on its own: the demo page without its app.js, so that the test makes the two calls.
    const appJs = (u: URL) => u.pathname === '/demo/app.js'
    await page.route(appJs, (route) =>
      route.fulfill({ contentType: 'text/javascript', headers: { 'cache-control': 'no-store' }, body: '' }),
    )
    const client = `new ServiceAuthClient({ baseUrl: document.documentElement.dataset.authBase, clientId: 'demo',
      redirectUri: location.origin + '/demo/callback' })`
    await page.goto(devUrl + '/demo/')
    await page.waitForFunction(() => 'ServiceAuthClient' in window)
    await page.evaluate(`void ${client}.signIn({ returnTo: '/demo/orders' })`) // navigates: not awaited
    await submitHostedPage(page)
    await page.waitForURL((u) => u.pathname === '/demo/callback' && u.searchParams.has('code'))
    await page.waitForFunction(() => 'ServiceAuthClient' in window)
    const outcome = await page.evaluate(`(async () => {
      const auth = ${client}
      const settle = (p) => p.then((r) => ({ email: r.user.email, returnTo: r.returnTo }), (e) => ({ error: e.code }))
      const first = auth.handleRedirectCallback() // the effect
      const cleaned = location.href
      const second = auth.handleRedirectCallback() // the effect again, on the cleaned address
      return { cleaned, same: first === second, first: await settle(first), second: await settle(second) }
    })()`)
    const result = { email: demoUser.email, returnTo: '/demo/orders' }
    expect(outcome).toEqual({ cleaned: devUrl + '/demo/callback', same: true, first: result, second: result })
    expect(tokenPosts(b)).toHaveLength(1)
    expect(b.errors).toEqual([])
  })
})

describe('callbacks that are not the page’s own', () => {
  it('a tampered state is refused with state_mismatch and the code is never exchanged', async () => {
    const { page } = b
    await page.goto(devUrl + '/demo/')
    await expectState(page, 'signed-out')
    // an attacker in the middle changes the state of the provider's redirect back to the app
    let tampered = ''
    await page.route(
      (u) => u.pathname === '/oauth2/authorize',
      async (route) => {
        if (route.request().method() !== 'POST') return route.continue()
        const response = await fetchRoute(route)
        const back = new URL(response.headers().location)
        back.searchParams.set('state', back.searchParams.get('state') + 'X')
        tampered = back.href
        await route.fulfill({ response, headers: { ...response.headers(), location: back.href } })
      },
    )
    await page.click('#sign-in')
    await submitHostedPage(page)
    await expect.poll(() => page.locator('#auth-error').getAttribute('data-code'), { timeout: 10_000 }).toBe('state_mismatch')
    expect(new URL(tampered).searchParams.get('code')).toBeTruthy()
    expect(await authState(page)).toBe('signed-out')
    expect(tokenPosts(b)).toHaveLength(0)
    expect(page.url()).not.toContain('code=')
  })

  it('a replayed callback in a tab that never signed in: state_not_found, with a way to sign in again', async () => {
    const { page, context } = b
    let callback = ''
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/demo/callback') callback ||= r.url()
    })
    await signIn(page, devUrl)
    const other = await context.newPage() // its own sessionStorage: no sign-in started there
    await other.goto(callback)
    await expect.poll(() => other.locator('#auth-error').getAttribute('data-code')).toBe('state_not_found')
    expect(await other.locator('#auth-error button').textContent()).toBe('Sign in again')
    expect(other.url()).toBe(devUrl + '/demo/')
    // recovering: the provider session lives, so signing in again needs no form
    await other.click('#auth-error button')
    await expectState(other, 'signed-in')
  })

  it('the back button after signing in replays an old state: harmless, the page stays signed in', async () => {
    const { page } = b
    await signIn(page, devUrl)
    await page.goBack() // to the hosted page, which (with its session) redirects to the callback again
    await page.waitForURL((u) => u.pathname === '/demo/', { timeout: 10_000 })
    await expectState(page, 'signed-in')
    expect(await page.locator('#auth-error').isHidden()).toBe(true)
    expect(b.errors).toEqual([])
  })
})

describe('denied sign-ins', () => {
  it('prompt=none without a provider session comes back with login_required', async () => {
    const { page } = b
    await page.goto(devUrl + '/demo/')
    await expectState(page, 'signed-out')
    // signIn navigates away: start it without awaiting it here, or the page's context may be gone
    // before evaluate's answer arrives.
    await page.evaluate(() => { void (window as any).auth.signIn({ prompt: 'none' }) })
    await expect.poll(() => page.locator('#auth-error').getAttribute('data-code'), { timeout: 10_000 }).toBe('login_required')
    expect(await page.locator('#auth-error button').textContent()).toBe('Sign in again')
    expect(await authState(page)).toBe('signed-out')
    expect(tokenPosts(b)).toHaveLength(0)
  })

  it('Cancel on the hosted page: handleRedirectCallback rejects with AuthError access_denied, and the demo shows it', async () => {
    const { page } = b
    const onAuthorize = (u: URL) => u.pathname === '/oauth2/authorize'
    const cancel = () => page.getByRole('button', { name: 'Cancel' }).click()

    // 1. The SDK on its own: the demo page without its app.js (Playwright cannot route the redirect to the
    //    callback itself), so that the test calls signIn and handleRedirectCallback.
    const appJs = (u: URL) => u.pathname === '/demo/app.js'
    await page.route(appJs, (route) =>
      route.fulfill({ contentType: 'text/javascript', headers: { 'cache-control': 'no-store' }, body: '' }),
    )
    const client = `new ServiceAuthClient({ baseUrl: document.documentElement.dataset.authBase, clientId: 'demo',
      redirectUri: location.origin + '/demo/callback' })`
    await page.goto(devUrl + '/demo/')
    await page.waitForFunction(() => 'ServiceAuthClient' in window)
    await page.evaluate(`void ${client}.signIn({ returnTo: '/demo/' })`) // navigates: not awaited
    await page.waitForURL(onAuthorize)
    const sentState = new URL(page.url()).searchParams.get('state')
    await cancel()
    await page.waitForURL((u) => u.pathname === '/demo/callback')
    const back = new URL(page.url()).searchParams
    expect(back.get('error')).toBe('access_denied')
    expect(back.get('state')).toBe(sentState) // unchanged
    expect(back.get('code')).toBeNull()
    expect(back.get('error_description')).toMatch(/cancelled/)
    await page.waitForFunction(() => 'ServiceAuthClient' in window)
    const err = await page.evaluate(`${client}.handleRedirectCallback().then(
      () => null,
      (e) => ({ name: e.name, isAuthError: e instanceof ServiceAuthClient.AuthError, code: e.code, error: e.error, description: e.description }),
    )`)
    expect(err).toEqual({
      name: 'AuthError',
      isAuthError: true,
      code: 'access_denied',
      error: 'access_denied',
      description: back.get('error_description'),
    })
    expect(page.url()).not.toMatch(/error=|state=/) // the SDK cleared the response from the address bar
    await page.unroute(appJs)

    // 2. The demo page, as a person sees it: the error, and a way to change their mind.
    await page.goto(devUrl + '/demo/')
    await expectState(page, 'signed-out')
    await page.click('#sign-in')
    await page.waitForURL(onAuthorize)
    await cancel()
    await expect.poll(() => page.locator('#auth-error').getAttribute('data-code'), { timeout: 10_000 }).toBe('access_denied')
    expect(await page.locator('#auth-error').textContent()).toMatch(/^access_denied: .*cancelled/)
    expect(await page.locator('#auth-error button').textContent()).toBe('Sign in again')
    expect(page.url()).toBe(devUrl + '/demo/')
    expect(await authState(page)).toBe('signed-out')
    expect(await page.locator('#session').isHidden()).toBe(true) // no empty session details beside the error
    expect(tokenPosts(b)).toHaveLength(0)
    expect(await storedTokens(page)).toBeNull()
    await screenshot(page, 'demo-access-denied.png')

    // Changing their mind: sign in again through the same page.
    await page.click('#auth-error button')
    await submitHostedPage(page)
    await expectState(page, 'signed-in')
    expect(await page.locator('#auth-error').isHidden()).toBe(true)
    expect(b.errors).toEqual([])
  })

  it('a wrong password keeps the user on the hosted page with one generic error', async () => {
    const { page } = b
    await page.goto(devUrl + '/demo/')
    await page.click('#sign-in')
    await submitHostedPage(page, demoUser.email, 'wrong-password')
    await page.locator('#signin-error').waitFor()
    expect(new URL(page.url()).pathname).toBe('/oauth2/authorize')
    const generic = await page.locator('#signin-error').textContent()
    await submitHostedPage(page, 'nobody@example.com', 'wrong-password')
    await page.locator('#signin-error').waitFor()
    expect(await page.locator('#signin-error').textContent()).toBe(generic) // no account enumeration
    expect(tokenPosts(b)).toHaveLength(0)
  })

  it('a scope the client may not ask for comes back as an error the SDK names', async () => {
    const { page } = b
    await page.goto(devUrl + '/demo/')
    await expectState(page, 'signed-out')
    await page.evaluate(() => {
      const C = (window as any).ServiceAuthClient
      const c = new C({
        baseUrl: document.documentElement.dataset.authBase,
        clientId: 'demo',
        redirectUri: location.origin + '/demo/callback',
        scope: 'openid admin:everything',
      })
      void c.signIn({ returnTo: '/demo/' }) // navigates: not awaited, or evaluate may lose its context
    })
    await expect.poll(() => page.locator('#auth-error').getAttribute('data-code'), { timeout: 10_000 }).toBe('configuration_error')
    expect(await page.locator('#auth-error').textContent()).toMatch(/scope/i)
  })
})

describe('an app on another origin than the provider', () => {
  it('signs in, refreshes, calls userinfo and posts a form across origins, and signs out after the provider asks', async () => {
    // http://localhost:<port>/demo/ is served by the dev server too, but its issuer is http://127.0.0.1:<port>:
    // discovery, JWKS, token, userinfo and revoke are cross-origin (CORS), the hosted page another site.
    const localhostUrl = inject('localhostUrl')
    const { page } = b
    await page.goto(localhostUrl + '/demo/')
    expect(await page.getAttribute('html', 'data-auth-base')).toBe(devUrl)
    await expectState(page, 'signed-out')
    await page.click('#sign-in')
    await submitHostedPage(page)
    await expectState(page, 'signed-in')
    expect(new URL(page.url()).origin).toBe(localhostUrl)

    await waitForExpiry(page)
    const before = (await storedTokens(page)).access
    expect(await accessToken(page)).not.toBe(before)
    await page.click('#call-userinfo')
    await expect.poll(() => page.locator('#userinfo').textContent()).toContain('→ 200')

    await page.fill('#waitlist-email', `cross+${Date.now()}@example.com`)
    await page.check('#waitlist-consent')
    await page.click('#waitlist-form button[type="submit"]')
    await expect.poll(() => page.locator('#waitlist-form .form-status').getAttribute('data-kind')).toBe('ok')

    // sign-out: the id_token stays out of the URL, so the provider asks before ending its session
    const refresh = (await storedTokens(page)).refresh
    await page.click('#sign-out')
    await page.waitForURL((u) => u.origin === devUrl && u.pathname === '/oauth2/logout')
    expect(page.url()).not.toContain('id_token_hint')
    await page.click('form button[type="submit"]')
    await page.waitForURL((u) => u.origin === localhostUrl && u.pathname === '/demo/')
    await expectState(page, 'signed-out')
    expect((await tokenRequest(devUrl, { grant_type: 'refresh_token', refresh_token: refresh })).status).toBe(400)
    await page.click('#sign-in')
    await page.waitForURL((u) => u.pathname === '/oauth2/authorize')
    await expect(page.locator('#password').isVisible()).resolves.toBe(true) // the provider session ended
    expect(b.errors).toEqual([])
  })
})
