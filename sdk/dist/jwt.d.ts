/** The claims of an id_token: the standard ones, and whatever else the provider adds. */
export interface User {
    sub: string;
    email?: string;
    email_verified?: boolean;
    name?: string;
    [claim: string]: unknown;
}
export interface IdTokenChecks {
    issuer: string;
    clientId: string;
    /** The nonce sent with the authorization request; undefined after a refresh. */
    nonce?: string;
    /** The claims of the id_token being replaced by a refresh (sub must not change). */
    previous?: User;
    skewSeconds: number;
    /** Returns the provider's JWKS; refetch asks for a fresh copy (the signing key was rotated). */
    keys: (refetch: boolean) => Promise<JsonWebKey[]>;
}
/**
 * Verifies an id_token's signature against the provider's keys and its claims (OpenID Connect Core
 * 3.1.3.7 and 12.2), and returns the claims.
 */
export declare function verifyIdToken(token: unknown, c: IdTokenChecks, now?: number): Promise<User>;
