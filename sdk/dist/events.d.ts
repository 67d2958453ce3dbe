import type { AuthError } from './errors.js';
import type { User } from './jwt.js';
/** The events of {@link ServiceAuthClient.on} and what their listeners receive. */
export interface AuthEvents {
    /** A sign-in completed in this tab. */
    signedIn: User;
    /** The session ended: `signOut()` here or in a tab sharing it, or the provider refused the refresh token. */
    signedOut: undefined;
    /** New tokens arrived, refreshed here or in another tab. */
    tokenRefreshed: {
        expiresAt: number;
    };
    /** An operation failed; every error the client throws is emitted here too (once), except `login_required` from `getAccessToken()` while simply signed out. */
    error: AuthError;
}
