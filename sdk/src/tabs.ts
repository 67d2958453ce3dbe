// The tabs of one origin tell each other about refresh tokens over a BroadcastChannel, so that each
// refresh token is used once (the provider rotates it, and treats a reuse as theft: it revokes the whole
// session). With Web Locks the tabs take turns anyway and the news only hands over the rotated tokens;
// without them the tabs about to refresh the same token elect one refresher, the lowest id.
// ServiceAuthClient (client.ts) holds this tab's side: who is refreshing what, and who waits for whom.
import type { Tokens } from './tokens.js'

// The kinds of message. The values are the wire format: short, and never changed, so that two tabs
// running two versions of the SDK (during a deploy) still understand each other.
/** A tab starts refreshing with refresh token r; i is its id (the election's lowest id wins). */
export const Refreshing = 'b'
/** r was rotated: s holds the new tokens. */
export const Rotated = 'r'
/** Refreshing with r failed without refusal (the network): another tab may try. */
export const Failed = 'x'
/** r is no longer valid: signed out, or refused by the provider. */
export const Ended = 'o'

export type Message =
  | { t: typeof Refreshing; r: string; i: number }
  | { t: typeof Rotated; r: string; s: Tokens }
  | { t: typeof Failed | typeof Ended; r: string }

