import { describe, expect, it, vi } from 'vitest'
import { rejection, world } from '../helpers/setup'

describe('signIn', () => {
  it('redirects to the authorize endpoint with PKCE S256, state and nonce, keeping them for the callback', async () => {
    const w = await world()
    const c = w.client()
    await c.signIn({ returnTo: '/demo/#orders', loginHint: 'ada@example.com', prompt: 'login', extraParams: { ui_locales: 'de', state: 'evil' } })
    const url = new URL(w.browser.location.assigned[0])
    expect(url.origin + url.pathname).toBe('http://127.0.0.1:8080/oauth2/authorize')
    const q = Object.fromEntries(url.searchParams)
    expect(q).toMatchObject({
      response_type: 'code',
      client_id: 'demo',
      redirect_uri: 'http://127.0.0.1:8080/demo/callback',
      scope: 'openid profile email offline_access',
      code_challenge_method: 'S256',
      prompt: 'login',
      login_hint: 'ada@example.com',
      ui_locales: 'de',
    })
    expect(q.state).toMatch(/^[\w-]{43}$/)
    expect(q.state).not.toBe('evil') // extraParams cannot replace the SDK's parameters
    expect(q.nonce).toMatch(/^[\w-]{43}$/)
    expect(q.code_challenge).toMatch(/^[\w-]{43}$/)
    // the verifier never leaves the browser; it waits in sessionStorage for the callback
    const stored = w.browser.firstTab.sessionStorage.dump()
    expect(stored).toContain(q.state)
    expect(url.href).not.toContain(JSON.parse(w.browser.firstTab.sessionStorage.getItem('sac:demo:tx')!)[q.state].verifier)
    expect(w.browser.localStorage.length).toBe(0)
  })

  it('completes the sign-in: exchanges the code, validates the id_token, cleans the address bar', async () => {
    const w = await world()
    const c = w.client()
    const signedIn = vi.fn()
    c.on('signedIn', signedIn)
    const back = await w.startSignIn(c, { returnTo: '/demo/orders?x=1' })
    w.browser.location.href = back + '&keep=1'
    const result = await c.handleRedirectCallback()
    expect(result).toEqual({ returnTo: '/demo/orders?x=1', user: expect.objectContaining({ sub: 'user-1', email: 'demo@example.com' }) })
    expect(signedIn).toHaveBeenCalledWith(expect.objectContaining({ sub: 'user-1' }))
    expect(w.browser.location.href).toBe('http://127.0.0.1:8080/demo/callback?keep=1')
    expect(await c.isAuthenticated()).toBe(true)
    expect(await c.getUser()).toMatchObject({ email: 'demo@example.com', name: 'Demo User' })
    const token = await c.getAccessToken()
    expect(w.provider.accessTokens.has(token)).toBe(true)
    const [exchange] = w.provider.callsTo('/oauth2/token')
    expect(Object.fromEntries(new URLSearchParams(exchange.body))).toMatchObject({
      grant_type: 'authorization_code',
      client_id: 'demo',
      redirect_uri: 'http://127.0.0.1:8080/demo/callback',
      code_verifier: expect.stringMatching(/^[\w-]{43}$/),
    })
    expect(await c.fetchUserInfo()).toMatchObject({ sub: 'user-1', email: 'demo@example.com' })
    expect(w.provider.callsTo('/oauth2/userinfo')[0].headers.authorization).toBe('Bearer ' + token)
  })

  it('defaults returnTo to the page that started the sign-in', async () => {
    const w = await world({ href: 'http://127.0.0.1:8080/demo/settings?tab=2#top' })
    const c = w.client()
    w.browser.location.href = await w.startSignIn(c)
    expect((await c.handleRedirectCallback()).returnTo).toBe('/demo/settings?tab=2#top')
  })

  it('fetches the discovery document once', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    await c.signIn()
    await c.fetchUserInfo()
    expect(w.provider.callsTo('/.well-known/openid-configuration')).toHaveLength(1)
  })

  it('keeps several sign-ins of one tab apart (double click, back button)', async () => {
    const w = await world()
    const c = w.client()
    const first = await w.startSignIn(c)
    const second = await w.startSignIn(c)
    w.browser.location.href = first
    await c.handleRedirectCallback()
    w.browser.location.href = second
    await expect(c.handleRedirectCallback()).resolves.toMatchObject({ user: { sub: 'user-1' } })
  })
})

describe('handleRedirectCallback refuses what is not its own', () => {
  it('a callback replayed after a reload (a new page, a new client): state_not_found, and the session stays', async () => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    await c.handleRedirectCallback(back)
    const reloaded = w.client()
    const err = await rejection(reloaded.handleRedirectCallback(back))
    expect(err).toMatchObject({ code: 'state_not_found', message: /sign in again/ })
    expect(await reloaded.isAuthenticated()).toBe(true)
    expect(w.provider.callsTo('/oauth2/token')).toHaveLength(1) // the code was not sent twice
  })

  it('a callback opened in another tab (no sign-in there): state_not_found', async () => {
    const w = await world()
    const back = await w.startSignIn(w.client())
    w.browser.newTab()
    const other = w.client()
    expect(await rejection(other.handleRedirectCallback(back))).toMatchObject({ code: 'state_not_found' })
  })

  it('a tampered state while a sign-in is pending: state_mismatch, and no code exchange', async () => {
    const w = await world()
    const c = w.client()
    const back = new URL(await w.startSignIn(c))
    back.searchParams.set('state', back.searchParams.get('state') + 'x')
    w.browser.location.href = back.href
    expect(await rejection(c.handleRedirectCallback())).toMatchObject({ code: 'state_mismatch' })
    expect(w.provider.callsTo('/oauth2/token')).toHaveLength(0)
    expect(w.browser.location.href).toBe('http://127.0.0.1:8080/demo/callback') // cleaned all the same
    expect(await c.isAuthenticated()).toBe(false)
  })

  it('a response without state: state_mismatch', async () => {
    const w = await world()
    const c = w.client()
    const back = new URL(await w.startSignIn(c))
    back.searchParams.delete('state')
    expect(await rejection(c.handleRedirectCallback(back.href))).toMatchObject({ code: 'state_mismatch' })
  })

  it('a URL that is no sign-in response: missing_code', async () => {
    const w = await world()
    const c = w.client()
    expect(await rejection(c.handleRedirectCallback('http://127.0.0.1:8080/demo/callback'))).toMatchObject({ code: 'missing_code' })
    expect(await rejection(c.handleRedirectCallback('not a url'))).toMatchObject({ code: 'missing_code' })
  })

  it('a response with its state but without code: missing_code', async () => {
    const w = await world()
    const c = w.client()
    const back = new URL(await w.startSignIn(c))
    back.searchParams.delete('code')
    expect(await rejection(c.handleRedirectCallback(back.href))).toMatchObject({ code: 'missing_code' })
  })

  it('a response from another issuer (RFC 9207 iss): state_mismatch', async () => {
    const w = await world()
    const c = w.client()
    const back = new URL(await w.startSignIn(c))
    back.searchParams.set('iss', 'https://evil.example.com')
    expect(await rejection(c.handleRedirectCallback(back.href))).toMatchObject({ code: 'state_mismatch', message: /issuer/ })
  })

  it('an expired sign-in (started over an hour ago): state_not_found', async () => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.now() + 3601_000)
    expect(await rejection(c.handleRedirectCallback(back))).toMatchObject({ code: 'state_not_found' })
  })
})

describe('provider errors on the callback', () => {
  it('access_denied, with the provider’s error_description', async () => {
    const w = await world()
    const c = w.client()
    await c.signIn()
    const back = w.provider.deny(w.browser.location.assigned[0], 'access_denied', 'The resource owner denied the request')
    const err = await rejection(c.handleRedirectCallback(back))
    expect(err).toMatchObject({ code: 'access_denied', description: 'The resource owner denied the request', error: 'access_denied' })
  })

  it.each([
    ['login_required', 'login_required'],
    ['interaction_required', 'login_required'],
    ['consent_required', 'login_required'],
    ['invalid_scope', 'configuration_error'],
    ['unauthorized_client', 'configuration_error'],
    ['server_error', 'server_error'],
    ['temporarily_unavailable', 'server_error'],
  ])('%s becomes %s', async (error, code) => {
    const w = await world()
    const c = w.client()
    await c.signIn({ prompt: 'none' })
    const err = await rejection(c.handleRedirectCallback(w.provider.deny(w.browser.location.assigned[0], error, 'why')))
    expect(err).toMatchObject({ code, error, description: 'why' })
  })

  it('a code the provider refuses: invalid_grant', async () => {
    const w = await world()
    const c = w.client()
    const back = new URL(await w.startSignIn(c))
    back.searchParams.set('code', 'forged')
    expect(await rejection(c.handleRedirectCallback(back.href))).toMatchObject({
      code: 'invalid_grant',
      description: 'The code is invalid or was used',
    })
  })

  it('a token endpoint that cannot be reached: network_error; one that breaks: server_error', async () => {
    const w = await world()
    const c = w.client()
    w.provider.failToken = 'network'
    expect(await rejection(c.handleRedirectCallback(await w.startSignIn(c)))).toMatchObject({ code: 'network_error' })
    w.provider.failToken = 502
    expect(await rejection(c.handleRedirectCallback(await w.startSignIn(c)))).toMatchObject({ code: 'server_error', message: /502/ })
  })

  it.each([
    ['a 404', 404, /answered 404/],
    ['a network failure', 'network' as const, /could not use/],
    ['another issuer', { issuer: 'https://other.example.com' }, /issuer/],
    ['missing endpoints', { token_endpoint: undefined }, /endpoints/],
  ])('a discovery document with %s: discovery_failed, retried next time', async (_n, discovery, message) => {
    const w = await world()
    const c = w.client()
    w.provider.discovery = discovery as never
    expect(await rejection(c.signIn())).toMatchObject({ code: 'discovery_failed', message })
    expect(w.browser.location.assigned).toHaveLength(0)
    w.provider.discovery = {}
    await c.signIn()
    expect(w.browser.location.assigned).toHaveLength(1)
  })

  it('signIn on a plain-http origin: insecure_context', async () => {
    const w = await world()
    vi.stubGlobal('crypto', {})
    expect(await rejection(w.client().signIn())).toMatchObject({ code: 'insecure_context' })
  })
})

describe('id_token validation', () => {
  const cases: [string, (w: Awaited<ReturnType<typeof world>>) => void, RegExp][] = [
    ['another nonce', (w) => (w.provider.idTokenClaims = { nonce: 'other' }), /nonce/],
    ['another issuer', (w) => (w.provider.idTokenClaims = { iss: 'https://evil.example.com' }), /iss/],
    ['another audience', (w) => (w.provider.idTokenClaims = { aud: 'other-app' }), /aud/],
    ['an azp of another client', (w) => (w.provider.idTokenClaims = { aud: ['demo', 'x'], azp: 'x' }), /azp/],
    ['no sub', (w) => (w.provider.idTokenClaims = { sub: undefined }), /sub/],
    ['an exp past the skew', (w) => (w.provider.idTokenClaims = { exp: Math.floor(Date.now() / 1000) - 121 }), /expired/],
    ['an iat in the future past the skew', (w) => (w.provider.idTokenClaims = { iat: Math.floor(Date.now() / 1000) + 300 }), /iat/],
    ['alg none', (w) => (w.provider.idTokenHeader = { alg: 'none' }), /unsupported alg/],
    ['alg HS256', (w) => (w.provider.idTokenHeader = { alg: 'HS256' }), /unsupported alg/],
    ['a key not in the JWKS', (w) => (w.provider.signWithUnknownKey = true), /bad signature/],
    ['an unknown kid', (w) => (w.provider.idTokenHeader = { kid: 'nope' }), /bad signature/],
    ['no id_token at all', (w) => (w.provider.omitIdToken = true), /none/],
  ]
  it.each(cases)('refuses %s: invalid_id_token, nothing stored', async (_n, tamper, message) => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    tamper(w)
    expect(await rejection(c.handleRedirectCallback(back))).toMatchObject({ code: 'invalid_id_token', message })
    expect(await c.isAuthenticated()).toBe(false)
  })

  it('tolerates clock skew within clockSkewSeconds', async () => {
    const w = await world()
    const c = w.client({ clockSkewSeconds: 600 })
    const back = await w.startSignIn(c)
    const now = Math.floor(Date.now() / 1000)
    w.provider.idTokenClaims = { iat: now + 500, exp: now - 500 } // this device is 500 s off
    await expect(c.handleRedirectCallback(back)).resolves.toMatchObject({ user: { sub: 'user-1' } })
  })

  it('accepts an audience array naming the client', async () => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    w.provider.idTokenClaims = { aud: ['api', 'demo'], azp: 'demo' }
    await expect(c.handleRedirectCallback(back)).resolves.toBeTruthy()
  })

  it('refetches the JWKS once when the key was rotated', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    expect(w.provider.callsTo('/.well-known/jwks.json')).toHaveLength(1)
    const back = await w.startSignIn(c)
    w.provider.idTokenHeader = { kid: 'k2' } // signed with the same key material under a new kid
    const jwks = w.provider.fetch
    w.provider.fetch = async (input, init) => {
      if (String(input).endsWith('/jwks.json')) {
        const res = await jwks(input, init)
        const body = await res.json()
        return new Response(JSON.stringify({ keys: [{ ...body.keys[0], kid: 'k2' }] }), { status: 200 })
      }
      return jwks(input, init)
    }
    vi.stubGlobal('fetch', w.provider.fetch)
    await expect(c.handleRedirectCallback(back)).resolves.toBeTruthy()
    expect(w.provider.callsTo('/.well-known/jwks.json')).toHaveLength(2)
  })
})

describe('handleRedirectCallback called twice for one response (React StrictMode runs effects twice)', () => {
  it('the second call, on the address the first call cleaned, gets the first call’s result while it is pending', async () => {
    const w = await world()
    const c = w.client()
    const signedIn = vi.fn()
    c.on('signedIn', signedIn)
    w.provider.tokenDelay = 30 // the first exchange is still under way when the second call comes
    w.browser.location.href = await w.startSignIn(c, { returnTo: '/demo/orders' })
    const first = c.handleRedirectCallback()
    expect(w.browser.location.href).toBe('http://127.0.0.1:8080/demo/callback') // cleaned at once
    const second = c.handleRedirectCallback()
    expect(second).toBe(first)
    expect(await second).toMatchObject({ returnTo: '/demo/orders', user: { sub: 'user-1' } })
    expect(w.provider.callsTo('/oauth2/token')).toHaveLength(1)
    expect(signedIn).toHaveBeenCalledTimes(1)
  })

  it('after the first call has finished, with the URL passed explicitly, raw or cleaned', async () => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    w.browser.location.href = back
    const result = await c.handleRedirectCallback(w.browser.location.href)
    await expect(c.handleRedirectCallback(w.browser.location.href)).resolves.toBe(result) // the cleaned one
    await expect(c.handleRedirectCallback(back)).resolves.toBe(result) // the raw one, kept by a router
    expect(w.provider.callsTo('/oauth2/token')).toHaveLength(1)
  })

  it('a failure is the same failure, reported once', async () => {
    const w = await world()
    const c = w.client()
    const onError = vi.fn()
    c.on('error', onError)
    await c.signIn()
    w.browser.location.href = w.provider.deny(w.browser.location.assigned[0])
    const first = await rejection(c.handleRedirectCallback())
    const second = await rejection(c.handleRedirectCallback())
    expect(first).toMatchObject({ code: 'access_denied' })
    expect(second).toBe(first)
    expect(onError).toHaveBeenCalledTimes(1)
  })

  it('a new response on the same callback URL is handled, not answered from the last one', async () => {
    const w = await world()
    const c = w.client()
    w.browser.location.href = await w.startSignIn(c)
    const first = await c.handleRedirectCallback()
    w.browser.location.href = await w.startSignIn(c, { returnTo: '/demo/again' })
    const second = await c.handleRedirectCallback()
    expect(second).not.toBe(first)
    expect(second.returnTo).toBe('/demo/again')
    expect(w.provider.callsTo('/oauth2/token')).toHaveLength(2)
  })
})
