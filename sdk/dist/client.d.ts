import { AuthError } from './errors.js';
import { type AuthEvents } from './events.js';
import { type User } from './jwt.js';
import { type RedirectResult, type ServiceAuthClientOptions, type Session, type SignInOptions, type SignOutOptions } from './options.js';
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
export declare class ServiceAuthClient {
    #private;
    /** The error class, also reachable from the global of the script-tag build: `ServiceAuthClient.AuthError`. */
    static readonly AuthError: typeof AuthError;
    /** @throws {AuthError} `configuration_error` when an option is missing or wrong. */
    constructor(options: ServiceAuthClientOptions);
    /**
     * Starts a sign-in: creates state, nonce and a PKCE S256 verifier, keeps them for the callback, and
     * sends the browser to the provider's sign-in page. The promise settles only on failure.
     *
     * @example
     * loginButton.onclick = () => auth.signIn({ returnTo: location.pathname })
     * @throws {AuthError} `insecure_context`, `discovery_failed`, `configuration_error`.
     */
    signIn(options?: SignInOptions): Promise<void>;
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
    handleRedirectCallback(url?: string): Promise<RedirectResult>;
    /**
     * Resolves a valid access token, refreshing it first when it is within the leeway of expiry. Calls at the
     * same time share one refresh, in this tab and across the tabs of the origin.
     *
     * @example
     * const res = await fetch(api, { headers: { authorization: `Bearer ${await auth.getAccessToken()}` } })
     * @throws {AuthError} `login_required` when signed out; `invalid_grant` when the provider refused the
     * refresh token (the session is cleared); `network_error` (the session is kept: retry later).
     */
    getAccessToken(): Promise<string>;
    /**
     * The signed-in user (the id_token's claims), or null. No network call.
     *
     * @example
     * const user = await auth.getUser()
     * greeting.textContent = user ? `Hello ${user.email}` : 'Signed out'
     */
    getUser(): Promise<User | null>;
    /**
     * The user's claims from the provider's userinfo endpoint, fetched with the access token.
     *
     * @example
     * const { email } = await auth.fetchUserInfo()
     */
    fetchUserInfo(): Promise<User>;
    /**
     * The current session (user, access token expiry, scopes), or null. No network call.
     *
     * @example
     * const s = await auth.getSession()
     * if (s) expiry.textContent = new Date(s.expiresAt).toLocaleTimeString()
     */
    getSession(): Promise<Session | null>;
    /**
     * Whether there is a usable session: a valid access token, or a refresh token to get one.
     *
     * @example
     * if (!(await auth.isAuthenticated())) await auth.signIn()
     */
    isAuthenticated(): Promise<boolean>;
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
    signOut(options?: SignOutOptions): Promise<void>;
    /**
     * Listens to `signedIn`, `signedOut`, `tokenRefreshed` or `error`; returns the function that stops listening.
     *
     * @example
     * const off = auth.on('signedOut', () => render(null))
     * off()
     */
    on<E extends keyof AuthEvents>(event: E, listener: (payload: AuthEvents[E]) => void): () => void;
}
