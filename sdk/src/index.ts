/**
 * ServiceAuthClient: sign in with formsservice from a browser app (OAuth 2.0 authorization code + PKCE,
 * OpenID Connect). No runtime dependencies; importing this module has no side effects.
 *
 * @example
 * import { ServiceAuthClient, AuthError } from '@formsservice/service-auth-client'
 * @packageDocumentation
 */
export { ServiceAuthClient } from './client.js'
export type { AuthEvents } from './events.js'
export type { User } from './jwt.js'
export type { RedirectResult, ServiceAuthClientOptions, Session, SignInOptions, SignOutOptions } from './options.js'
export { AuthError } from './errors.js'
export type { AuthErrorCode } from './errors.js'
