/** base64url without padding (RFC 4648 section 5), as JWTs and PKCE use it. */
export declare function b64url(bytes: Uint8Array): string;
/** Decodes base64url (padding optional). Throws on invalid input. */
export declare function fromB64url(s: string): Uint8Array<ArrayBuffer>;
/** The Web Crypto API, or an insecure_context error: browsers hide it on plain-http origins. */
export declare function subtle(): SubtleCrypto;
/** A random base64url string of n bytes of entropy (32 bytes: 43 characters). */
export declare function randomString(n?: number): string;
/** The PKCE S256 code challenge of a verifier (RFC 7636 section 4.2). */
export declare function pkceChallenge(verifier: string): Promise<string>;
