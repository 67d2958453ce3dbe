import { readFileSync } from 'node:fs'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { AuthError, ServiceAuthClient } from '../../src/index'
import { rejection } from '../helpers/setup'

const good = { baseUrl: 'https://id.example.com', clientId: 'app', redirectUri: 'https://app.example.com/cb' }

describe('options', () => {
  it.each([
    ['no options', undefined, /baseUrl/],
    ['a relative baseUrl', { ...good, baseUrl: '/auth' }, /baseUrl must be an http\(s\) URL/],
    ['a baseUrl that is not http', { ...good, baseUrl: 'ftp://id.example.com' }, /baseUrl/],
    ['plain http on a public host', { ...good, baseUrl: 'http://id.example.com' }, /baseUrl must use https/],
    ['no clientId', { ...good, clientId: '' }, /clientId is required/],
    ['a clientId that is not a string', { ...good, clientId: 42 }, /clientId is required/],
    ['no redirectUri', { ...good, redirectUri: undefined }, /redirectUri/],
    ['a redirectUri with a fragment', { ...good, redirectUri: 'https://app.example.com/cb#x' }, /redirectUri/],
    ['a bad postLogoutRedirectUri', { ...good, postLogoutRedirectUri: 'nope' }, /postLogoutRedirectUri/],
    ['a scope without openid', { ...good, scope: 'profile email' }, /scope must include openid/],
    ['an unknown storage', { ...good, storage: 'cookie' }, /storage must be/],
    ['a negative leeway', { ...good, refreshLeewaySeconds: -1 }, /refreshLeewaySeconds/],
    ['a leeway that is not a number', { ...good, refreshLeewaySeconds: '30' }, /refreshLeewaySeconds/],
    ['an infinite skew', { ...good, clockSkewSeconds: Infinity }, /clockSkewSeconds/],
  ])('refuses %s with configuration_error', (_name, opts, message) => {
    let err: unknown
    try {
      new ServiceAuthClient(opts as never)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(AuthError)
    expect(err).toMatchObject({ code: 'configuration_error', message: expect.stringMatching(message) })
  })

  it.each(['http://localhost:3000', 'http://127.0.0.1:8080', 'http://app.localhost', 'http://[::1]:8080', 'https://id.example.com/'])(
    'accepts %s as baseUrl',
    (baseUrl) => {
      expect(() => new ServiceAuthClient({ ...good, baseUrl })).not.toThrow()
    },
  )

  it('refuses an unknown event', () => {
    const c = new ServiceAuthClient(good)
    expect(() => c.on('signedUp' as never, () => {})).toThrowError(expect.objectContaining({ code: 'configuration_error' }))
  })
})

describe('server-side rendering (no window)', () => {
  it('constructs without touching browser APIs and reports signed out', async () => {
    expect(typeof (globalThis as { document?: unknown }).document).toBe('undefined')
    const c = new ServiceAuthClient(good)
    expect(await c.isAuthenticated()).toBe(false)
    expect(await c.getUser()).toBeNull()
    expect(await c.getSession()).toBeNull()
    expect(await rejection(c.getAccessToken())).toMatchObject({ code: 'login_required' })
  })

  it('explains that signIn needs a browser', async () => {
    const c = new ServiceAuthClient(good)
    expect(await rejection(c.signIn())).toMatchObject({ code: 'configuration_error', message: /browser window/ })
  })

  it('importing the built ES module defines nothing global', async () => {
    const before = new Set(Object.getOwnPropertyNames(globalThis))
    const mod = await import('../../dist/service-auth-client.js')
    expect(typeof mod.ServiceAuthClient).toBe('function')
    expect(typeof mod.AuthError).toBe('function')
    expect(Object.getOwnPropertyNames(globalThis).filter((n) => !before.has(n))).toEqual([])
  })

  it('the script-tag build defines exactly the global ServiceAuthClient, with AuthError', () => {
    const code = readFileSync(new URL('../../dist/service-auth-client.min.js', import.meta.url), 'utf8')
    const sandbox: Record<string, unknown> = {}
    runInNewContext(code, sandbox)
    expect(Object.keys(sandbox)).toEqual(['ServiceAuthClient'])
    const Client = sandbox.ServiceAuthClient as typeof ServiceAuthClient
    expect(typeof Client.AuthError).toBe('function')
    let err: unknown
    try {
      new Client({ ...good, clientId: '' })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(Client.AuthError)
  })
})
