import { fromB64url, subtle } from './encoding.js'
import { AuthError } from './errors.js'

/** The claims of an id_token: the standard ones, and whatever else the provider adds. */
export interface User {
  sub: string
  email?: string
  email_verified?: boolean
  name?: string
  [claim: string]: unknown
}

/** @internal */
export interface IdTokenChecks {
  issuer: string
  clientId: string
  /** The nonce sent with the authorization request; undefined after a refresh. */
  nonce?: string
  /** The claims of the id_token being replaced by a refresh (sub must not change). */
  previous?: User
  skewSeconds: number
  /** Returns the provider's JWKS; refetch asks for a fresh copy (the signing key was rotated). */
  keys: (refetch: boolean) => Promise<JsonWebKey[]>
}

// formsservice signs id_tokens with ES256 (ECDSA P-256, SHA-256); Web Crypto verifies JWS's r||s signatures as they are.
const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }

const invalid = (why: string, cause?: unknown) =>
  new AuthError('invalid_id_token', 'invalid id_token: ' + why, undefined, undefined, cause)

function part(s: string): Record<string, unknown> {
  const v = JSON.parse(new TextDecoder().decode(fromB64url(s)))
  if (!v || typeof v !== 'object') throw 0
  return v
}

/**
 * Verifies an id_token's signature against the provider's keys and its claims (OpenID Connect Core
 * 3.1.3.7 and 12.2), and returns the claims.
 * @internal
 */
export async function verifyIdToken(token: unknown, c: IdTokenChecks, now = Date.now()): Promise<User> {
  const parts = typeof token === 'string' ? token.split('.') : []
  let header, claims: User
  try {
    if (parts.length !== 3) throw 0
    header = part(parts[0])
    claims = part(parts[1]) as User
  } catch (e) {
    throw invalid('malformed', e)
  }
  if (header.alg !== 'ES256') throw invalid(`unsupported alg ${header.alg}`)
  let ok = false
  try {
    const data = new TextEncoder().encode(parts[0] + '.' + parts[1])
    const signature = fromB64url(parts[2])
    for (const refetch of [false, true]) {
      const keys = (await c.keys(refetch)).filter((k) => !header.kid || (k as { kid?: string }).kid === header.kid)
      if (!keys.length && !refetch) continue
      for (const k of keys) {
        const key = await subtle().importKey('jwk', k, ecdsa, false, ['verify']).catch(() => undefined)
        if (key && (await subtle().verify(ecdsa, key, signature, data))) ok = true
      }
      break
    }
  } catch (e) {
    if (e instanceof AuthError) throw e
    throw invalid('unverifiable', e)
  }
  if (!ok) throw invalid('bad signature')

  const skew = c.skewSeconds * 1000
  const aud = claims.aud
  if (claims.iss !== c.issuer) throw invalid(`iss ${claims.iss}`)
  if (!(Array.isArray(aud) ? aud.includes(c.clientId) : aud === c.clientId)) throw invalid('aud')
  if (claims.azp !== undefined && claims.azp !== c.clientId) throw invalid('azp')
  if (typeof claims.sub !== 'string' || !claims.sub) throw invalid('sub')
  if (typeof claims.exp !== 'number' || claims.exp * 1000 + skew <= now) throw invalid('expired')
  if (typeof claims.iat === 'number' && claims.iat * 1000 - skew > now) throw invalid('iat in the future')
  if (c.previous) {
    if (claims.sub !== c.previous.sub) throw invalid('sub changed')
    if (claims.nonce !== undefined && claims.nonce !== c.previous.nonce) throw invalid('nonce changed')
  } else if (claims.nonce !== c.nonce) {
    throw invalid('nonce')
  }
  return claims
}
