// Sign-in for the whole app: one ServiceAuthClient, a provider that keeps the signed-in user in React
// state (following the client's events), a hook, and the route the provider sends the browser back to.
// sdk/README.md shows this file as its React recipe.
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

interface Auth {
  user: User | null | undefined // undefined until the stored session has been read
  error: AuthError | null
  setError(e: AuthError | null): void
  signIn(returnTo?: string): void
  signOut(): void
}
const AuthContext = createContext<Auth | null>(null)

export function AuthProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined)
  const [error, setError] = useState<AuthError | null>(null)
  useEffect(() => {
    let active = true
    const read = () => auth.getUser().then((u) => active && setUser(u))
    const stop = [auth.on('signedIn', setUser), auth.on('signedOut', () => setUser(null)), auth.on('tokenRefreshed', read)]
    void read()
    return () => {
      active = false
      stop.forEach((off) => off())
    }
  }, [])
  const value = useMemo<Auth>(
    () => ({
      user,
      error,
      setError,
      signIn: (returnTo = location.pathname) => void auth.signIn({ returnTo }).catch(setError),
      signOut: () => void auth.signOut().catch(setError),
    }),
    [user, error],
  )
  return <AuthContext value={value}>{children}</AuthContext>
}

export function useAuth(): Auth {
  const value = useContext(AuthContext)
  if (!value) throw new Error('useAuth() needs an <AuthProvider> above it')
  return value
}

// <Route path="/callback" element={<Callback />} />, inside <BrowserRouter><AuthProvider>.
export function Callback() {
  const { setError } = useAuth()
  const navigate = useNavigate()
  useEffect(() => {
    let active = true // StrictMode runs this twice in development: both calls get the one result
    auth.handleRedirectCallback().then(
      ({ returnTo }) => active && navigate(returnTo?.startsWith('/') && !returnTo.startsWith('//') ? returnTo : '/', { replace: true }),
      async (e: AuthError) => {
        if (!active) return
        if (!(e.code === 'state_not_found' && (await auth.isAuthenticated()))) setError(e) // a replayed old response is harmless
        navigate('/', { replace: true })
      },
    )
    return () => {
      active = false
    }
  }, [navigate, setError])
  return <p role="status">Signing you in…</p>
}
