/**
 * ServiceAuthClient: sign in with formsservice from a browser app (OAuth 2.0 authorization code + PKCE,
 * OpenID Connect). No runtime dependencies; importing this module has no side effects.
 *
 * @example
 * import { ServiceAuthClient, AuthError } from '@formsservice/service-auth-client'
 * @packageDocumentation
 */
export { ServiceAuthClient } from './client.cjs';
export type { AuthEvents } from './events.cjs';
export type { User } from './jwt.cjs';
export type { RedirectResult, ServiceAuthClientOptions, Session, SignInOptions, SignOutOptions } from './options.cjs';
export { AuthError } from './errors.cjs';
export type { AuthErrorCode } from './errors.cjs';
