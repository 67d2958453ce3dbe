// The session's tokens as the client keeps them.
import type { User } from './jwt.js'

/** The session's tokens, as stored (and as handed to other tabs after a refresh). */
export interface Tokens {
  access: string
  refresh?: string
  idToken?: string
  scope: string
  expiresAt: number
  /** When to refresh: expiresAt less the leeway. */
  refreshAt: number
  user: User
}
