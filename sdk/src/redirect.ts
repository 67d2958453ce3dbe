// The two legs of the redirect: the authorization request (with the sign-in kept for the way back) and
// the response on the redirect URI (read, removed from the address bar, matched to its sign-in).
import { pkceChallenge, randomString } from './encoding.js'
import { AuthError, configError } from './errors.js'
import type { SignInOptions, Settings } from './options.js'
import { withParams } from './provider.js'
import { type KeyValueStore, readJson, writeJson } from './storage.js'

/** A sign-in in progress, keyed by its state, kept in sessionStorage across the redirect. */
export interface Transaction {
  verifier: string
  nonce: string
  returnTo?: string
  redirectUri: string
  created: number
}

const transactionTTL = 3600_000
const responseParams = ['code', 'state', 'error', 'error_description', 'error_uri', 'iss', 'scope', 'session_state']

/** The page's location; configuration_error where there is none (server-side rendering, a worker). */
export const browser = (): Location => {
  if (!globalThis.location) configError('this method needs a browser window')
  return globalThis.location
}

/** The sign-ins started less than an hour ago, by state, kept in store under key. */
function pending(store: KeyValueStore, key: string): Record<string, Transaction> {
  const stored = readJson<Record<string, Transaction>>(store, key)
  const txs: Record<string, Transaction> = {}
  if (typeof stored === 'object') for (const [k, tx] of Object.entries(stored)) if (Date.now() - tx?.created < transactionTTL) txs[k] = tx
  return txs
}

/** Removes and returns the sign-in of state: a state is good for one response. */
export function takeTransaction(store: KeyValueStore, key: string, state: string): Transaction {
  const txs = pending(store, key)
  const tx = txs[state]
  if (!tx) {
    throw Object.keys(txs).length
      ? new AuthError('state_mismatch', 'the response is not for the sign-in started in this tab')
      : new AuthError(
          'state_not_found',
          'no sign-in was started in this tab for this response (reload, back button, other tab): sign in again',
        )
  }
  delete txs[state]
  writeJson(store, key, txs)
  return tx
}

/** Starts a sign-in: keeps its state, nonce and PKCE verifier, and returns the authorization request's URL. */
export async function authorizationRequest(s: Settings, endpoint: string, store: KeyValueStore, o: SignInOptions): Promise<string> {
  const loc = browser()
  const state = randomString()
  const nonce = randomString()
  const verifier = randomString()
  const url = withParams(endpoint, {
    prompt: o.prompt,
    login_hint: o.loginHint,
    ...o.extraParams,
    response_type: 'code',
    client_id: s.clientId,
    redirect_uri: s.redirectUri,
    scope: s.scope,
    state,
    nonce,
    code_challenge: await pkceChallenge(verifier),
    code_challenge_method: 'S256',
  })
  const tx: Transaction = {
    verifier,
    nonce,
    returnTo: o.returnTo ?? loc.pathname + loc.search + loc.hash,
    redirectUri: s.redirectUri,
    created: Date.now(),
  }
  writeJson(store, s.key + ':tx', { ...pending(store, s.key + ':tx'), [state]: tx })
  return url
}

/** href without the parameters of an authorization response; undefined when href is not a URL. */
export function withoutResponse(href: string | undefined): string | undefined {
  try {
    const u = new URL(href!)
    for (const k of responseParams) u.searchParams.delete(k)
    return u.href
  } catch {
    return undefined
  }
}

/**
 * The authorization response's parameters in href. When href is the page's address, the response is
 * removed from the address bar first, so that a reload or the back button cannot replay it.
 */
export function readResponse(href: string): Record<string, string> {
  let u: URL
  try {
    u = new URL(href)
  } catch {
    throw new AuthError('missing_code', `not a callback URL: ${href}`)
  }
  if (globalThis.location?.href === u.href) history.replaceState(history.state, '', withoutResponse(u.href))
  return Object.fromEntries(u.searchParams)
}
