import { describe, expect, it, vi } from 'vitest'
import { AuthError, type AuthErrorCode } from '../../src/index'
import { rejection, world, type World } from '../helpers/setup'

describe('events', () => {
  it('on() returns the function that unsubscribes', async () => {
    const w = await world()
    const c = w.client()
    const l = vi.fn()
    const off = c.on('signedIn', l)
    await w.signIn(c)
    off()
    await w.signIn(c)
    expect(l).toHaveBeenCalledTimes(1)
  })

  it('a listener that throws does not break the sign-in, and its error is reported asynchronously', async () => {
    const w = await world()
    const c = w.client()
    const reported = new Promise<unknown>((resolve) => {
      process.once('uncaughtException', resolve)
    })
    c.on('signedIn', () => {
      throw new Error('app bug')
    })
    const later = vi.fn()
    c.on('signedIn', later)
    await w.signIn(c)
    expect(later).toHaveBeenCalled()
    expect(await c.isAuthenticated()).toBe(true)
    expect(await reported).toMatchObject({ message: 'app bug' })
  })

  it('emits each failure once on error, and throws the same AuthError', async () => {
    const w = await world()
    const c = w.client()
    const onError = vi.fn()
    c.on('error', onError)
    w.provider.discovery = 404
    const err = await rejection(c.signIn())
    expect(onError).toHaveBeenCalledTimes(1)
    expect(onError.mock.calls[0][0]).toBe(err)
  })
})

describe('every error code', () => {
  // The record's type makes the compiler insist on one producer per code.
  const producers: Record<AuthErrorCode, (w: World) => Promise<unknown>> = {
    state_mismatch: async (w) => {
      const c = w.client()
      const back = new URL(await w.startSignIn(c))
      back.searchParams.set('state', 'tampered')
      return c.handleRedirectCallback(back.href)
    },
    state_not_found: async (w) => {
      const c = w.client()
      const back = await w.startSignIn(c)
      await c.handleRedirectCallback(back)
      return w.client().handleRedirectCallback(back) // replayed after a reload
    },
    missing_code: async (w) => w.client().handleRedirectCallback('http://127.0.0.1:8080/demo/callback'),
    access_denied: async (w) => {
      const c = w.client()
      await c.signIn()
      return c.handleRedirectCallback(w.provider.deny(w.browser.location.assigned[0]))
    },
    login_required: async (w) => w.client().getAccessToken(),
    invalid_grant: async (w) => {
      const c = w.client()
      const back = await w.startSignIn(c)
      w.provider.codes.forEach((code) => (code.used = true))
      return c.handleRedirectCallback(back)
    },
    network_error: async (w) => {
      const c = w.client()
      const back = await w.startSignIn(c)
      w.provider.failToken = 'network'
      return c.handleRedirectCallback(back)
    },
    discovery_failed: async (w) => {
      w.provider.discovery = { issuer: 'https://elsewhere.example.com' }
      return w.client().signIn()
    },
    invalid_id_token: async (w) => {
      const c = w.client()
      const back = await w.startSignIn(c)
      w.provider.idTokenClaims = { nonce: 'replayed' }
      return c.handleRedirectCallback(back)
    },
    configuration_error: async (w) => w.client({ redirectUri: 'javascript:alert(1)' }),
    insecure_context: async (w) => {
      vi.stubGlobal('crypto', {})
      return w.client().signIn()
    },
    server_error: async (w) => {
      const c = w.client()
      const back = await w.startSignIn(c)
      w.provider.failToken = 500
      return c.handleRedirectCallback(back)
    },
  }

  it.each(Object.entries(producers))('%s is an AuthError with that code', async (code, produce) => {
    const w = await world()
    let err: unknown
    try {
      await produce(w)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(AuthError)
    expect(err).toMatchObject({ name: 'AuthError', code, message: expect.any(String) })
  })
})
