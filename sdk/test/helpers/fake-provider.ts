// An in-process OpenID provider for unit tests: discovery, JWKS, authorization codes with PKCE S256,
// refresh tokens with rotation and reuse detection, revocation, userinfo, ES256 id_tokens signed with
// Web Crypto. It answers the SDK's fetch calls; the browser tests use the real auth service instead.

const enc = new TextEncoder()
export const b64url = (b: Uint8Array | string) =>
  Buffer.from(typeof b === 'string' ? enc.encode(b) : b).toString('base64url')
const random = () => b64url(crypto.getRandomValues(new Uint8Array(24)))

export interface Call {
  method: string
  url: string
  body: string
  headers: Record<string, string>
}

interface Grant {
  sub: string
  nonce?: string
  family: string
}

export class FakeProvider {
  issuer = 'http://127.0.0.1:8080'
  clientId = 'demo'
  redirectUri = 'http://127.0.0.1:8080/demo/callback'
  user = { sub: 'user-1', email: 'demo@example.com', name: 'Demo User' }
  /** expires_in of issued access tokens. */
  expiresIn = 3600
  /** Milliseconds the token endpoint waits before answering (to overlap concurrent refreshes). */
  tokenDelay = 0
  /** Every request the SDK made. */
  calls: Call[] = []
  /** Changes the next token endpoint answer: 'network' rejects like fetch, a number is an HTTP status. */
  failToken?: 'network' | number
  /** Changes the discovery document, or fails it. */
  discovery: Record<string, unknown> | 'network' | number = {}
  /** Changes the claims or header of the next id_tokens. */
  idTokenClaims: Record<string, unknown> = {}
  idTokenHeader: Record<string, unknown> = {}
  /** Signs id_tokens with a key that is not in the JWKS. */
  signWithUnknownKey = false
  /** Omits refresh_token / id_token from token responses. */
  omitRefreshToken = false
  omitIdToken = false

  codes = new Map<string, Grant & { challenge: string; redirectUri: string; clientId: string; used: boolean }>()
  refreshTokens = new Map<string, Grant & { used: boolean }>()
  accessTokens = new Map<string, Grant>()
  revokedFamilies = new Set<string>()
  refreshCount = 0
  reuseDetected = 0

  private keys!: CryptoKeyPair
  private otherKeys!: CryptoKeyPair
  private jwk!: JsonWebKey

  static async create(): Promise<FakeProvider> {
    const p = new FakeProvider()
    const alg = { name: 'ECDSA', namedCurve: 'P-256' }
    p.keys = (await crypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair
    p.otherKeys = (await crypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair
    p.jwk = { ...(await crypto.subtle.exportKey('jwk', p.keys.publicKey)), kid: 'k1', use: 'sig', alg: 'ES256' } as JsonWebKey
    return p
  }

  /** What the hosted page does on a successful sign-in: validates the request, redirects with a code. */
  authorize(authorizeUrl: string, opts: { sub?: string } = {}): string {
    const q = new URL(authorizeUrl).searchParams
    if (q.get('response_type') !== 'code') throw new Error('response_type')
    if (q.get('client_id') !== this.clientId) throw new Error('client_id')
    if (q.get('redirect_uri') !== this.redirectUri) throw new Error('redirect_uri')
    if (q.get('code_challenge_method') !== 'S256') throw new Error('code_challenge_method')
    const code = random()
    this.codes.set(code, {
      sub: opts.sub ?? this.user.sub,
      nonce: q.get('nonce') ?? undefined,
      challenge: q.get('code_challenge')!,
      redirectUri: q.get('redirect_uri')!,
      clientId: q.get('client_id')!,
      used: false,
      family: random(),
    })
    const back = new URL(q.get('redirect_uri')!)
    back.searchParams.set('code', code)
    back.searchParams.set('state', q.get('state')!)
    return back.href
  }

  /** What the hosted page does when the sign-in is refused. */
  deny(authorizeUrl: string, error = 'access_denied', description = 'The user refused'): string {
    const q = new URL(authorizeUrl).searchParams
    const back = new URL(q.get('redirect_uri')!)
    back.searchParams.set('error', error)
    back.searchParams.set('error_description', description)
    back.searchParams.set('state', q.get('state')!)
    return back.href
  }

  async idToken(grant: Grant): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    const header = { alg: 'ES256', typ: 'JWT', kid: 'k1', ...this.idTokenHeader }
    const claims: Record<string, unknown> = {
      iss: this.issuer,
      aud: this.clientId,
      sub: grant.sub,
      iat: now,
      exp: now + 3600,
      ...(grant.nonce ? { nonce: grant.nonce } : {}),
      ...(grant.sub === this.user.sub ? { email: this.user.email, name: this.user.name } : {}),
      ...this.idTokenClaims,
    }
    const input = b64url(JSON.stringify(header)) + '.' + b64url(JSON.stringify(claims))
    const key = this.signWithUnknownKey ? this.otherKeys.privateKey : this.keys.privateKey
    const sig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key, enc.encode(input))
    return input + '.' + b64url(new Uint8Array(sig))
  }

  private async issue(grant: Grant) {
    const access = random()
    const refresh = random()
    this.accessTokens.set(access, grant)
    this.refreshTokens.set(refresh, { ...grant, used: false })
    return json(200, {
      access_token: access,
      token_type: 'bearer',
      expires_in: this.expiresIn,
      scope: 'openid profile email offline_access',
      ...(this.omitRefreshToken ? {} : { refresh_token: refresh }),
      ...(this.omitIdToken ? {} : { id_token: await this.idToken(grant) }),
    })
  }

  /** The SDK's fetch. */
  fetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(String(input))
    const method = init.method ?? 'GET'
    const body = init.body === undefined ? '' : String(init.body)
    const headers = Object.fromEntries(new Headers(init.headers).entries())
    this.calls.push({ method, url: url.href, body, headers })
    if (init.credentials !== 'omit') throw new Error('the SDK must not send cookies: credentials ' + init.credentials)
    const form = new URLSearchParams(body)
    switch (`${method} ${url.pathname}`) {
      case 'GET /.well-known/openid-configuration': {
        const d = this.discovery
        if (d === 'network') throw new TypeError('Failed to fetch')
        if (typeof d === 'number') return new Response('<html>oops</html>', { status: d })
        return json(200, {
          issuer: this.issuer,
          authorization_endpoint: this.issuer + '/oauth2/authorize',
          token_endpoint: this.issuer + '/oauth2/token',
          userinfo_endpoint: this.issuer + '/oauth2/userinfo',
          revocation_endpoint: this.issuer + '/oauth2/revoke',
          end_session_endpoint: this.issuer + '/oauth2/logout',
          jwks_uri: this.issuer + '/.well-known/jwks.json',
          code_challenge_methods_supported: ['S256'],
          ...d,
        })
      }
      case 'GET /.well-known/jwks.json':
        return json(200, { keys: [this.jwk] })
      case 'POST /oauth2/token': {
        const fail = this.failToken
        this.failToken = undefined
        if (this.tokenDelay) await new Promise((r) => setTimeout(r, this.tokenDelay))
        if (fail === 'network') throw new TypeError('Failed to fetch')
        if (typeof fail === 'number') return new Response('<html>upstream error</html>', { status: fail })
        if (form.get('client_id') !== this.clientId) return json(401, { error: 'invalid_client' })
        if (form.get('grant_type') === 'authorization_code') {
          const c = this.codes.get(form.get('code') ?? '')
          if (!c || c.used) return json(400, { error: 'invalid_grant', error_description: 'The code is invalid or was used' })
          c.used = true
          const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', enc.encode(form.get('code_verifier') ?? '')))
          if (b64url(digest) !== c.challenge) return json(400, { error: 'invalid_grant', error_description: 'PKCE verification failed' })
          if (form.get('redirect_uri') !== c.redirectUri) return json(400, { error: 'invalid_grant', error_description: 'redirect_uri' })
          return this.issue(c)
        }
        if (form.get('grant_type') === 'refresh_token') {
          this.refreshCount++
          const r = this.refreshTokens.get(form.get('refresh_token') ?? '')
          if (!r || this.revokedFamilies.has(r.family)) return json(400, { error: 'invalid_grant', error_description: 'The refresh token is invalid' })
          if (r.used) {
            this.reuseDetected++
            this.revokedFamilies.add(r.family)
            return json(400, { error: 'invalid_grant', error_description: 'The refresh token was reused' })
          }
          r.used = true
          return this.issue({ sub: r.sub, nonce: r.nonce, family: r.family })
        }
        return json(400, { error: 'unsupported_grant_type' })
      }
      case 'POST /oauth2/revoke': {
        const r = this.refreshTokens.get(form.get('token') ?? '')
        if (r) this.revokedFamilies.add(r.family)
        return new Response(null, { status: 200 })
      }
      case 'GET /oauth2/userinfo': {
        const a = this.accessTokens.get((headers.authorization ?? '').replace(/^Bearer /, ''))
        if (!a || this.revokedFamilies.has(a.family)) return json(401, { error: 'invalid_token' })
        return json(200, { sub: a.sub, email: this.user.email, name: this.user.name })
      }
    }
    return json(404, { error: 'not_found' })
  }

  /** Calls to one endpoint path. */
  callsTo(path: string) {
    return this.calls.filter((c) => new URL(c.url).pathname === path)
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
}
