import { Route, Routes } from 'react-router'
import { Callback, useAuth } from './auth'
import { ContactForm, WaitlistForm } from './forms'

function Account() {
  const { user, error, signIn, signOut } = useAuth()
  return (
    <section aria-labelledby="account-title">
      <h2 id="account-title">Your account</h2>
      {error && (
        <div className="alert" role="alert" data-code={error.code}>
          {error.code}: {error.message}{' '}
          <button type="button" onClick={() => signIn('/')}>
            Sign in again
          </button>
        </div>
      )}
      {user === undefined ? (
        <p role="status">Loading…</p>
      ) : user ? (
        <>
          <p role="status" id="auth-status" data-state="signed-in">
            Signed in as <strong>{user.email ?? user.sub}</strong>
          </p>
          <dl>
            <dt>Name</dt>
            <dd id="user-name">{user.name ?? '—'}</dd>
            <dt>Subject</dt>
            <dd id="user-sub">{user.sub}</dd>
          </dl>
          <button type="button" className="secondary" onClick={signOut}>
            Sign out
          </button>
        </>
      ) : (
        <>
          <p role="status" id="auth-status" data-state="signed-out">
            Signed out
          </p>
          <button type="button" onClick={() => signIn()}>
            Sign in
          </button>
        </>
      )}
    </section>
  )
}

function Home() {
  return (
    <>
      <Account />
      <section aria-labelledby="contact-title">
        <h2 id="contact-title">Contact us</h2>
        <ContactForm />
      </section>
      <section aria-labelledby="waitlist-title">
        <h2 id="waitlist-title">Join the waitlist</h2>
        <WaitlistForm />
      </section>
    </>
  )
}

export function App() {
  return (
    <>
      <header>
        <h1>formsservice + React</h1>
        <p>
          Signs in with <code>ServiceAuthClient</code> and posts the contact and waitlist forms. Dev user:{' '}
          <code>demo@example.com</code> / <code>demo-password</code>.
        </p>
      </header>
      <main>
        <Routes>
          <Route path="/" element={<Home />} />
          <Route path="/callback" element={<Callback />} />
        </Routes>
      </main>
    </>
  )
}
