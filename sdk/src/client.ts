import { pkceChallenge, randomString, subtle } from './encoding'
import { AuthError, providerError } from './errors'
import { type User, verifyIdToken } from './jwt'
import { type KeyValueStore, memoryStore, readJson, webStore, writeJson } from './storage'

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

/** The events of {@link ServiceAuthClient.on} and what their listeners receive. */
export interface AuthEvents {
  /** A sign-in completed in this tab. */
  signedIn: User
  /** The session ended: `signOut()` here or in a tab sharing it, or the provider refused the refresh token. */
  signedOut: undefined
  /** New tokens arrived, refreshed here or in another tab. */
  tokenRefreshed: { expiresAt: number }
  /** An operation failed; every error the client throws is emitted here too (once), except `login_required` from `getAccessToken()` while simply signed out. */
  error: AuthError
}

export type { User }

interface Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  userinfo_endpoint?: string
  revocation_endpoint?: string
  end_session_endpoint?: string
}

interface Tokens {
  access: string
  refresh?: string
  idToken?: string
  scope: string
  expiresAt: number
  /** When to refresh: expiresAt less the leeway. */
  refreshAt: number
  user: User
}

/** A sign-in in progress, keyed by its state, kept in sessionStorage across the redirect. */
interface Transaction {
  verifier: string
  nonce: string
  returnTo?: string
  redirectUri: string
  created: number
}

/**
 * Messages between the tabs of one origin, so that a refresh token is used once (rotation):
 * b: tab i is refreshing with refresh token r; r: r was rotated, s holds the new tokens;
 * x: refreshing r failed, others may try; o: r is no longer valid (signed out or refused).
 */
type Message = { t: 'b'; r: string; i: number } | { t: 'r'; r: string; s: Tokens } | { t: 'x' | 'o'; r: string }

const transactionTTL = 3600_000
const events = ['signedIn', 'signedOut', 'tokenRefreshed', 'error']
const responseParams = ['code', 'state', 'error', 'error_description', 'error_uri', 'iss', 'scope', 'session_state']

const signedOutMessage = 'not signed in: call signIn()'

function configError(message: string): never {
  throw new AuthError('configuration_error', 'ServiceAuthClient: ' + message)
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

function withParams(base: string, params: Record<string, string | undefined>): string {
  const u = new URL(base)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v)
  return u.href
}

/** fetch without cookies or caching; a failed connection becomes a network_error. Resolves [response, JSON body or {}]. */
async function send(url: string, init?: RequestInit): Promise<[Response, Record<string, any>]> {
  let res: Response
  try {
    res = await fetch(url, { credentials: 'omit', cache: 'no-store', ...init })
  } catch (e) {
    throw new AuthError('network_error', `could not reach ${url}`, undefined, undefined, e)
  }
  const body = await res.json().catch(() => 0)
  return [res, body && typeof body === 'object' ? body : {}]
}

const browser = () => {
  if (!globalThis.location) configError('this method needs a browser window')
  return globalThis.location
}

/**
 * Sign-in with the service for a browser app: OAuth 2.0 authorization code with PKCE (S256) and OpenID
 * Connect, refresh-token rotation safe across tabs, no iframes, no third-party cookies. Importing it has
 * no side effects, and constructing it touches no browser API outside a browser (server-side rendering).
 *
 * @example
 * const auth = new ServiceAuthClient({ baseUrl: 'http://127.0.0.1:8080', clientId: 'demo',
 *   redirectUri: 'http://127.0.0.1:8080/demo/callback' })
 * if (location.pathname === '/demo/callback') {
 *   const { returnTo } = await auth.handleRedirectCallback()
 *   history.replaceState(null, '', returnTo ?? '/demo/')
 * }
 * if (!(await auth.isAuthenticated())) await auth.signIn()
 * const res = await fetch('/api/me', { headers: { authorization: 'Bearer ' + (await auth.getAccessToken()) } })
 */
export class ServiceAuthClient {
  /** The error class, also reachable from the global of the script-tag build: `ServiceAuthClient.AuthError`. */
  static readonly AuthError = AuthError

  readonly #issuer: string
  readonly #clientId: string
  readonly #redirectUri: string
  readonly #scope: string
  readonly #postLogoutRedirectUri?: string
  readonly #leeway: number
  readonly #skew: number
  readonly #key: string
  #store: KeyValueStore
  readonly #transactionStore: KeyValueStore
  #discovery?: Promise<Discovery>
  #jwks?: Promise<JsonWebKey[]>
  #refreshing?: Promise<Tokens>
  readonly #listeners: Record<string, Set<(payload: any) => void>> = {}
  readonly #emitted = new WeakSet<AuthError>()
  #channel?: BroadcastChannel
  /** The refresh token this tab holds: messages about it concern this tab. */
  #known?: string
  /** Refresh tokens other tabs are refreshing right now, with the lowest tab id that said so. */
  readonly #busy = new Map<string, number>()
  readonly #wake = new Map<string, () => void>()
  readonly #id = Math.random()

  /** @throws {AuthError} `configuration_error` when an option is missing or wrong. */
  constructor(options: ServiceAuthClientOptions) {
    const o = (options || {}) as ServiceAuthClientOptions
    this.#issuer = checkUrl('baseUrl', o.baseUrl).replace(/\/+$/, '')
    if (typeof o.clientId !== 'string' || !o.clientId) configError('clientId is required')
    this.#clientId = o.clientId
    this.#redirectUri = checkUrl('redirectUri', o.redirectUri)
    if (o.postLogoutRedirectUri !== undefined) checkUrl('postLogoutRedirectUri', o.postLogoutRedirectUri)
    this.#postLogoutRedirectUri = o.postLogoutRedirectUri
    this.#scope = o.scope ?? 'openid profile email offline_access'
    if (typeof this.#scope !== 'string' || !this.#scope.split(' ').includes('openid')) configError('scope must include openid')
    const storage = o.storage ?? 'session'
    if (!['memory', 'session', 'local'].includes(storage)) configError(`storage must be 'memory', 'session' or 'local'`)
    this.#leeway = seconds('refreshLeewaySeconds', o.refreshLeewaySeconds, 30)
    this.#skew = seconds('clockSkewSeconds', o.clockSkewSeconds, 120)
    this.#key = 'sac:' + this.#clientId
    this.#store = (storage !== 'memory' && webStore(storage)) || memoryStore()
    // A sign-in in progress must survive the redirect, whatever the token storage is.
    this.#transactionStore = webStore('session') || this.#store
    this.#load()

    const doc = globalThis.document
    if (!doc) return // server-side rendering or a worker: no tabs to coordinate with
    if (typeof BroadcastChannel === 'function') {
      this.#channel = new BroadcastChannel(this.#key)
      this.#channel.onmessage = (e) => this.#receive(e.data)
    }
    // Timers stall in background tabs, so refresh lazily: on demand, and when the tab comes back.
    doc.addEventListener('visibilitychange', () => {
      const t = this.#load()
      if (doc.visibilityState === 'visible' && t?.refresh && Date.now() >= t.refreshAt) this.getAccessToken().catch(() => {})
    })
  }

  /**
   * Starts a sign-in: creates state, nonce and a PKCE S256 verifier, keeps them for the callback, and
   * sends the browser to the provider's sign-in page. The promise settles only on failure.
   *
   * @example
   * loginButton.onclick = () => auth.signIn({ returnTo: location.pathname })
   * @throws {AuthError} `insecure_context`, `discovery_failed`, `configuration_error`.
   */
  async signIn(options: SignInOptions = {}): Promise<void> {
    try {
      const loc = browser()
      subtle()
      const d = await this.#config()
      const state = randomString()
      const nonce = randomString()
      const verifier = randomString()
      const txs = this.#transactions()
      txs[state] = {
        verifier,
        nonce,
        returnTo: options.returnTo ?? loc.pathname + loc.search + loc.hash,
        redirectUri: this.#redirectUri,
        created: Date.now(),
      }
      const url = withParams(d.authorization_endpoint, {
        prompt: options.prompt,
        login_hint: options.loginHint,
        ...options.extraParams,
        response_type: 'code',
        client_id: this.#clientId,
        redirect_uri: this.#redirectUri,
        scope: this.#scope,
        state,
        nonce,
        code_challenge: await pkceChallenge(verifier),
        code_challenge_method: 'S256',
      })
      writeJson(this.#transactionStore, this.#key + ':tx', txs)
      loc.assign(url)
    } catch (e) {
      throw this.#fail(e)
    }
  }

  /**
   * Completes a sign-in on the redirect URI: checks the state (once), exchanges the code with the PKCE
   * verifier, validates the id_token, keeps the tokens, and removes the response from the address bar.
   *
   * @example
   * try {
   *   const { returnTo } = await auth.handleRedirectCallback()
   *   history.replaceState(null, '', returnTo ?? '/')
   * } catch (e) {
   *   if (e.code === 'state_not_found' && (await auth.isAuthenticated())) history.replaceState(null, '', '/')
   *   else if (e.code === 'state_not_found') await auth.signIn()
   *   else showError(e)
   * }
   * @throws {AuthError} `state_not_found`, `state_mismatch`, `missing_code`, `access_denied`, `login_required`,
   * `invalid_grant`, `invalid_id_token`, `network_error`, `discovery_failed`, `server_error`.
   */
  async handleRedirectCallback(url?: string): Promise<RedirectResult> {
    try {
      let u: URL
      try {
        u = new URL(url ?? browser().href)
      } catch {
        throw new AuthError('missing_code', `not a callback URL: ${url}`)
      }
      const p = Object.fromEntries(u.searchParams)
      // Clear the response from the address bar first, so that a reload or the back button cannot replay it.
      const loc = globalThis.location
      if (loc?.href === u.href) {
        for (const k of responseParams) u.searchParams.delete(k)
        history.replaceState(history.state, '', u.href)
      }
      if (!p.state) {
        if (p.code || p.error) throw new AuthError('state_mismatch', 'no state in the URL')
        throw new AuthError('missing_code', 'no code in the URL')
      }
      const txs = this.#transactions()
      const tx = txs[p.state]
      if (!tx) {
        throw Object.keys(txs).length
          ? new AuthError('state_mismatch', 'the response is not for the sign-in started in this tab')
          : new AuthError(
              'state_not_found',
              'no sign-in was started in this tab for this response (reload, back button, other tab): sign in again',
            )
      }
      delete txs[p.state] // a state is good for one response
      writeJson(this.#transactionStore, this.#key + ':tx', txs)
      if (p.iss !== undefined && p.iss !== (await this.#config()).issuer) {
        throw new AuthError('state_mismatch', `the response is from issuer ${p.iss}`)
      }
      if (p.error) throw providerError(p.error, p.error_description, 'the sign-in failed')
      if (!p.code) throw new AuthError('missing_code', 'no code in the URL')
      const d = await this.#config()
      const t = await this.#accept(
        d,
        await this.#tokenRequest(d, {
          grant_type: 'authorization_code',
          code: p.code,
          redirect_uri: tx.redirectUri,
          code_verifier: tx.verifier,
        }),
        tx.nonce,
      )
      this.#save(t)
      this.#emit('signedIn', t.user)
      return { returnTo: tx.returnTo, user: t.user }
    } catch (e) {
      throw this.#fail(e)
    }
  }

  /**
   * Resolves a valid access token, refreshing it first when it is within the leeway of expiry. Calls at the
   * same time share one refresh, in this tab and across the tabs of the origin.
   *
   * @example
   * const res = await fetch(api, { headers: { authorization: `Bearer ${await auth.getAccessToken()}` } })
   * @throws {AuthError} `login_required` when signed out; `invalid_grant` when the provider refused the
   * refresh token (the session is cleared); `network_error` (the session is kept: retry later).
   */
  async getAccessToken(): Promise<string> {
    const t = this.#load()
    if (!t) throw new AuthError('login_required', signedOutMessage)
    return Date.now() < t.refreshAt ? t.access : (await this.#refresh()).access
  }

  /**
   * The signed-in user (the id_token's claims), or null. No network call.
   *
   * @example
   * const user = await auth.getUser()
   * greeting.textContent = user ? `Hello ${user.email}` : 'Signed out'
   */
  async getUser(): Promise<User | null> {
    return this.#load()?.user ?? null
  }

  /**
   * The user's claims from the provider's userinfo endpoint, fetched with the access token.
   *
   * @example
   * const { email } = await auth.fetchUserInfo()
   */
  async fetchUserInfo(): Promise<User> {
    try {
      const d = await this.#config()
      if (!d.userinfo_endpoint) configError('the provider has no userinfo endpoint')
      const [res, body] = await send(d.userinfo_endpoint, {
        headers: { authorization: 'Bearer ' + (await this.getAccessToken()) },
      })
      if (res.status === 401) throw new AuthError('login_required', 'the provider refused the access token')
      if (!res.ok) throw providerError(body.error, body.error_description, `userinfo answered ${res.status}`)
      if (body.sub !== this.#load()?.user.sub) throw new AuthError('invalid_id_token', 'userinfo is about another user')
      return body as User
    } catch (e) {
      throw this.#fail(e)
    }
  }

  /**
   * The current session (user, access token expiry, scopes), or null. No network call.
   *
   * @example
   * const s = await auth.getSession()
   * if (s) expiry.textContent = new Date(s.expiresAt).toLocaleTimeString()
   */
  async getSession(): Promise<Session | null> {
    const t = this.#load()
    return t ? { user: t.user, expiresAt: t.expiresAt, scope: t.scope } : null
  }

  /**
   * Whether there is a usable session: a valid access token, or a refresh token to get one.
   *
   * @example
   * if (!(await auth.isAuthenticated())) await auth.signIn()
   */
  async isAuthenticated(): Promise<boolean> {
    const t = this.#load()
    return !!t && (!!t.refresh || Date.now() < t.expiresAt)
  }

  /**
   * Signs out: revokes the refresh token, forgets the tokens (here and in tabs sharing them), and sends
   * the browser to the provider's logout endpoint, which ends the provider session and comes back to
   * `returnTo`. The id_token never goes in a URL: on the provider's own origin it is POSTed as
   * `id_token_hint` (signed out at once; a strict Content-Security-Policy needs `form-action 'self'`);
   * from another origin the browser goes there with the client_id, and the provider asks the user to confirm.
   *
   * @example
   * logoutButton.onclick = () => auth.signOut({ returnTo: 'https://app.example.com/' })
   */
  async signOut(options: SignOutOptions = {}): Promise<void> {
    const t = this.#load()
    let d: Discovery | undefined
    let failure: unknown
    try {
      d = await this.#config()
    } catch (e) {
      failure = e // sign out here all the same
    }
    if (t?.refresh && d?.revocation_endpoint) {
      await send(d.revocation_endpoint, {
        method: 'POST',
        body: new URLSearchParams({ token: t.refresh, token_type_hint: 'refresh_token', client_id: this.#clientId }),
      }).catch(() => {}) // best effort: the tokens are forgotten here anyway
    }
    this.#save()
    if (t) {
      if (t.refresh) this.#post({ t: 'o', r: t.refresh })
      this.#emit('signedOut', undefined)
    }
    if (options.redirect === false) return
    if (!d) throw this.#fail(failure)
    const loc = browser()
    const params = { client_id: this.#clientId, post_logout_redirect_uri: options.returnTo ?? this.#postLogoutRedirectUri }
    const end = d.end_session_endpoint
    if (end && t?.idToken && new URL(end).origin === loc.origin) {
      // POSTed, so that the id_token stays out of URLs; a valid hint lets the provider sign out without
      // asking. Only to its own origin: a cross-site POST would not carry the provider's SameSite
      // session cookie, and the provider session would survive. Elsewhere the provider asks the user.
      const doc = document
      const form = doc.createElement('form')
      form.method = 'post'
      form.action = end
      for (const [name, value] of Object.entries({ ...params, id_token_hint: t.idToken })) {
        if (value) form.append(Object.assign(doc.createElement('input'), { type: 'hidden', name, value }))
      }
      doc.body.append(form)
      form.submit()
    } else if (end || params.post_logout_redirect_uri) {
      loc.assign(end ? withParams(end, params) : params.post_logout_redirect_uri!)
    }
  }

  /**
   * Listens to `signedIn`, `signedOut`, `tokenRefreshed` or `error`; returns the function that stops listening.
   *
   * @example
   * const off = auth.on('signedOut', () => render(null))
   * off()
   */
  on<E extends keyof AuthEvents>(event: E, listener: (payload: AuthEvents[E]) => void): () => void {
    if (!events.includes(event) || typeof listener !== 'function') configError(`on(): unknown event ${event as string}`)
    const set = (this.#listeners[event] ||= new Set())
    set.add(listener)
    return () => void set.delete(listener)
  }

  #emit<E extends keyof AuthEvents>(event: E, payload: AuthEvents[E]): void {
    for (const l of [...(this.#listeners[event] || [])]) {
      try {
        l(payload)
      } catch (e) {
        setTimeout(() => {
          throw e // a listener's bug is reported, but does not break the sign-in
        })
      }
    }
  }

  /** Turns anything thrown into an AuthError and emits it once. */
  #fail(e: unknown): AuthError {
    const err =
      e instanceof AuthError
        ? e
        : new AuthError('server_error', 'unexpected: ' + ((e as Error)?.message ?? String(e)), undefined, undefined, e)
    if (!this.#emitted.has(err)) {
      this.#emitted.add(err)
      this.#emit('error', err)
    }
    return err
  }

  #load(): Tokens | undefined {
    const t = readJson<Tokens>(this.#store, this.#key)
    if (!t || typeof t.access !== 'string' || !t.user) return undefined
    this.#known = t.refresh // with shared (local) storage another tab may have written it
    return t
  }

  /** Keeps t (undefined forgets); a store that refuses (quota) is replaced by memory for this page. */
  #save(t?: Tokens): void {
    this.#known = t?.refresh
    if (!writeJson(this.#store, this.#key, t)) writeJson((this.#store = memoryStore()), this.#key, t)
  }

  #transactions(): Record<string, Transaction> {
    const stored = readJson<Record<string, Transaction>>(this.#transactionStore, this.#key + ':tx')
    const txs: Record<string, Transaction> = {}
    if (typeof stored === 'object') for (const [k, tx] of Object.entries(stored)) if (Date.now() - tx?.created < transactionTTL) txs[k] = tx
    return txs
  }

  /** The discovery document, fetched once; a failure is not cached. */
  #config(): Promise<Discovery> {
    return (this.#discovery ||= (async () => {
      const url = this.#issuer + '/.well-known/openid-configuration'
      try {
        const [res, d] = await send(url)
        if (!res.ok) throw Error(`it answered ${res.status}`)
        if (typeof d.issuer !== 'string' || d.issuer.replace(/\/+$/, '') !== this.#issuer) {
          throw Error(`its issuer ${d.issuer} is not baseUrl`)
        }
        if (!d.authorization_endpoint || !d.token_endpoint || !d.jwks_uri) throw Error('it lacks endpoints')
        return d as Discovery
      } catch (e) {
        this.#discovery = undefined
        throw new AuthError('discovery_failed', `could not use ${url}: ${(e as Error).message}`, undefined, undefined, e)
      }
    })())
  }

  /** The provider's signing keys, cached; refetched when an id_token names an unknown key. */
  #keys = (refetch: boolean): Promise<JsonWebKey[]> => {
    if (refetch || !this.#jwks) {
      this.#jwks = this.#config().then(async (d) => {
        const [res, body] = await send(d.jwks_uri)
        if (!res.ok || !Array.isArray(body.keys)) throw new AuthError('invalid_id_token', `no keys at ${d.jwks_uri}`)
        return body.keys as JsonWebKey[]
      })
      this.#jwks.catch(() => (this.#jwks = undefined))
    }
    return this.#jwks
  }

  async #tokenRequest(d: Discovery, params: Record<string, string>): Promise<Record<string, any>> {
    const [res, body] = await send(d.token_endpoint, {
      method: 'POST',
      body: new URLSearchParams({ ...params, client_id: this.#clientId }),
    })
    if (!res.ok || typeof body.access_token !== 'string') {
      throw providerError(body.error, body.error_description, `the token endpoint answered ${res.status}`)
    }
    return body
  }

  /** Validates a token response (its id_token against nonce, or against the previous one after a refresh). */
  async #accept(d: Discovery, res: Record<string, any>, nonce?: string, prev?: Tokens): Promise<Tokens> {
    const now = Date.now()
    const ttl = res.expires_in > 0 ? +res.expires_in : 300
    const user = res.id_token
      ? await verifyIdToken(
          res.id_token,
          { issuer: d.issuer, clientId: this.#clientId, nonce, previous: prev?.user, skewSeconds: this.#skew, keys: this.#keys },
          now,
        )
      : prev?.user
    if (!user) throw new AuthError('invalid_id_token', 'invalid id_token: the token response has none')
    return {
      access: res.access_token,
      refresh: res.refresh_token || prev?.refresh,
      idToken: res.id_token || prev?.idToken,
      scope: res.scope || prev?.scope || this.#scope,
      expiresAt: now + ttl * 1000,
      refreshAt: now + Math.max(ttl - this.#leeway, ttl / 2) * 1000,
      user,
    }
  }

  /** One refresh per tab at a time; across tabs, Web Locks where present, else the channel's election. */
  #refresh(): Promise<Tokens> {
    return (this.#refreshing ||= (async () => {
      try {
        const locks = globalThis.navigator?.locks
        return await (locks ? locks.request(this.#key, () => this.#refreshLocked(false)) : this.#refreshLocked(true))
      } catch (e) {
        throw this.#fail(e)
      } finally {
        this.#refreshing = undefined
      }
    })())
  }

  async #refreshLocked(elect: boolean): Promise<Tokens> {
    let t = this.#load()
    if (t?.refresh && Date.now() >= t.refreshAt && this.#busy.has(t.refresh)) {
      // Another tab is rotating this refresh token: its result arrives on the channel.
      await this.#waitFor(t.refresh)
      t = this.#load()
    }
    if (!t) throw new AuthError('login_required', signedOutMessage)
    if (Date.now() < t.refreshAt) return t
    const r = t.refresh
    if (!r) {
      if (Date.now() < t.expiresAt) return t
      this.#save()
      this.#emit('signedOut', undefined)
      throw new AuthError('login_required', 'the session expired (no refresh token)')
    }
    // Said before the request, so that it reaches other tabs long before this tab releases the lock.
    this.#post({ t: 'b', r, i: this.#id })
    if (elect && this.#channel) {
      // Without Web Locks two tabs may get here at once: the lowest id refreshes, the others wait for it.
      await new Promise((resolve) => setTimeout(resolve, 50))
      if ((this.#busy.get(r) ?? 2) < this.#id) return this.#refreshLocked(true)
    }
    try {
      const d = await this.#config()
      t = await this.#accept(d, await this.#tokenRequest(d, { grant_type: 'refresh_token', refresh_token: r }), undefined, t)
    } catch (e) {
      const code = (e as AuthError).code
      if (code === 'invalid_grant' || code === 'invalid_id_token') {
        // The refresh token is dead (or the provider is not to be believed): end the session everywhere.
        this.#post({ t: 'o', r })
        this.#save()
        this.#emit('signedOut', undefined)
      } else {
        this.#post({ t: 'x', r })
      }
      throw e
    }
    this.#save(t)
    this.#post({ t: 'r', r, s: t })
    this.#emit('tokenRefreshed', { expiresAt: t.expiresAt })
    return t
  }

  #waitFor(r: string): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#wake.delete(r)
        this.#busy.delete(r)
        resolve()
      }
      const timer = setTimeout(done, 10_000) // the other tab died mid-refresh: try ourselves
      this.#wake.set(r, done)
    })
  }

  #post(m: Message): void {
    this.#channel?.postMessage(m)
  }

  #receive(m: Message): void {
    if (m.t === 'b') {
      this.#busy.set(m.r, Math.min(this.#busy.get(m.r) ?? 2, m.i))
      return
    }
    this.#busy.delete(m.r)
    if (this.#known === m.r) {
      if (m.t === 'r') {
        this.#save(m.s)
        this.#emit('tokenRefreshed', { expiresAt: m.s.expiresAt })
      } else if (m.t === 'o') {
        this.#save()
        this.#emit('signedOut', undefined)
      }
    }
    this.#wake.get(m.r)?.()
  }
}
