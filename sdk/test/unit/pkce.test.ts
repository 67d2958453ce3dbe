import { afterEach, describe, expect, it, vi } from 'vitest'
import { b64url, fromB64url, pkceChallenge, randomString } from '../../src/encoding'

afterEach(() => vi.unstubAllGlobals())

describe('PKCE and random values', () => {
  it('computes the S256 challenge of RFC 7636 appendix B', async () => {
    expect(await pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    )
  })

  it('makes 43-character verifiers of unreserved characters, never twice the same', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const v = randomString()
      expect(v).toMatch(/^[A-Za-z0-9_-]{43}$/) // RFC 7636 4.1: 43..128 of [A-Z a-z 0-9 - . _ ~]
      seen.add(v)
    }
    expect(seen.size).toBe(1000)
  })

  it('encodes base64url without padding and decodes it back, for every byte value', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i)
    for (let n = 0; n <= 256; n += 17) {
      const bytes = all.slice(0, n)
      const s = b64url(bytes)
      expect(s).not.toMatch(/[+/=]/)
      expect(Buffer.from(s, 'base64url').equals(Buffer.from(bytes))).toBe(true)
      expect([...fromB64url(s)]).toEqual([...bytes])
    }
  })

  it('refuses with insecure_context when Web Crypto is missing (a plain-http origin)', async () => {
    vi.stubGlobal('crypto', {})
    expect(() => randomString()).toThrowError(expect.objectContaining({ code: 'insecure_context' }))
    await expect(pkceChallenge('x')).rejects.toMatchObject({ code: 'insecure_context', name: 'AuthError' })
  })
})
