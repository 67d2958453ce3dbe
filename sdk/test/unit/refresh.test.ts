import { describe, expect, it, vi } from 'vitest'
import { settle } from '../helpers/fake-browser'
import { rejection, world } from '../helpers/setup'

/** Moves this process's clock (Date only; timers stay real). */
function advance(seconds: number) {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Date.now() + seconds * 1000)
}

describe('getAccessToken', () => {
  it('returns the stored token until it is within the leeway, then refreshes (rotating the refresh token)', async () => {
    const w = await world()
    w.provider.expiresIn = 300
    const c = w.client({ refreshLeewaySeconds: 60 })
    await w.signIn(c)
    const first = await c.getAccessToken()
    advance(239)
    expect(await c.getAccessToken()).toBe(first)
    expect(w.provider.refreshCount).toBe(0)
    const refreshed = vi.fn()
    c.on('tokenRefreshed', refreshed)
    advance(2)
    const second = await c.getAccessToken()
    expect(second).not.toBe(first)
    expect(w.provider.refreshCount).toBe(1)
    expect(refreshed).toHaveBeenCalledWith({ expiresAt: expect.any(Number) })
    const [req] = w.provider.callsTo('/oauth2/token').slice(-1)
    expect(Object.fromEntries(new URLSearchParams(req.body))).toMatchObject({ grant_type: 'refresh_token', client_id: 'demo' })
    // the rotated refresh token is used next time, never the old one
    advance(300)
    await c.getAccessToken()
    expect(w.provider.refreshCount).toBe(2)
    expect(w.provider.reuseDetected).toBe(0)
    expect((await c.getUser())?.sub).toBe('user-1')
  })

  it('caps the leeway at half the lifetime, so that short tokens are not refreshed on every call', async () => {
    const w = await world()
    w.provider.expiresIn = 20
    const c = w.client({ refreshLeewaySeconds: 60 })
    await w.signIn(c)
    const t = await c.getAccessToken()
    advance(9)
    expect(await c.getAccessToken()).toBe(t)
    advance(2)
    expect(await c.getAccessToken()).not.toBe(t)
  })

  it('shares one refresh among concurrent calls in a tab', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    w.provider.tokenDelay = 50
    const c = w.client()
    await w.signIn(c)
    advance(61)
    const tokens = await Promise.all(Array.from({ length: 10 }, () => c.getAccessToken()))
    expect(new Set(tokens).size).toBe(1)
    expect(w.provider.refreshCount).toBe(1)
  })

  it('shares one refresh among tabs sharing localStorage (Web Locks + channel)', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    w.provider.tokenDelay = 30
    const a = w.client({ storage: 'local' })
    await w.signIn(a)
    w.browser.newTab()
    const b = w.client({ storage: 'local' })
    expect(await b.isAuthenticated()).toBe(true)
    advance(61)
    const [ta, tb] = await Promise.all([a.getAccessToken(), b.getAccessToken()])
    expect(ta).toBe(tb)
    expect(w.provider.refreshCount).toBe(1)
    expect(w.provider.reuseDetected).toBe(0)
    expect(w.browser.locks.requests).toBe(2)
  })

  it('hands rotated tokens to a duplicated tab with its own sessionStorage, so that it never reuses the old refresh token', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    w.provider.tokenDelay = 30
    const a = w.client()
    await w.signIn(a)
    // a duplicated tab starts with a copy of sessionStorage: the same refresh token
    w.browser.duplicateTab()
    const b = w.client()
    const refreshedInB = vi.fn()
    b.on('tokenRefreshed', refreshedInB)
    advance(61)
    const [ta, tb] = await Promise.all([a.getAccessToken(), b.getAccessToken()])
    expect(ta).toBe(tb)
    expect(w.provider.refreshCount).toBe(1)
    expect(refreshedInB).toHaveBeenCalled()
    // and later refreshes in either tab keep working: the family was never revoked
    advance(61)
    await b.getAccessToken()
    advance(61)
    await a.getAccessToken()
    expect(w.provider.reuseDetected).toBe(0)
    expect(w.provider.refreshCount).toBe(3)
    expect(await a.fetchUserInfo()).toMatchObject({ sub: 'user-1' })
  })

  it('without Web Locks, tabs elect one refresher over the channel', async () => {
    const w = await world({ locks: false })
    w.provider.expiresIn = 60
    w.provider.tokenDelay = 30
    const a = w.client({ storage: 'local' })
    await w.signIn(a)
    w.browser.newTab()
    const b = w.client({ storage: 'local' })
    w.browser.newTab()
    const c = w.client({ storage: 'local' })
    advance(61)
    const tokens = await Promise.all([a.getAccessToken(), b.getAccessToken(), c.getAccessToken()])
    expect(new Set(tokens).size).toBe(1)
    expect(w.provider.refreshCount).toBe(1)
    expect(w.provider.reuseDetected).toBe(0)
  })

  it('the control: two clients that do not coordinate (separate origins) get the family revoked', async () => {
    // Proves the tests above can fail: without the coordination, rotation races log the user out.
    const w = await world()
    w.provider.expiresIn = 60
    w.provider.tokenDelay = 30
    const a = w.client()
    await w.signIn(a)
    w.browser.duplicateTab()
    vi.stubGlobal('BroadcastChannel', undefined) // b cannot hear a
    vi.stubGlobal('navigator', {})
    const b = w.client()
    advance(61)
    const results = await Promise.allSettled([a.getAccessToken(), b.getAccessToken()])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect(w.provider.reuseDetected).toBe(1)
  })

  it('signed out: login_required, without an error event', async () => {
    const w = await world()
    const c = w.client()
    const onError = vi.fn()
    c.on('error', onError)
    expect(await rejection(c.getAccessToken())).toMatchObject({ code: 'login_required' })
    expect(onError).not.toHaveBeenCalled()
  })

  it('a refused refresh token: invalid_grant, the session is cleared, signedOut and error are emitted', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    const c = w.client()
    await w.signIn(c)
    w.provider.revokedFamilies = new Set([...w.provider.refreshTokens.values()].map((r) => r.family))
    const signedOut = vi.fn()
    const onError = vi.fn()
    c.on('signedOut', signedOut)
    c.on('error', onError)
    advance(61)
    const err = await rejection(c.getAccessToken())
    expect(err).toMatchObject({ code: 'invalid_grant', description: 'The refresh token is invalid' })
    expect(signedOut).toHaveBeenCalledTimes(1)
    expect(onError).toHaveBeenCalledTimes(1)
    expect(onError.mock.calls[0][0]).toBe(err)
    expect(await c.isAuthenticated()).toBe(false)
  })

  it('a network failure keeps the session, and the next call retries', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    const c = w.client()
    await w.signIn(c)
    advance(61)
    w.provider.failToken = 'network'
    expect(await rejection(c.getAccessToken())).toMatchObject({ code: 'network_error' })
    expect(await c.isAuthenticated()).toBe(true)
    await expect(c.getAccessToken()).resolves.toMatch(/./)
  })

  it('a refreshed id_token about another user: invalid_id_token, and the session ends', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    const c = w.client()
    await w.signIn(c)
    w.provider.idTokenClaims = { sub: 'someone-else' }
    advance(61)
    expect(await rejection(c.getAccessToken())).toMatchObject({ code: 'invalid_id_token', message: /sub changed/ })
    expect(await c.isAuthenticated()).toBe(false)
  })

  it('keeps the claims and refresh token when a refresh answers without them', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    const c = w.client()
    await w.signIn(c)
    w.provider.omitIdToken = true
    w.provider.omitRefreshToken = true
    advance(61)
    await c.getAccessToken()
    expect(await c.getUser()).toMatchObject({ sub: 'user-1' })
    expect(await c.isAuthenticated()).toBe(true)
  })

  it('without a refresh token (no offline_access) an expired session needs a new sign-in', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    w.provider.omitRefreshToken = true
    const c = w.client({ scope: 'openid email' })
    await w.signIn(c)
    advance(50)
    await expect(c.getAccessToken()).resolves.toMatch(/./) // within the leeway but still valid
    advance(11)
    expect(await c.isAuthenticated()).toBe(false)
    expect(await rejection(c.getAccessToken())).toMatchObject({ code: 'login_required' })
  })

  it('refreshes when the tab becomes visible again, not on timers', async () => {
    const w = await world()
    w.provider.expiresIn = 60
    const c = w.client()
    await w.signIn(c)
    const refreshed = vi.fn()
    c.on('tokenRefreshed', refreshed)
    w.browser.firstTab.document.setVisibility('hidden')
    advance(61)
    await settle()
    expect(w.provider.refreshCount).toBe(0)
    w.browser.firstTab.document.setVisibility('visible')
    await vi.waitFor(() => expect(refreshed).toHaveBeenCalled())
    expect(w.provider.refreshCount).toBe(1)
  })
})
