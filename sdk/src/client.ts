// ServiceAuthClient, the public class, and the state of one client: its tokens, what it knows of the
// provider, its side of the tabs' protocol (tabs.ts), and its listeners. The stateless parts live in
// modules of their own: options.ts (checks), redirect.ts (both legs of the redirect), provider.ts (HTTP),
// jwt.ts (id_token checks), storage.ts, events.ts, errors.ts. (Classes of their own for the state would
// cost the script-tag build about 150 bytes gzipped, more than its 5 KB budget leaves.)
import { subtle } from './encoding.js'
import { AuthError, configError, providerError } from './errors.js'
import { type AuthEvents, events } from './events.js'
import { type User, verifyIdToken } from './jwt.js'
import {
  type RedirectResult,
  type ServiceAuthClientOptions,
  type Session,
  type Settings,
  type SignInOptions,
  type SignOutOptions,
  settings,
} from './options.js'
import { type Discovery, send, withParams } from './provider.js'
import { type KeyValueStore, memoryStore, readJson, webStore, writeJson } from './storage.js'
import { authorizationRequest, browser, readResponse, takeTransaction, withoutResponse } from './redirect.js'
import { Ended, Failed, type Message, Refreshing, Rotated } from './tabs.js'
import type { Tokens } from './tokens.js'

const signedOutMessage = 'not signed in: call signIn()'

/**
 * Sign-in with the service for a browser app: OAuth 2.0 authorization code with PKCE (S256) and OpenID
 * Connect, refresh-token rotation safe across tabs, no iframes, no third-party cookies. Importing it has
 * no side effects, and constructing it touches no browser API outside a browser (server-side rendering).
 * Create one per app (at module level, or once in a React provider), not one per component or effect.
 *
 * @example
 * const auth = new ServiceAuthClient({ baseUrl: 'http://localhost:8080', clientId: 'demo',
 *   redirectUri: 'http://localhost:8080/demo/callback' })
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

  readonly #s: Settings
  #discovery?: Promise<Discovery>
  #jwks?: Promise<JsonWebKey[]>
  /** Where the tokens are kept: the storage the options chose, or memory when that refuses. */
  #store: KeyValueStore
  /** The refresh token this tab holds: news from other tabs about it concern this tab. */
  #held?: string
  /** The sign-ins in progress of this tab: they must survive the redirect, whatever the token storage is. */
  readonly #transactions = webStore('session') || memoryStore()
  readonly #listeners: Record<string, Set<(payload: any) => void>> = {}
  readonly #emitted = new WeakSet<AuthError>()
  #channel?: BroadcastChannel
  readonly #busy = new Map<string, number>()
  readonly #wake = new Map<string, () => void>()
  readonly #id = Math.random()
  #refreshing?: Promise<Tokens>
  /** The last callback handled: its URL before and after cleaning, and its outcome. */
  #callback?: [urls: (string | undefined)[], result: Promise<RedirectResult>]

  /** @throws {AuthError} `configuration_error` when an option is missing or wrong. */
  constructor(options: ServiceAuthClientOptions) {
    const s = (this.#s = settings(options))
    this.#store = (s.storage !== 'memory' && webStore(s.storage)) || memoryStore()
    this.#load()
    // No document: server-side rendering or a worker, no tabs to talk to.
    if (globalThis.document && typeof BroadcastChannel === 'function') {
      this.#channel = new BroadcastChannel(s.key)
      this.#channel.onmessage = (e: MessageEvent<Message>) => this.#receive(e.data)
    }
    // Timers stall in background tabs, so refresh lazily: on demand, and when the tab comes back.
    const doc = globalThis.document
    doc?.addEventListener('visibilitychange', () => {
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
      loc.assign(await authorizationRequest(this.#s, d.authorization_endpoint, this.#transactions, options))
    } catch (e) {
      throw this.#fail(e)
    }
  }

  /**
   * Completes a sign-in on the redirect URI: checks the state (once), exchanges the code with the PKCE
   * verifier, validates the id_token, keeps the tokens, and removes the response from the address bar.
   * Calling it again for the same URL (React's StrictMode runs effects twice in development) gets the
   * first call's result, even though the first call has already cleaned the address bar.
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
  handleRedirectCallback(url?: string): Promise<RedirectResult> {
    const href = url ?? globalThis.location?.href
    const last = this.#callback
    if (href && last?.[0].includes(href)) return last[1]
    const result = this.#completeSignIn(url)
    this.#callback = [[href, withoutResponse(href)], result]
    return result
  }

  async #completeSignIn(url?: string): Promise<RedirectResult> {
    try {
      const p = readResponse(url ?? browser().href)
      if (!p.state) {
        if (p.code || p.error) throw new AuthError('state_mismatch', 'no state in the URL')
        throw new AuthError('missing_code', 'no code in the URL')
      }
      const tx = takeTransaction(this.#transactions, this.#s.key + ':tx', p.state)
      if (p.iss !== undefined && p.iss !== (await this.#config()).issuer) {
        throw new AuthError('state_mismatch', `the response is from issuer ${p.iss}`)
      }
      if (p.error) throw providerError(p.error, p.error_description, 'the sign-in failed')
      if (!p.code) throw new AuthError('missing_code', 'no code in the URL')
      const t = await this.#grant(
        { grant_type: 'authorization_code', code: p.code, redirect_uri: tx.redirectUri, code_verifier: tx.verifier },
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
        body: new URLSearchParams({ token: t.refresh, token_type_hint: 'refresh_token', client_id: this.#s.clientId }),
      }).catch(() => {}) // best effort: the tokens are forgotten here anyway
    }
    if (t) this.#end(t.refresh)
    else this.#save() // unreadable leftovers too
    if (options.redirect === false) return
    if (!d) throw this.#fail(failure)
    const loc = browser()
    const params = { client_id: this.#s.clientId, post_logout_redirect_uri: options.returnTo ?? this.#s.postLogoutRedirectUri }
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

  /** Ends the session here, and with r in the tabs that hold the same refresh token. */
  #end(r?: string): void {
    this.#save()
    if (r) this.#post({ t: Ended, r })
    this.#emit('signedOut', undefined)
  }

  /** One refresh per tab at a time; across tabs, Web Locks where present, else the tabs' election. */
  #refresh(): Promise<Tokens> {
    return (this.#refreshing ||= (async () => {
      try {
        const locks = globalThis.navigator?.locks
        return await (locks ? locks.request(this.#s.key, () => this.#refreshLocked(false)) : this.#refreshLocked(true))
      } catch (e) {
        throw this.#fail(e)
      } finally {
        this.#refreshing = undefined
      }
    })())
  }

  async #refreshLocked(elect: boolean): Promise<Tokens> {
    let t = this.#load()
    // Another tab is rotating this refresh token: its result arrives as news.
    if (t?.refresh && Date.now() >= t.refreshAt && (await this.#waited(t.refresh))) t = this.#load()
    if (!t) throw new AuthError('login_required', signedOutMessage)
    if (Date.now() < t.refreshAt) return t
    const r = t.refresh
    if (!r) {
      if (Date.now() < t.expiresAt) return t
      this.#end()
      throw new AuthError('login_required', 'the session expired (no refresh token)')
    }
    // Said before the request, so that it reaches other tabs long before this tab releases the lock.
    this.#post({ t: Refreshing, r, i: this.#id })
    if (elect && this.#channel) {
      // Without Web Locks two tabs may get here at once: the lowest id refreshes, the others wait for it.
      await new Promise((resolve) => setTimeout(resolve, 50))
      if ((this.#busy.get(r) ?? 2) < this.#id) return this.#refreshLocked(true)
    }
    try {
      t = await this.#grant({ grant_type: 'refresh_token', refresh_token: r }, undefined, t)
    } catch (e) {
      const code = (e as AuthError).code
      if (code === 'invalid_grant' || code === 'invalid_id_token') {
        // The refresh token is dead (or the provider is not to be believed): end the session everywhere.
        this.#end(r)
      } else {
        this.#post({ t: Failed, r })
      }
      throw e
    }
    this.#save(t)
    this.#post({ t: Rotated, r, s: t })
    this.#emit('tokenRefreshed', { expiresAt: t.expiresAt })
    return t
  }

  // ---- tokens ----

  #load(): Tokens | undefined {
    const t = readJson<Tokens>(this.#store, this.#s.key)
    if (!t || typeof t.access !== 'string' || !t.user) return undefined
    this.#held = t.refresh // with shared (local) storage another tab may have written it
    return t
  }

  /** Keeps t (undefined forgets); a store that refuses (quota) is replaced by memory for this page. */
  #save(t?: Tokens): void {
    this.#held = t?.refresh
    if (!writeJson(this.#store, this.#s.key, t)) writeJson((this.#store = memoryStore()), this.#s.key, t)
  }

  // ---- the provider ----

  /** The discovery document, fetched once; a failure is not cached. */
  #config(): Promise<Discovery> {
    return (this.#discovery ||= (async () => {
      const url = this.#s.issuer + '/.well-known/openid-configuration'
      try {
        const [res, d] = await send(url)
        if (!res.ok) throw Error(`it answered ${res.status}`)
        if (typeof d.issuer !== 'string' || d.issuer.replace(/\/+$/, '') !== this.#s.issuer) {
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

  /**
   * Asks the token endpoint for tokens and validates the answer: its id_token against the nonce of the
   * sign-in, or after a refresh against the tokens it replaces (prev).
   */
  async #grant(params: Record<string, string>, nonce?: string, prev?: Tokens): Promise<Tokens> {
    const s = this.#s
    const d = await this.#config()
    const [r, res] = await send(d.token_endpoint, {
      method: 'POST',
      body: new URLSearchParams({ ...params, client_id: s.clientId }),
    })
    if (!r.ok || typeof res.access_token !== 'string') {
      throw providerError(res.error, res.error_description, `the token endpoint answered ${r.status}`)
    }
    const now = Date.now()
    const ttl = res.expires_in > 0 ? +res.expires_in : 300
    const user = res.id_token
      ? await verifyIdToken(
          res.id_token,
          { issuer: d.issuer, clientId: s.clientId, nonce, previous: prev?.user, skewSeconds: s.clockSkewSeconds, keys: this.#keys },
          now,
        )
      : prev?.user
    if (!user) throw new AuthError('invalid_id_token', 'invalid id_token: the token response has none')
    return {
      access: res.access_token,
      refresh: res.refresh_token || prev?.refresh,
      idToken: res.id_token || prev?.idToken,
      scope: res.scope || prev?.scope || s.scope,
      expiresAt: now + ttl * 1000,
      refreshAt: now + Math.max(ttl - s.refreshLeewaySeconds, ttl / 2) * 1000,
      user,
    }
  }

  // ---- the tabs' protocol (tabs.ts) ----

  #post(m: Message): void {
    this.#channel?.postMessage(m)
  }

  #receive(m: Message): void {
    if (m.t === Refreshing) {
      this.#busy.set(m.r, Math.min(this.#busy.get(m.r) ?? 2, m.i))
      return
    }
    this.#busy.delete(m.r)
    if (this.#held === m.r) {
      // news about the refresh token this tab holds
      if (m.t === Rotated) {
        this.#save(m.s)
        this.#emit('tokenRefreshed', { expiresAt: m.s.expiresAt })
      } else if (m.t === Ended) {
        this.#end()
      }
    }
    this.#wake.get(m.r)?.()
  }

  /** When another tab is refreshing with r, resolves true once it is done (or after 10 s: that tab may
   * have died mid-refresh); else false at once. */
  async #waited(r: string): Promise<boolean> {
    return (
      this.#busy.has(r) &&
      new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer)
          this.#wake.delete(r)
          this.#busy.delete(r)
          resolve(true)
        }
        const timer = setTimeout(done, 10_000)
        this.#wake.set(r, done)
      })
    )
  }

  // ---- events ----

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
}
