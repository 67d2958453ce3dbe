// Sign-in for the whole app: one ServiceAuthClient, a provider that keeps the signed-in user in React
// state (following the client's events), a hook to reach both, and the route the provider sends the
// browser back to.
import { type AuthError, ServiceAuthClient, type User } from '@formsservice/service-auth-client'
import { createContext, type ReactNode, useContext, useEffect, useMemo, useState } from 'react'
import { useNavigate } from 'react-router'
import { clientId, formsserviceUrl } from './config'

// One client for the app, created once (not in a component: StrictMode renders components twice).
export const auth = new ServiceAuthClient({
  baseUrl: formsserviceUrl,
  clientId,
  redirectUri: location.origin + '/callback',
  postLogoutRedirectUri: location.origin + '/',
})

export interface Auth {
  client: ServiceAuthClient
  /** The signed-in user; null when signed out; undefined until the stored session has been read. */
  user: User | null | undefined
  /** The last sign-in error, to show; null when there is none. */
  error: AuthError | null
  setError(error: AuthError | null): void
  signIn(returnTo?: string): void
  signOut(): void
}

const AuthContext = createContext<Auth | null>(null)

export function AuthProvider({ client = auth, children }: { client?: ServiceAuthClient; children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined)
  const [error, setError] = useState<AuthError | null>(null)

  useEffect(() => {
    let active = true
    const read = () => client.getUser().then((u) => active && setUser(u))
    const stop = [
      client.on('signedIn', (u) => setUser(u)),
      client.on('signedOut', () => setUser(null)),
      client.on('tokenRefreshed', read),
    ]
    void read()
    return () => {
      active = false
      stop.forEach((off) => off())
    }
  }, [client])

  const value = useMemo<Auth>(
    () => ({
      client,
      user,
      error,
      setError,
      signIn(returnTo = location.pathname) {
        setError(null)
        client.signIn({ returnTo }).catch(setError) // resolves only on failure: the page goes to the provider
      },
      signOut() {
        setError(null)
        client.signOut().catch(setError)
      },
    }),
    [client, user, error],
  )
  return <AuthContext value={value}>{children}</AuthContext>
}

export function useAuth(): Auth {
  const value = useContext(AuthContext)
  if (!value) throw new Error('useAuth() needs an <AuthProvider> above it')
  return value
}

/** Only paths of this app: never send the browser elsewhere because a URL said so. */
const localPath = (p: string | undefined) => (p && p.startsWith('/') && !p.startsWith('//') ? p : '/')

/**
 * The redirect URI's route: completes the sign-in and goes where signIn() was called. React's StrictMode
 * runs this effect twice in development; the client gives the second call the first call's result.
 */
export function Callback() {
  const { client, setError } = useAuth()
  const navigate = useNavigate()
  useEffect(() => {
    let active = true
    client.handleRedirectCallback().then(
      ({ returnTo }) => active && navigate(localPath(returnTo), { replace: true }),
      async (e: AuthError) => {
        if (!active) return
        // A reload or the back button replays an old response: harmless when signed in already.
        if (!(e.code === 'state_not_found' && (await client.isAuthenticated()))) setError(e)
        navigate('/', { replace: true })
      },
    )
    return () => {
      active = false
    }
  }, [client, navigate, setError])
  return <p role="status">Signing you in…</p>
}
