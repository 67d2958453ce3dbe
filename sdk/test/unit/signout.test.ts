import { describe, expect, it, vi } from 'vitest'
import { settle } from '../helpers/fake-browser'
import { world } from '../helpers/setup'

describe('signOut', () => {
  it('revokes the refresh token, forgets the tokens and goes to the logout endpoint without putting a token in the URL', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    const stored = w.browser.firstTab.sessionStorage.getItem('sac:demo')!
    const { refresh, idToken, access } = JSON.parse(stored)
    const signedOut = vi.fn()
    c.on('signedOut', signedOut)
    await c.signOut()
    const [revoke] = w.provider.callsTo('/oauth2/revoke')
    expect(Object.fromEntries(new URLSearchParams(revoke.body))).toEqual({
      token: refresh,
      token_type_hint: 'refresh_token',
      client_id: 'demo',
    })
    expect(w.browser.firstTab.sessionStorage.getItem('sac:demo')).toBeNull()
    expect(await c.isAuthenticated()).toBe(false)
    expect(signedOut).toHaveBeenCalledTimes(1)
    // the id_token goes in a POSTed form (id_token_hint), never in a URL
    expect(w.browser.firstTab.document.submitted).toEqual([
      {
        method: 'post',
        action: 'http://127.0.0.1:8080/oauth2/logout',
        fields: { client_id: 'demo', post_logout_redirect_uri: 'http://127.0.0.1:8080/demo/', id_token_hint: idToken },
      },
    ])
    for (const u of [...w.browser.location.assigned, ...w.provider.calls.map((c) => c.url)]) {
      for (const token of [refresh, idToken, access]) expect(u).not.toContain(token)
    }
  })

  it('from another origin than the provider, goes there with client_id only (the provider asks the user)', async () => {
    const w = await world({ href: 'http://localhost:3000/app/' })
    w.provider.redirectUri = 'http://localhost:3000/callback'
    const c = w.client({ redirectUri: 'http://localhost:3000/callback', postLogoutRedirectUri: 'http://localhost:3000/' })
    await w.signIn(c)
    await c.signOut()
    expect(w.browser.firstTab.document.submitted).toHaveLength(0)
    const logout = new URL(w.browser.location.assigned.at(-1)!)
    expect(logout.origin + logout.pathname).toBe('http://127.0.0.1:8080/oauth2/logout')
    expect(Object.fromEntries(logout.searchParams)).toEqual({ client_id: 'demo', post_logout_redirect_uri: 'http://localhost:3000/' })
  })

  it('without an id_token, asks the provider with client_id only (it confirms with the user)', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    const stored = JSON.parse(w.browser.firstTab.sessionStorage.getItem('sac:demo')!)
    delete stored.idToken
    w.browser.firstTab.sessionStorage.setItem('sac:demo', JSON.stringify(stored))
    await c.signOut()
    const logout = new URL(w.browser.location.assigned.at(-1)!)
    expect(logout.origin + logout.pathname).toBe('http://127.0.0.1:8080/oauth2/logout')
    expect(Object.fromEntries(logout.searchParams)).toEqual({ client_id: 'demo', post_logout_redirect_uri: 'http://127.0.0.1:8080/demo/' })
  })

  it('without an end_session_endpoint, goes straight to returnTo', async () => {
    const w = await world()
    w.provider.discovery = { end_session_endpoint: undefined }
    const c = w.client()
    await w.signIn(c)
    await c.signOut()
    expect(w.browser.location.assigned.at(-1)).toBe('http://127.0.0.1:8080/demo/')
    expect(w.browser.firstTab.document.submitted).toHaveLength(0)
  })

  it('returnTo replaces postLogoutRedirectUri; redirect:false stays on the page', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    await c.signOut({ returnTo: 'http://127.0.0.1:8080/bye' })
    const forms = w.browser.firstTab.document.submitted
    expect(forms.at(-1)!.fields.post_logout_redirect_uri).toBe('http://127.0.0.1:8080/bye')
    await w.signIn(c)
    const n = w.browser.location.assigned.length
    await c.signOut({ redirect: false })
    expect(w.browser.location.assigned).toHaveLength(n)
    expect(forms).toHaveLength(1)
    expect(await c.isAuthenticated()).toBe(false)
  })

  it('signs out the tabs that share the session', async () => {
    const w = await world()
    const a = w.client()
    await w.signIn(a)
    w.browser.duplicateTab()
    const b = w.client()
    const signedOutInB = vi.fn()
    b.on('signedOut', signedOutInB)
    expect(await b.isAuthenticated()).toBe(true)
    await a.signOut({ redirect: false })
    await vi.waitFor(() => expect(signedOutInB).toHaveBeenCalled())
    expect(await b.isAuthenticated()).toBe(false)
  })

  it('leaves tabs with another session alone', async () => {
    const w = await world()
    const a = w.client()
    await w.signIn(a)
    w.browser.newTab()
    const b = w.client()
    await w.signIn(b)
    await a.signOut({ redirect: false })
    await settle()
    expect(await b.isAuthenticated()).toBe(true)
  })

  it('forgets the tokens even when the provider is unreachable, then reports discovery_failed', async () => {
    const w = await world()
    const c = w.client()
    await w.signIn(c)
    w.provider.discovery = 'network'
    const fresh = w.client() // no cached discovery document
    await expect(fresh.signOut()).rejects.toMatchObject({ code: 'discovery_failed' })
    expect(await c.isAuthenticated()).toBe(false)
  })
})
