// The client's options: their public types, and the checks that turn them into Settings.
import { configError } from './errors.js'
import type { User } from './jwt.js'

/**
 * Options of {@link ServiceAuthClient}. Bad values throw an {@link AuthError} `configuration_error` at
 * construction.
 *
 * @example
 * const auth = new ServiceAuthClient({
 *   baseUrl: 'https://id.example.com',
 *   clientId: 'my-app',
 *   redirectUri: 'https://app.example.com/callback',
 *   postLogoutRedirectUri: 'https://app.example.com/',
 * })
 */
export interface ServiceAuthClientOptions {
  /** The provider's issuer URL; the discovery document is read from `{baseUrl}/.well-known/openid-configuration`. */
  baseUrl: string
  /** The client ID registered at the provider. */
  clientId: string
  /** Where the provider sends the browser back; must be registered exactly as written here. */
  redirectUri: string
  /** Space-separated scopes; must include `openid`. Default `openid profile email offline_access`
   * (`offline_access` is what gets a refresh token). */
  scope?: string
  /** Where the provider sends the browser after `signOut()`; must be registered at the provider. */
  postLogoutRedirectUri?: string
  /**
   * Where tokens are kept. `session` (default): this tab only, survives reloads. `memory`: this page only,
   * a reload needs a new sign-in (a redirect; no form when the provider session lives). `local`: every
   * tab of the origin, survives restarts — readable by any script on the origin, so choose it knowingly.
   */
  storage?: 'memory' | 'session' | 'local'
  /** Refresh the access token this many seconds before it expires (at most half its lifetime). Default 30. */
  refreshLeewaySeconds?: number
  /** Tolerated difference between this device's clock and the provider's, for id_token checks. Default 120. */
  clockSkewSeconds?: number
}

/** Options of {@link ServiceAuthClient.signIn}. */
export interface SignInOptions {
  /** Handed back by `handleRedirectCallback()`, for the app to navigate to. Default: the current path. */
  returnTo?: string
  /** `none` (fail with `login_required` unless the provider session lives), `login` (always show the form)… */
  prompt?: string
  /** Pre-fills the e-mail field of the sign-in page. */
  loginHint?: string
  /** More authorization request parameters; they cannot replace the ones the SDK sets. */
  extraParams?: Record<string, string>
}

/** Options of {@link ServiceAuthClient.signOut}. */
export interface SignOutOptions {
  /** Where the provider sends the browser afterwards. Default: the `postLogoutRedirectUri` option. */
  returnTo?: string
  /** false: only revoke and forget the tokens here, leaving the provider's session and the page alone. */
  redirect?: boolean
}

/** What {@link ServiceAuthClient.handleRedirectCallback} resolves to. */
export interface RedirectResult {
  /** The `returnTo` given to `signIn()`. */
  returnTo?: string
  /** The signed-in user (the id_token's claims). */
  user: User
}

/** The current session, without any network call. */
export interface Session {
  user: User
  /** When the access token expires, in milliseconds since the epoch. */
  expiresAt: number
  /** The granted scopes. */
  scope: string
}

/** The options, checked, with their defaults applied. @internal */
export interface Settings extends Required<Omit<ServiceAuthClientOptions, 'postLogoutRedirectUri'>> {
  postLogoutRedirectUri?: string
  /** baseUrl without a trailing slash. */
  issuer: string
  /** The name of this client's storage keys, Web Lock and BroadcastChannel. */
  key: string
}

const isLoopback = (h: string) => h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127(\.\d+){3}$/.test(h)

function checkUrl(name: string, v: unknown): string {
  let u: URL | undefined
  try {
    u = new URL(v as string)
  } catch {
    // reported below
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.hash) {
    configError(`${name} must be an http(s) URL without #fragment, got ${v}`)
  }
  if (u.protocol === 'http:' && !isLoopback(u.hostname)) {
    configError(`${name} must use https (http only for localhost), got ${v}`)
  }
  return v as string
}

function seconds(name: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback
  if (typeof v !== 'number' || !(v >= 0) || v === Infinity) configError(`${name} must be a number of seconds >= 0`)
  return v
}

/** Checks the options (they may come from plain JavaScript: every type is checked too). @internal */
export function settings(options: ServiceAuthClientOptions): Settings {
  const o = (options || {}) as ServiceAuthClientOptions
  const issuer = checkUrl('baseUrl', o.baseUrl).replace(/\/+$/, '')
  if (typeof o.clientId !== 'string' || !o.clientId) configError('clientId is required')
  checkUrl('redirectUri', o.redirectUri)
  if (o.postLogoutRedirectUri !== undefined) checkUrl('postLogoutRedirectUri', o.postLogoutRedirectUri)
  const scope = o.scope ?? 'openid profile email offline_access'
  if (typeof scope !== 'string' || !scope.split(' ').includes('openid')) configError('scope must include openid')
  const storage = o.storage ?? 'session'
  if (!['memory', 'session', 'local'].includes(storage)) configError(`storage must be 'memory', 'session' or 'local'`)
  return {
    ...o,
    issuer,
    scope,
    storage,
    refreshLeewaySeconds: seconds('refreshLeewaySeconds', o.refreshLeewaySeconds, 30),
    clockSkewSeconds: seconds('clockSkewSeconds', o.clockSkewSeconds, 120),
    key: 'sac:' + o.clientId,
  }
}
