// The demo page: sign-in with ServiceAuthClient (the script-tag build defines the global), and the contact
// and waitlist forms posting to the forms service. Everything here is what an app would write.
;(() => {
  'use strict'
  const $ = (id) => document.getElementById(id)
  const root = document.documentElement
  // The dev server fills in its issuer; a copy of this page elsewhere names the servers it talks to.
  const authBase = root.dataset.authBase || location.origin
  const formsBase = root.dataset.formsBase || location.origin
  const demoPath = new URL('.', location.href).pathname // /demo/ on the page and on /demo/callback

  const storage = localStorage.getItem('demo.storage') || 'session'
  $('storage').value = storage
  $('storage').addEventListener('change', (e) => {
    localStorage.setItem('demo.storage', e.target.value)
    location.reload()
  })

  let auth
  try {
    auth = new ServiceAuthClient({
      baseUrl: authBase,
      clientId: 'demo',
      redirectUri: location.origin + demoPath + 'callback',
      postLogoutRedirectUri: location.origin + demoPath,
      storage,
    })
    window.auth = auth // for the browser console (and the browser tests)
  } catch (e) {
    showAuthError(e) // e.g. configuration_error; the forms below work all the same
  }

  // ---- sign-in -----------------------------------------------------------------------------------------

  function showAuthError(e, recover) {
    const box = $('auth-error')
    box.replaceChildren()
    box.hidden = !e
    if (!e) return
    box.dataset.code = e.code || 'unknown'
    box.append(`${e.code || 'error'}: ${e.message}`)
    if (recover) {
      const b = document.createElement('button')
      b.type = 'button'
      b.textContent = 'Sign in again'
      b.onclick = () => signIn()
      box.append(b)
    }
  }

  function signIn() {
    showAuthError(null)
    return auth.signIn({ returnTo: demoPath }).catch((e) => showAuthError(e))
  }

  let expiresAt = 0
  function tick() {
    if (!expiresAt) return
    const left = Math.round((expiresAt - Date.now()) / 1000)
    $('expires').textContent =
      new Date(expiresAt).toLocaleTimeString() + (left > 0 ? ` (in ${left} s)` : ' (expired: refreshed on the next use)')
  }
  setInterval(tick, 1000) // only the countdown; the SDK refreshes on demand, not on timers

  async function render() {
    const session = await auth.getSession()
    const signedIn = !!session && (await auth.isAuthenticated())
    const status = $('auth-status')
    status.dataset.state = signedIn ? 'signed-in' : 'signed-out'
    status.textContent = signedIn ? `Signed in as ${session.user.email || session.user.sub}` : 'Signed out'
    $('session').hidden = !signedIn
    $('sign-in').hidden = signedIn
    $('sign-out').hidden = !signedIn
    $('call-userinfo').hidden = !signedIn
    if (!signedIn) {
      $('userinfo').hidden = true
      expiresAt = 0
      return
    }
    $('user-email').textContent = session.user.email || '—'
    $('user-name').textContent = session.user.name || '—'
    $('user-sub').textContent = session.user.sub
    $('scopes').textContent = session.scope
    expiresAt = session.expiresAt
    tick()
  }

  function initAuth() {
    auth.on('signedIn', render)
    auth.on('signedOut', render)
    auth.on('tokenRefreshed', render)

    $('sign-in').addEventListener('click', () => signIn())
    $('sign-out').addEventListener('click', () => {
      showAuthError(null)
      auth.signOut().catch((e) => showAuthError(e))
    })
    $('call-userinfo').addEventListener('click', async () => {
      const out = $('userinfo')
      showAuthError(null)
      try {
        // What an app does with its API: ask the SDK for a valid token (it refreshes when due) and send it.
        const token = await auth.getAccessToken()
        const res = await fetch(authBase + '/oauth2/userinfo', { headers: { authorization: 'Bearer ' + token } })
        out.textContent = `GET /oauth2/userinfo → ${res.status}\n` + JSON.stringify(await res.json(), null, 2)
        out.hidden = false
      } catch (e) {
        showAuthError(e, e.code === 'login_required' || e.code === 'invalid_grant')
      }
    })

    async function start() {
      if (location.pathname === demoPath + 'callback') {
        try {
          const { returnTo } = await auth.handleRedirectCallback()
          history.replaceState(null, '', returnTo && returnTo.startsWith(demoPath) ? returnTo : demoPath)
        } catch (e) {
          history.replaceState(null, '', demoPath)
          // A reload or the back button replays an old response: harmless when the session exists.
          // access_denied: the person pressed Cancel on the hosted page; they may change their mind.
          if (e.code === 'state_not_found' && (await auth.isAuthenticated())) showAuthError(null)
          else showAuthError(e, ['state_not_found', 'login_required', 'access_denied'].includes(e.code))
        }
      }
      await render()
    }
    start()
  }
  if (auth) initAuth()

  // ---- forms -------------------------------------------------------------------------------------------

  const fieldMessages = {
    required: 'This field is required.',
    invalid_type: 'This value has the wrong type.',
    too_short: 'This is too short.',
    too_long: 'This is too long.',
    invalid_email: 'This is not a valid e-mail address.',
    invalid_choice: 'Please pick one of the choices.',
    must_be_true: 'Please tick this box.',
  }

  function setStatus(form, kind, text) {
    const s = form.querySelector('.form-status')
    s.dataset.kind = kind
    s.textContent = text
  }

  function clearErrors(form) {
    for (const el of form.querySelectorAll('.field-error')) {
      el.textContent = ''
      delete el.dataset.code
    }
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
  }

  function showFieldErrors(form, errors) {
    const unplaced = []
    for (const [field, code] of Object.entries(errors)) {
      const slot = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`)
      if (!slot) {
        unplaced.push(`${field}: ${code}`)
        continue
      }
      slot.textContent = fieldMessages[code] || code
      slot.dataset.code = code
      const input = form.elements[field]
      if (input) {
        input.setAttribute('aria-invalid', 'true')
        input.setAttribute('aria-describedby', slot.id || (slot.id = `${form.id}-${field}-error`))
      }
    }
    setStatus(form, 'error', unplaced.length ? `Please correct: ${unplaced.join(', ')}` : 'Please correct the marked fields.')
    form.querySelector('[aria-invalid="true"]')?.focus()
  }

  // One key per submission attempt: a retry after a lost answer is not stored twice.
  const newKey = () => (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2))

  function body(form) {
    const out = {}
    for (const el of form.elements) {
      if (!el.name) continue
      if (el.type === 'checkbox') out[el.name] = el.checked
      else if (el.value.trim() !== '') out[el.name] = el.value // optional fields left empty are not sent
    }
    return out
  }

  for (const form of document.querySelectorAll('form[data-path]')) {
    // One Idempotency-Key per message: sending the same message again after a failure (a 502, a lost
    // connection) reuses it, so the service stores the message once however often it is retried; a
    // changed message gets a new key (the service answers 422 to a key reused with another message).
    let idempotencyKey = newKey()
    let keyedPayload = null
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault()
      clearErrors(form)
      const button = form.querySelector('button[type="submit"]')
      button.disabled = true
      setStatus(form, 'pending', 'Sending…')
      try {
        let res
        const payload = JSON.stringify(body(form))
        if (keyedPayload !== null && payload !== keyedPayload) idempotencyKey = newKey()
        keyedPayload = payload
        try {
          res = await fetch(formsBase + form.dataset.path, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
            body: payload,
          })
        } catch {
          // A refused CORS preflight looks like a network failure to a page: it cannot tell them apart.
          setStatus(form, 'error', 'Refused: the forms service did not accept this page’s origin, or could not be reached.')
          return
        }
        const data = await res.json().catch(() => ({}))
        if (res.status === 201) {
          setStatus(form, 'ok', form.id === 'waitlist-form' ? 'You are on the waitlist. Thank you!' : 'Thank you! Your message was sent.')
          form.reset()
          idempotencyKey = newKey()
          keyedPayload = null
        } else if (res.status === 200 && data.status === 'duplicate') {
          setStatus(form, 'ok', 'This address is already on the waitlist.')
        } else if (res.status === 400 && data.errors) {
          showFieldErrors(form, data.errors)
        } else if (res.status === 403) {
          setStatus(form, 'error', 'Refused: this origin may not post to the forms service.')
        } else if (res.status === 413) {
          setStatus(form, 'error', 'The submission is too large.')
        } else if (res.status === 409) {
          setStatus(form, 'error', 'This message is still being saved; please try again in a moment.')
        } else if (res.status === 429) {
          setStatus(form, 'error', 'Too many submissions; please try again in a minute.')
        } else {
          setStatus(form, 'error', `The service could not save this (HTTP ${res.status}); please try again.`)
        }
      } finally {
        button.disabled = false
      }
    })
  }
})()
