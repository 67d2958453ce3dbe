// HTTP to the provider: no cookies, no caches, errors as AuthError.
import { AuthError } from './errors.js'

export interface Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  userinfo_endpoint?: string
  revocation_endpoint?: string
  end_session_endpoint?: string
}

/** fetch without cookies or caching; a failed connection becomes a network_error. Resolves [response, JSON body or {}]. */
export async function send(url: string, init?: RequestInit): Promise<[Response, Record<string, any>]> {
  let res: Response
  try {
    res = await fetch(url, { credentials: 'omit', cache: 'no-store', ...init })
  } catch (e) {
    throw new AuthError('network_error', `could not reach ${url}`, undefined, undefined, e)
  }
  const body = await res.json().catch(() => 0)
  return [res, body && typeof body === 'object' ? body : {}]
}

export function withParams(base: string, params: Record<string, string | undefined>): string {
  const u = new URL(base)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v)
  return u.href
}
