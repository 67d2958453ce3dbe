/** The claims of an id_token: the standard ones, and whatever else the provider adds. */
export interface User {
    sub: string;
    email?: string;
    email_verified?: boolean;
    name?: string;
    [claim: string]: unknown;
}
