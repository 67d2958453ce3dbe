// ServiceAuthClient — https://github.com/formsservice/formsservice/tree/main/sdk (generated: npm run build)

// src/errors.ts
var AuthError = class extends Error {
  /** A stable, machine-readable code; see {@link AuthErrorCode}. */
  code;
  /** The provider's `error_description`, when the provider answered one. */
  description;
  /** The provider's OAuth `error` value (e.g. `invalid_grant`), when the provider answered one. */
  error;
  constructor(code, message, description, error, cause) {
    super(message, cause === void 0 ? void 0 : { cause });
    this.name = "AuthError";
    this.code = code;
    this.description = description;
    this.error = error;
  }
};
function codeOf(e) {
  if (e === "access_denied" || e === "invalid_grant") return e;
  if (/_required$/.test(e)) return "login_required";
  if (/^(invalid_(client|scope|request)|unauthorized_client|unsupported_)/.test(e)) return "configuration_error";
  return "server_error";
}
function providerError(error, description, fallback) {
  const e = typeof error === "string" ? error : void 0;
  const d = typeof description === "string" ? description : void 0;
  return new AuthError(
    e ? codeOf(e) : "server_error",
    d || (e ? `the provider answered ${e}` : fallback),
    d,
    e
  );
}
function configError(message) {
  throw new AuthError("configuration_error", "ServiceAuthClient: " + message);
}

// src/encoding.ts
function b64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function fromB64url(s) {
  return Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
}
function subtle() {
  const s = globalThis.crypto?.subtle;
  if (!s) {
    throw new AuthError(
      "insecure_context",
      "crypto.subtle is missing: serve the page over https or from localhost"
    );
  }
  return s;
}
function randomString(n = 32) {
  subtle();
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}
async function pkceChallenge(verifier) {
  return b64url(new Uint8Array(await subtle().digest("SHA-256", new TextEncoder().encode(verifier))));
}

// src/events.ts
var events = ["signedIn", "signedOut", "tokenRefreshed", "error"];

// src/jwt.ts
var ecdsa = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
var invalid = (why, cause) => new AuthError("invalid_id_token", "invalid id_token: " + why, void 0, void 0, cause);
function part(s) {
  const v = JSON.parse(new TextDecoder().decode(fromB64url(s)));
  if (!v || typeof v !== "object") throw 0;
  return v;
}
async function verifyIdToken(token, c, now = Date.now()) {
  const parts = typeof token === "string" ? token.split(".") : [];
  let header, claims;
  try {
    if (parts.length !== 3) throw 0;
    header = part(parts[0]);
    claims = part(parts[1]);
  } catch (e) {
    throw invalid("malformed", e);
  }
  if (header.alg !== "ES256") throw invalid(`unsupported alg ${header.alg}`);
  let ok = false;
  try {
    const data = new TextEncoder().encode(parts[0] + "." + parts[1]);
    const signature = fromB64url(parts[2]);
    for (const refetch of [false, true]) {
      const keys = (await c.keys(refetch)).filter((k) => !header.kid || k.kid === header.kid);
      if (!keys.length && !refetch) continue;
      for (const k of keys) {
        const key = await subtle().importKey("jwk", k, ecdsa, false, ["verify"]).catch(() => void 0);
        if (key && await subtle().verify(ecdsa, key, signature, data)) ok = true;
      }
      break;
    }
  } catch (e) {
    if (e instanceof AuthError) throw e;
    throw invalid("unverifiable", e);
  }
  if (!ok) throw invalid("bad signature");
  const skew = c.skewSeconds * 1e3;
  const aud = claims.aud;
  if (claims.iss !== c.issuer) throw invalid(`iss ${claims.iss}`);
  if (!(Array.isArray(aud) ? aud.includes(c.clientId) : aud === c.clientId)) throw invalid("aud");
  if (claims.azp !== void 0 && claims.azp !== c.clientId) throw invalid("azp");
  if (typeof claims.sub !== "string" || !claims.sub) throw invalid("sub");
  if (typeof claims.exp !== "number" || claims.exp * 1e3 + skew <= now) throw invalid("expired");
  if (typeof claims.iat === "number" && claims.iat * 1e3 - skew > now) throw invalid("iat in the future");
  if (c.previous) {
    if (claims.sub !== c.previous.sub) throw invalid("sub changed");
    if (claims.nonce !== void 0 && claims.nonce !== c.previous.nonce) throw invalid("nonce changed");
  } else if (claims.nonce !== c.nonce) {
    throw invalid("nonce");
  }
  return claims;
}

// src/options.ts
var isLoopback = (h) => h === "localhost" || h.endsWith(".localhost") || h === "[::1]" || /^127(\.\d+){3}$/.test(h);
function checkUrl(name, v) {
  let u;
  try {
    u = new URL(v);
  } catch {
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.hash) {
    configError(`${name} must be an http(s) URL without #fragment, got ${v}`);
  }
  if (u.protocol === "http:" && !isLoopback(u.hostname)) {
    configError(`${name} must use https (http only for localhost), got ${v}`);
  }
  return v;
}
function seconds(name, v, fallback) {
  if (v === void 0) return fallback;
  if (typeof v !== "number" || !(v >= 0) || v === Infinity) configError(`${name} must be a number of seconds >= 0`);
  return v;
}
function settings(options) {
  const o = options || {};
  const issuer = checkUrl("baseUrl", o.baseUrl).replace(/\/+$/, "");
  if (typeof o.clientId !== "string" || !o.clientId) configError("clientId is required");
  checkUrl("redirectUri", o.redirectUri);
  if (o.postLogoutRedirectUri !== void 0) checkUrl("postLogoutRedirectUri", o.postLogoutRedirectUri);
  const scope = o.scope ?? "openid profile email offline_access";
  if (typeof scope !== "string" || !scope.split(" ").includes("openid")) configError("scope must include openid");
  const storage = o.storage ?? "session";
  if (!["memory", "session", "local"].includes(storage)) configError(`storage must be 'memory', 'session' or 'local'`);
  return {
    ...o,
    issuer,
    scope,
    storage,
    refreshLeewaySeconds: seconds("refreshLeewaySeconds", o.refreshLeewaySeconds, 30),
    clockSkewSeconds: seconds("clockSkewSeconds", o.clockSkewSeconds, 120),
    key: "sac:" + o.clientId
  };
}

// src/provider.ts
async function send(url, init) {
  let res;
  try {
    res = await fetch(url, { credentials: "omit", cache: "no-store", ...init });
  } catch (e) {
    throw new AuthError("network_error", `could not reach ${url}`, void 0, void 0, e);
  }
  const body = await res.json().catch(() => 0);
  return [res, body && typeof body === "object" ? body : {}];
}
function withParams(base, params) {
  const u = new URL(base);
  for (const [k, v] of Object.entries(params)) if (v !== void 0) u.searchParams.set(k, v);
  return u.href;
}

// src/storage.ts
function memoryStore() {
  const m = /* @__PURE__ */ new Map();
  return {
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => void m.set(k, v),
    removeItem: (k) => void m.delete(k)
  };
}
function webStore(kind) {
  try {
    const s = globalThis[kind === "local" ? "localStorage" : "sessionStorage"];
    s.getItem("sac");
    return s;
  } catch {
    return void 0;
  }
}
function readJson(s, key) {
  try {
    return JSON.parse(s.getItem(key)) ?? void 0;
  } catch {
    return void 0;
  }
}
function writeJson(s, key, value) {
  try {
    if (value === void 0) s.removeItem(key);
    else s.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false;
  }
}

// src/redirect.ts
var transactionTTL = 36e5;
var responseParams = ["code", "state", "error", "error_description", "error_uri", "iss", "scope", "session_state"];
var browser = () => {
  if (!globalThis.location) configError("this method needs a browser window");
  return globalThis.location;
};
function pending(store, key) {
  const stored = readJson(store, key);
  const txs = {};
  if (typeof stored === "object") {
    for (const [k, tx] of Object.entries(stored)) if (Date.now() - tx?.created < transactionTTL) txs[k] = tx;
  }
  return txs;
}
function takeTransaction(store, key, state) {
  const txs = pending(store, key);
  const tx = txs[state];
  if (!tx) {
    throw Object.keys(txs).length ? new AuthError("state_mismatch", "the response is not for the sign-in started in this tab") : new AuthError(
      "state_not_found",
      "no sign-in was started in this tab for this response (reload, back button, other tab): sign in again"
    );
  }
  delete txs[state];
  writeJson(store, key, txs);
  return tx;
}
async function authorizationRequest(s, endpoint, store, o) {
  const loc = browser();
  const state = randomString();
  const nonce = randomString();
  const verifier = randomString();
  const url = withParams(endpoint, {
    prompt: o.prompt,
    login_hint: o.loginHint,
    ...o.extraParams,
    response_type: "code",
    client_id: s.clientId,
    redirect_uri: s.redirectUri,
    scope: s.scope,
    state,
    nonce,
    code_challenge: await pkceChallenge(verifier),
    code_challenge_method: "S256"
  });
  const tx = {
    verifier,
    nonce,
    returnTo: o.returnTo ?? loc.pathname + loc.search + loc.hash,
    redirectUri: s.redirectUri,
    created: Date.now()
  };
  writeJson(store, s.key + ":tx", { ...pending(store, s.key + ":tx"), [state]: tx });
  return url;
}
function withoutResponse(href) {
  try {
    const u = new URL(href);
    for (const k of responseParams) u.searchParams.delete(k);
    return u.href;
  } catch {
    return void 0;
  }
}
function readResponse(href) {
  let u;
  try {
    u = new URL(href);
  } catch {
    throw new AuthError("missing_code", `not a callback URL: ${href}`);
  }
  if (globalThis.location?.href === u.href) history.replaceState(history.state, "", withoutResponse(u.href));
  return Object.fromEntries(u.searchParams);
}

// src/tabs.ts
var Refreshing = "b";
var Rotated = "r";
var Failed = "x";
var Ended = "o";

// src/client.ts
var signedOutMessage = "not signed in: call signIn()";
var ServiceAuthClient = class {
  /** The error class, also reachable from the global of the script-tag build: `ServiceAuthClient.AuthError`. */
  static AuthError = AuthError;
  #s;
  #discovery;
  #jwks;
  /** Where the tokens are kept: the storage the options chose, or memory when that refuses. */
  #store;
  /** The refresh token this tab holds: news from other tabs about it concern this tab. */
  #held;
  /** The sign-ins in progress of this tab: they must survive the redirect, whatever the token storage is. */
  #transactions = webStore("session") || memoryStore();
  #listeners = {};
  #emitted = /* @__PURE__ */ new WeakSet();
  #channel;
  #busy = /* @__PURE__ */ new Map();
  #wake = /* @__PURE__ */ new Map();
  #id = Math.random();
  #refreshing;
  /** The last callback handled: its URL before and after cleaning, and its outcome. */
  #callback;
  /** @throws {AuthError} `configuration_error` when an option is missing or wrong. */
  constructor(options) {
    const s = this.#s = settings(options);
    this.#store = s.storage !== "memory" && webStore(s.storage) || memoryStore();
    this.#load();
    if (globalThis.document && typeof BroadcastChannel === "function") {
      this.#channel = new BroadcastChannel(s.key);
      this.#channel.onmessage = (e) => this.#receive(e.data);
    }
    const doc = globalThis.document;
    doc?.addEventListener("visibilitychange", () => {
      const t = this.#load();
      if (doc.visibilityState === "visible" && t?.refresh && Date.now() >= t.refreshAt) this.getAccessToken().catch(() => {
      });
    });
  }
  /**
   * Starts a sign-in: creates state, nonce and a PKCE S256 verifier, keeps them for the callback, and
   * sends the browser to the provider's sign-in page. The promise settles only on failure.
   *
   * @example
   * loginButton.onclick = () => auth.signIn({ returnTo: location.pathname })
   * @throws {AuthError} `insecure_context`, `discovery_failed`, `configuration_error`.
   */
  async signIn(options = {}) {
    try {
      const loc = browser();
      subtle();
      const d = await this.#config();
      loc.assign(await authorizationRequest(this.#s, d.authorization_endpoint, this.#transactions, options));
    } catch (e) {
      throw this.#fail(e);
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
  handleRedirectCallback(url) {
    const href = url ?? globalThis.location?.href;
    const last = this.#callback;
    if (href && last?.[0].includes(href)) return last[1];
    const result = this.#completeSignIn(url);
    this.#callback = [[href, withoutResponse(href)], result];
    return result;
  }
  async #completeSignIn(url) {
    try {
      const p = readResponse(url ?? browser().href);
      if (!p.state) {
        if (p.code || p.error) throw new AuthError("state_mismatch", "no state in the URL");
        throw new AuthError("missing_code", "no code in the URL");
      }
      const tx = takeTransaction(this.#transactions, this.#s.key + ":tx", p.state);
      if (p.iss !== void 0 && p.iss !== (await this.#config()).issuer) {
        throw new AuthError("state_mismatch", `the response is from issuer ${p.iss}`);
      }
      if (p.error) throw providerError(p.error, p.error_description, "the sign-in failed");
      if (!p.code) throw new AuthError("missing_code", "no code in the URL");
      const t = await this.#grant(
        { grant_type: "authorization_code", code: p.code, redirect_uri: tx.redirectUri, code_verifier: tx.verifier },
        tx.nonce
      );
      this.#save(t);
      this.#emit("signedIn", t.user);
      return { returnTo: tx.returnTo, user: t.user };
    } catch (e) {
      throw this.#fail(e);
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
  async getAccessToken() {
    const t = this.#load();
    if (!t) throw new AuthError("login_required", signedOutMessage);
    return Date.now() < t.refreshAt ? t.access : (await this.#refresh()).access;
  }
  /**
   * The signed-in user (the id_token's claims), or null. No network call.
   *
   * @example
   * const user = await auth.getUser()
   * greeting.textContent = user ? `Hello ${user.email}` : 'Signed out'
   */
  async getUser() {
    return this.#load()?.user ?? null;
  }
  /**
   * The user's claims from the provider's userinfo endpoint, fetched with the access token.
   *
   * @example
   * const { email } = await auth.fetchUserInfo()
   */
  async fetchUserInfo() {
    try {
      const d = await this.#config();
      if (!d.userinfo_endpoint) configError("the provider has no userinfo endpoint");
      const [res, body] = await send(d.userinfo_endpoint, {
        headers: { authorization: "Bearer " + await this.getAccessToken() }
      });
      if (res.status === 401) throw new AuthError("login_required", "the provider refused the access token");
      if (!res.ok) throw providerError(body.error, body.error_description, `userinfo answered ${res.status}`);
      if (body.sub !== this.#load()?.user.sub) throw new AuthError("invalid_id_token", "userinfo is about another user");
      return body;
    } catch (e) {
      throw this.#fail(e);
    }
  }
  /**
   * The current session (user, access token expiry, scopes), or null. No network call.
   *
   * @example
   * const s = await auth.getSession()
   * if (s) expiry.textContent = new Date(s.expiresAt).toLocaleTimeString()
   */
  async getSession() {
    const t = this.#load();
    return t ? { user: t.user, expiresAt: t.expiresAt, scope: t.scope } : null;
  }
  /**
   * Whether there is a usable session: a valid access token, or a refresh token to get one.
   *
   * @example
   * if (!(await auth.isAuthenticated())) await auth.signIn()
   */
  async isAuthenticated() {
    const t = this.#load();
    return !!t && (!!t.refresh || Date.now() < t.expiresAt);
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
  async signOut(options = {}) {
    const t = this.#load();
    let d;
    let failure;
    try {
      d = await this.#config();
    } catch (e) {
      failure = e;
    }
    if (t?.refresh && d?.revocation_endpoint) {
      await send(d.revocation_endpoint, {
        method: "POST",
        body: new URLSearchParams({ token: t.refresh, token_type_hint: "refresh_token", client_id: this.#s.clientId })
      }).catch(() => {
      });
    }
    if (t) this.#end(t.refresh);
    else this.#save();
    if (options.redirect === false) return;
    if (!d) throw this.#fail(failure);
    const loc = browser();
    const params = { client_id: this.#s.clientId, post_logout_redirect_uri: options.returnTo ?? this.#s.postLogoutRedirectUri };
    const end = d.end_session_endpoint;
    if (end && t?.idToken && new URL(end).origin === loc.origin) {
      const doc = document;
      const form = doc.createElement("form");
      form.method = "post";
      form.action = end;
      for (const [name, value] of Object.entries({ ...params, id_token_hint: t.idToken })) {
        if (value) form.append(Object.assign(doc.createElement("input"), { type: "hidden", name, value }));
      }
      doc.body.append(form);
      form.submit();
    } else if (end || params.post_logout_redirect_uri) {
      loc.assign(end ? withParams(end, params) : params.post_logout_redirect_uri);
    }
  }
  /**
   * Listens to `signedIn`, `signedOut`, `tokenRefreshed` or `error`; returns the function that stops listening.
   *
   * @example
   * const off = auth.on('signedOut', () => render(null))
   * off()
   */
  on(event, listener) {
    if (!events.includes(event) || typeof listener !== "function") configError(`on(): unknown event ${event}`);
    const set = this.#listeners[event] ||= /* @__PURE__ */ new Set();
    set.add(listener);
    return () => void set.delete(listener);
  }
  /** Ends the session here, and with r in the tabs that hold the same refresh token. */
  #end(r) {
    this.#save();
    if (r) this.#post({ t: Ended, r });
    this.#emit("signedOut", void 0);
  }
  /** One refresh per tab at a time; across tabs, Web Locks where present, else the tabs' election. */
  #refresh() {
    return this.#refreshing ||= (async () => {
      try {
        const locks = globalThis.navigator?.locks;
        return await (locks ? locks.request(this.#s.key, () => this.#refreshLocked(false)) : this.#refreshLocked(true));
      } catch (e) {
        throw this.#fail(e);
      } finally {
        this.#refreshing = void 0;
      }
    })();
  }
  async #refreshLocked(elect) {
    let t = this.#load();
    if (t?.refresh && Date.now() >= t.refreshAt && await this.#waited(t.refresh)) t = this.#load();
    if (!t) throw new AuthError("login_required", signedOutMessage);
    if (Date.now() < t.refreshAt) return t;
    const r = t.refresh;
    if (!r) {
      if (Date.now() < t.expiresAt) return t;
      this.#end();
      throw new AuthError("login_required", "the session expired (no refresh token)");
    }
    this.#post({ t: Refreshing, r, i: this.#id });
    if (elect && this.#channel) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if ((this.#busy.get(r) ?? 2) < this.#id) return this.#refreshLocked(true);
    }
    try {
      t = await this.#grant({ grant_type: "refresh_token", refresh_token: r }, void 0, t);
    } catch (e) {
      const code = e.code;
      if (code === "invalid_grant" || code === "invalid_id_token") {
        this.#end(r);
      } else {
        this.#post({ t: Failed, r });
      }
      throw e;
    }
    this.#save(t);
    this.#post({ t: Rotated, r, s: t });
    this.#emit("tokenRefreshed", { expiresAt: t.expiresAt });
    return t;
  }
  // ---- tokens ----
  #load() {
    const t = readJson(this.#store, this.#s.key);
    if (!t || typeof t.access !== "string" || !t.user) return void 0;
    this.#held = t.refresh;
    return t;
  }
  /** Keeps t (undefined forgets); a store that refuses (quota) is replaced by memory for this page. */
  #save(t) {
    this.#held = t?.refresh;
    if (!writeJson(this.#store, this.#s.key, t)) writeJson(this.#store = memoryStore(), this.#s.key, t);
  }
  // ---- the provider ----
  /** The discovery document, fetched once; a failure is not cached. */
  #config() {
    return this.#discovery ||= (async () => {
      const url = this.#s.issuer + "/.well-known/openid-configuration";
      try {
        const [res, d] = await send(url);
        if (!res.ok) throw Error(`it answered ${res.status}`);
        if (typeof d.issuer !== "string" || d.issuer.replace(/\/+$/, "") !== this.#s.issuer) {
          throw Error(`its issuer ${d.issuer} is not baseUrl`);
        }
        if (!d.authorization_endpoint || !d.token_endpoint || !d.jwks_uri) throw Error("it lacks endpoints");
        return d;
      } catch (e) {
        this.#discovery = void 0;
        throw new AuthError("discovery_failed", `could not use ${url}: ${e.message}`, void 0, void 0, e);
      }
    })();
  }
  /** The provider's signing keys, cached; refetched when an id_token names an unknown key. */
  #keys = (refetch) => {
    if (refetch || !this.#jwks) {
      this.#jwks = this.#config().then(async (d) => {
        const [res, body] = await send(d.jwks_uri);
        if (!res.ok || !Array.isArray(body.keys)) throw new AuthError("invalid_id_token", `no keys at ${d.jwks_uri}`);
        return body.keys;
      });
      this.#jwks.catch(() => this.#jwks = void 0);
    }
    return this.#jwks;
  };
  /**
   * Asks the token endpoint for tokens and validates the answer: its id_token against the nonce of the
   * sign-in, or after a refresh against the tokens it replaces (prev).
   */
  async #grant(params, nonce, prev) {
    const s = this.#s;
    const d = await this.#config();
    const [r, res] = await send(d.token_endpoint, {
      method: "POST",
      body: new URLSearchParams({ ...params, client_id: s.clientId })
    });
    if (!r.ok || typeof res.access_token !== "string") {
      throw providerError(res.error, res.error_description, `the token endpoint answered ${r.status}`);
    }
    const now = Date.now();
    const ttl = res.expires_in > 0 ? +res.expires_in : 300;
    const user = res.id_token ? await verifyIdToken(
      res.id_token,
      { issuer: d.issuer, clientId: s.clientId, nonce, previous: prev?.user, skewSeconds: s.clockSkewSeconds, keys: this.#keys },
      now
    ) : prev?.user;
    if (!user) throw new AuthError("invalid_id_token", "invalid id_token: the token response has none");
    return {
      access: res.access_token,
      refresh: res.refresh_token || prev?.refresh,
      idToken: res.id_token || prev?.idToken,
      scope: res.scope || prev?.scope || s.scope,
      expiresAt: now + ttl * 1e3,
      refreshAt: now + Math.max(ttl - s.refreshLeewaySeconds, ttl / 2) * 1e3,
      user
    };
  }
  // ---- the tabs' protocol (tabs.ts) ----
  #post(m) {
    this.#channel?.postMessage(m);
  }
  #receive(m) {
    if (m.t === Refreshing) {
      this.#busy.set(m.r, Math.min(this.#busy.get(m.r) ?? 2, m.i));
      return;
    }
    this.#busy.delete(m.r);
    if (this.#held === m.r) {
      if (m.t === Rotated) {
        this.#save(m.s);
        this.#emit("tokenRefreshed", { expiresAt: m.s.expiresAt });
      } else if (m.t === Ended) {
        this.#end();
      }
    }
    this.#wake.get(m.r)?.();
  }
  /** When another tab is refreshing with r, resolves true once it is done (or after 10 s: that tab may
   * have died mid-refresh); else false at once. */
  async #waited(r) {
    return this.#busy.has(r) && new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake.delete(r);
        this.#busy.delete(r);
        resolve(true);
      };
      const timer = setTimeout(done, 1e4);
      this.#wake.set(r, done);
    });
  }
  // ---- events ----
  #emit(event, payload) {
    for (const l of [...this.#listeners[event] || []]) {
      try {
        l(payload);
      } catch (e) {
        setTimeout(() => {
          throw e;
        });
      }
    }
  }
  /** Turns anything thrown into an AuthError and emits it once. */
  #fail(e) {
    const err = e instanceof AuthError ? e : new AuthError("server_error", "unexpected: " + (e?.message ?? String(e)), void 0, void 0, e);
    if (!this.#emitted.has(err)) {
      this.#emitted.add(err);
      this.#emit("error", err);
    }
    return err;
  }
};
export {
  AuthError,
  ServiceAuthClient
};
