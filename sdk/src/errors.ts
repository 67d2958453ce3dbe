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
export type AuthErrorCode =
  | 'state_mismatch'
  | 'state_not_found'
  | 'missing_code'
  | 'access_denied'
  | 'login_required'
  | 'invalid_grant'
  | 'network_error'
  | 'discovery_failed'
  | 'invalid_id_token'
  | 'configuration_error'
  | 'insecure_context'
  | 'server_error'

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
export class AuthError extends Error {
  /** A stable, machine-readable code; see {@link AuthErrorCode}. */
  readonly code: AuthErrorCode
  /** The provider's `error_description`, when the provider answered one. */
  readonly description?: string
  /** The provider's OAuth `error` value (e.g. `invalid_grant`), when the provider answered one. */
  readonly error?: string

  constructor(code: AuthErrorCode, message: string, description?: string, error?: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'AuthError'
    this.code = code
    this.description = description
    this.error = error
  }
}

// What an OAuth error value (RFC 6749, OpenID Connect Core 3.1.2.6) means to an app:
// login_required, interaction_required, consent_required, account_selection_required: sign in again;
// invalid_client, unauthorized_client, invalid_scope, invalid_request, unsupported_*: a misconfiguration.
function codeOf(e: string): AuthErrorCode {
  if (e === 'access_denied' || e === 'invalid_grant') return e
  if (/_required$/.test(e)) return 'login_required'
  if (/^(invalid_(client|scope|request)|unauthorized_client|unsupported_)/.test(e)) return 'configuration_error'
  return 'server_error'
}

/** providerError turns an OAuth error response (`error`, `error_description`) into an AuthError. @internal */
export function providerError(error: unknown, description: unknown, fallback: string): AuthError {
  const e = typeof error === 'string' ? error : undefined
  const d = typeof description === 'string' ? description : undefined
  return new AuthError(
    e ? codeOf(e) : 'server_error',
    d || (e ? `the provider answered ${e}` : fallback),
    d,
    e,
  )
}

/** Throws `configuration_error`: a wrong option, or a method called where it cannot work. @internal */
export function configError(message: string): never {
  throw new AuthError('configuration_error', 'ServiceAuthClient: ' + message)
}
