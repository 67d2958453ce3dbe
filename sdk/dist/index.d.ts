/**
 * ServiceAuthClient: sign in with formsservice from a browser app (OAuth 2.0 authorization code + PKCE,
 * OpenID Connect). No runtime dependencies; importing this module has no side effects.
 *
 * @example
 * import { ServiceAuthClient, AuthError } from '@formsservice/service-auth-client'
 * @packageDocumentation
 */
export { ServiceAuthClient } from './client';
export type { AuthEvents, RedirectResult, ServiceAuthClientOptions, Session, SignInOptions, SignOutOptions, User, } from './client';
export { AuthError } from './errors';
export type { AuthErrorCode } from './errors';
