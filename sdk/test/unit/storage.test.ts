import { describe, expect, it } from 'vitest'
import { world } from '../helpers/setup'

describe('storage', () => {
  it('session (default): tokens in this tab’s sessionStorage only, never in localStorage', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    const token = await c.getAccessToken()
    expect(w.browser.firstTab.sessionStorage.dump()).toContain(token)
    expect(w.browser.localStorage.length).toBe(0)
    w.browser.newTab()
    expect(await w.client().isAuthenticated()).toBe(false)
  })

  it('memory: tokens in no web storage; a new page load starts signed out', async () => {
    const w = await world()
    const c = w.client({ storage: 'memory' })
    await w.signIn(c)
    const token = await c.getAccessToken()
    expect(w.browser.firstTab.sessionStorage.dump()).not.toContain(token)
    expect(w.browser.localStorage.length).toBe(0)
    expect(await w.client({ storage: 'memory' }).isAuthenticated()).toBe(false)
  })

  it('local: tokens shared by every tab of the origin', async () => {
    const w = await world()
    const c = w.client({ storage: 'local' })
    await w.signIn(c)
    expect(w.browser.localStorage.dump()).toContain(await c.getAccessToken())
    w.browser.newTab()
    expect(await w.client({ storage: 'local' }).getUser()).toMatchObject({ sub: 'user-1' })
  })

  it('never puts a token in a URL', async () => {
    const w = await world()
    w.provider.expiresIn = 1
    const c = w.client()
    await w.signIn(c)
    await new Promise((r) => setTimeout(r, 600))
    await c.getAccessToken() // a refresh
    await c.fetchUserInfo()
    await c.signOut()
    const tokens = [...w.provider.accessTokens.keys(), ...w.provider.refreshTokens.keys()]
    const urls = [...w.provider.calls.map((x) => x.url), ...w.browser.location.assigned, ...w.browser.firstTab.document.submitted.map((f) => f.action)]
    for (const u of urls) for (const t of tokens) expect(u).not.toContain(t)
  })

  it('treats unreadable stored state as signed out', async () => {
    const w = await world()
    w.browser.firstTab.sessionStorage.setItem('sac:demo', '{not json')
    const c = w.client()
    expect(await c.isAuthenticated()).toBe(false)
    w.browser.firstTab.sessionStorage.setItem('sac:demo', JSON.stringify({ access: 1 }))
    expect(await c.getUser()).toBeNull()
    w.browser.firstTab.sessionStorage.setItem('sac:demo:tx', '"garbage"')
    await expect(c.handleRedirectCallback('http://127.0.0.1:8080/demo/callback?code=a&state=b')).rejects.toMatchObject({
      code: 'state_not_found',
    })
  })

  it('a full store (quota) falls back to memory for the page instead of failing the sign-in', async () => {
    const w = await world()
    const c = w.client()
    const back = await w.startSignIn(c)
    w.browser.firstTab.sessionStorage.full = true
    await c.handleRedirectCallback(back)
    expect(await c.isAuthenticated()).toBe(true)
    expect(w.browser.firstTab.sessionStorage.getItem('sac:demo')).toBeNull()
  })

  it('keys the state by client, so that two apps on one origin do not mix', async () => {
    const w = await world()
    const a = w.client()
    await w.signIn(a)
    const other = w.client({ clientId: 'other' })
    expect(await other.isAuthenticated()).toBe(false)
  })
})
