/**
 * The stable codes of {@link AuthError}. Branch on these, never on the message.
 *
 * - `state_not_found`: no sign-in was started in this tab for this response (a reload, the back button,
 *   a callback opened in another tab, or a replayed callback). Recover by calling `signIn()` again, or by
 *   going on if `isAuthenticated()` is already true.
 * - `state_mismatch`: the response does not belong to the sign-in this tab started (tampered or forged).
 * - `missing_code`: the callback URL carries neither a code nor an error.
 * - `access_denied`: the user declined (the Cancel button of the hosted sign-in page) or the provider
 *   refused the sign-in. Nothing is stored; offer to sign in again.
 * - `login_required`: the user must sign in (no session, `prompt: 'none'` without a provider session, or
 *   an expired session without a refresh token).
 * - `invalid_grant`: the provider refused the code or the refresh token (expired, revoked or reused);
 *   the local session has been cleared: sign in again.
 * - `network_error`: the provider could not be reached; nothing was changed, retrying is safe.
 * - `discovery_failed`: the discovery document could not be loaded or does not match `baseUrl`.
 * - `invalid_id_token`: the id_token failed validation (signature, iss, aud, nonce, exp, iat, sub).
 * - `configuration_error`: bad options, or the provider says the client is misconfigured.
 * - `insecure_context`: Web Crypto is missing: serve the page over https (or from localhost).
 * - `server_error`: the provider answered with an unexpected error or an unreadable response.
 */
export type AuthErrorCode = 'state_mismatch' | 'state_not_found' | 'missing_code' | 'access_denied' | 'login_required' | 'invalid_grant' | 'network_error' | 'discovery_failed' | 'invalid_id_token' | 'configuration_error' | 'insecure_context' | 'server_error';
/**
 * The only error type ServiceAuthClient throws or emits.
 *
 * @example
 * try {
 *   await auth.handleRedirectCallback()
 * } catch (e) {
 *   if (e instanceof AuthError && e.code === 'state_not_found') await auth.signIn()
 *   else throw e
 * }
 */
export declare class AuthError extends Error {
    /** A stable, machine-readable code; see {@link AuthErrorCode}. */
    readonly code: AuthErrorCode;
    /** The provider's `error_description`, when the provider answered one. */
    readonly description?: string;
    /** The provider's OAuth `error` value (e.g. `invalid_grant`), when the provider answered one. */
    readonly error?: string;
    constructor(code: AuthErrorCode, message: string, description?: string, error?: string, cause?: unknown);
}
