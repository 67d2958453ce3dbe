import { AuthError } from './errors.js'

/** base64url without padding (RFC 4648 section 5), as JWTs and PKCE use it. */
export function b64url(bytes: Uint8Array): string {
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** Decodes base64url (padding optional). Throws on invalid input. */
export function fromB64url(s: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
}

/** The Web Crypto API, or an insecure_context error: browsers hide it on plain-http origins. */
export function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle
  if (!s) {
    throw new AuthError(
      'insecure_context',
      'crypto.subtle is missing: serve the page over https or from localhost',
    )
  }
  return s
}

/** A random base64url string of n bytes of entropy (32 bytes: 43 characters). */
export function randomString(n = 32): string {
  subtle()
  return b64url(crypto.getRandomValues(new Uint8Array(n)))
}

/** The PKCE S256 code challenge of a verifier (RFC 7636 section 4.2). */
export async function pkceChallenge(verifier: string): Promise<string> {
  return b64url(new Uint8Array(await subtle().digest('SHA-256', new TextEncoder().encode(verifier))))
}
